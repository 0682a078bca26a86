import { type GgufKV, GgufMetadata, GgufValueType } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { buildInfillPrompt, type FimTokens, fimTokens, type InfillLayout } from "./infill-prompt.js";

// The infill prompt's layout and budget, against sequences written out by hand from llama-server's
// format_prompt_infill (tools/server/server-common.cpp) and llama-vocab.cpp's FIM token lookup.

const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
const md = (...kvs: GgufKV[]) => new GgufMetadata(kvs);
const vocab = (n: number, named: Record<number, string> = {}) =>
  Array.from({ length: n }, (_, i) => named[i] ?? `t${i}`);

describe("fimTokens: the model's FIM token ids", () => {
  it("reads the fim_*_token_id keys", () => {
    const keys = ["pre", "suf", "mid", "pad", "rep", "sep"].map((r, i) =>
      u32(`tokenizer.ggml.fim_${r}_token_id`, 10 + i),
    );
    expect(fimTokens(md(...keys), vocab(20))).toEqual({
      ids: { pre: 10, suf: 11, mid: 12, pad: 13, rep: 14, sep: 15 },
      notes: [],
    });
  });

  it("the deprecated prefix/suffix/middle keys are read after them and win (as llama.cpp reads them)", () => {
    const m = md(
      u32("tokenizer.ggml.fim_pre_token_id", 3),
      u32("tokenizer.ggml.prefix_token_id", 7),
      u32("tokenizer.ggml.suffix_token_id", 8),
      u32("tokenizer.ggml.middle_token_id", 9),
    );
    expect(fimTokens(m, vocab(10)).ids).toMatchObject({ pre: 7, suf: 8, mid: 9, rep: undefined });
  });

  it("finds them by their texts when no key names them: Qwen, CodeLlama, DeepSeek, Granite", () => {
    const qwen = vocab(12, {
      2: "<|fim_prefix|>",
      3: "<|fim_suffix|>",
      4: "<|fim_middle|>",
      5: "<|fim_pad|>",
      6: "<|repo_name|>",
      7: "<|file_sep|>",
    });
    expect(fimTokens(md(), qwen).ids).toEqual({ pre: 2, suf: 3, mid: 4, pad: 5, rep: 6, sep: 7 });
    const codellama = vocab(8, { 5: "▁<PRE>", 6: "▁<SUF>", 7: "▁<MID>" });
    expect(fimTokens(md(), codellama).ids).toMatchObject({ pre: 5, suf: 6, mid: 7, sep: undefined });
    const deepseek = vocab(4, { 1: "<｜fim▁begin｜>", 2: "<｜fim▁hole｜>", 3: "<｜fim▁end｜>" });
    expect(fimTokens(md(), deepseek).ids).toMatchObject({ pre: 1, suf: 2, mid: 3 });
    const granite = vocab(5, { 0: "<fim_prefix>", 1: "<fim_suffix>", 2: "<fim_middle>", 3: "<reponame>" });
    expect(fimTokens(md(), granite).ids).toMatchObject({ pre: 0, suf: 1, mid: 2, rep: 3 });
    // the lowest id when several tokens carry a role's texts
    expect(fimTokens(md(), vocab(6, { 2: "<PRE>", 4: "▁<PRE>" })).ids.pre).toBe(2);
  });

  it("a key outside the vocabulary, -1 or of another type counts as absent (noted), and the text is looked up", () => {
    const tokens = vocab(10, { 6: "<|fim_prefix|>" });
    const m = md(
      u32("tokenizer.ggml.fim_pre_token_id", 9999),
      { key: "tokenizer.ggml.fim_suf_token_id", type: GgufValueType.INT32, value: -1 },
      { key: "tokenizer.ggml.fim_mid_token_id", type: GgufValueType.STRING, value: "3" },
    );
    const found = fimTokens(m, tokens);
    expect(found.ids).toMatchObject({ pre: 6, suf: undefined, mid: undefined });
    expect(found.notes).toHaveLength(2);
    expect(found.notes[0]).toContain("fim_pre_token_id is 9999, outside the vocabulary of 10 tokens");
    expect(found.notes[1]).toContain("fim_mid_token_id");
  });

  it("a vocabulary without FIM tokens has none", () => {
    expect(fimTokens(md(), vocab(30)).ids).toEqual({
      pre: undefined,
      suf: undefined,
      mid: undefined,
      pad: undefined,
      rep: undefined,
      sep: undefined,
    });
  });
});

// Symbolic ids: FIM_PRE 100, FIM_SUF 101, FIM_MID 102, FIM_REP 103, FIM_SEP 104, BOS 1.
const PSM: FimTokens = { pre: 100, suf: 101, mid: 102, pad: undefined, rep: undefined, sep: undefined };
const REPO: FimTokens = { ...PSM, rep: 103, sep: 104 };
const TEXTS: Record<string, number[]> = {
  "myproject\n": [50, 51],
  "filename\n": [52, 53],
  "\n\n--- snippet ---\n\n": [60, 61, 62],
};
const layout = (o: Partial<InfillLayout> = {}): InfillLayout => ({
  fim: PSM,
  bos: 1,
  nBatch: 64,
  nPredict: -1,
  nCtx: 256,
  tokenize: (t) => {
    const ids = TEXTS[t];
    if (!ids) throw new Error(`unexpected text ${JSON.stringify(t)}`);
    return ids;
  },
  ...o,
});
const parts = { prefix: [10, 11, 12], suffix: [20, 21], prompt: [30], extra: [] };
const chunks = [
  { file: [70], text: [40, 41] },
  { file: [71], text: [42] },
];

describe("buildInfillPrompt: llama-server's layout", () => {
  it("PSM: [BOS] FIM_PRE prefix prompt FIM_SUF suffix FIM_MID", () => {
    expect(buildInfillPrompt(parts, layout())).toEqual([1, 100, 10, 11, 12, 30, 101, 20, 21, 102]);
  });

  it("SPM (--spm-infill): [BOS] FIM_SUF suffix FIM_PRE prefix prompt FIM_MID", () => {
    expect(buildInfillPrompt(parts, layout({ spm: true }))).toEqual([
      1, 101, 20, 21, 100, 10, 11, 12, 30, 102,
    ]);
  });

  it("no BOS where the vocabulary adds none", () => {
    expect(buildInfillPrompt(parts, layout({ bos: undefined }))).toEqual([
      100, 10, 11, 12, 30, 101, 20, 21, 102,
    ]);
  });

  it("extra chunks without a file separator: each after the snippet line, before BOS", () => {
    expect(buildInfillPrompt({ ...parts, extra: chunks }, layout())).toEqual([
      ...[60, 61, 62, 40, 41],
      ...[60, 61, 62, 42],
      ...[1, 100, 10, 11, 12, 30, 101, 20, 21, 102],
    ]);
  });

  it("the repo-level layout: FIM_REP myproject, FIM_SEP name text per chunk, FIM_SEP filename (also with no chunks)", () => {
    const tail = [1, 100, 10, 11, 12, 30, 101, 20, 21, 102];
    expect(buildInfillPrompt({ ...parts, extra: chunks }, layout({ fim: REPO }))).toEqual([
      ...[103, 50, 51],
      ...[104, 70, 40, 41],
      ...[104, 71, 42],
      ...[104, 52, 53],
      ...tail,
    ]);
    expect(buildInfillPrompt(parts, layout({ fim: REPO }))).toEqual([103, 50, 51, 104, 52, 53, ...tail]);
    // a file separator without a repo token: no repo line
    expect(buildInfillPrompt(parts, layout({ fim: { ...REPO, rep: undefined } }))).toEqual([
      104,
      52,
      53,
      ...tail,
    ]);
  });

  it("cuts to the budget: the prefix's last 3/4 batch, the suffix's first quarter less prompt and 2, the extra's last tokens", () => {
    const prefix = Array.from({ length: 20 }, (_, i) => 200 + i);
    const suffix = [20, 21, 22];
    // nBatch 16: prefix keeps 12 (208…219), suffix 4 - (2 + 1) = 1; nCtx 20 - 16 - 2 * 1 = 2 extra tokens
    const small = { nBatch: 16, nCtx: 20, nPredict: 1, fim: REPO };
    expect(buildInfillPrompt({ prefix, suffix, prompt: [30], extra: chunks }, layout(small))).toEqual([
      ...[52, 53],
      1,
      100,
      ...[208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219],
      30,
      101,
      20,
      102,
    ]);
    // nPredict -1 (no limit) leaves 20 - 16 + 2 = 6 extra tokens; a 3-token prompt leaves no suffix
    const out = buildInfillPrompt(
      { prefix: [10], suffix, prompt: [30, 31, 32], extra: chunks },
      layout({ ...small, nPredict: -1 }),
    );
    expect(out).toEqual([104, 71, 42, 104, 52, 53, 1, 100, 10, 30, 31, 32, 101, 102]);
    // a context smaller than the batch: no extra context at all
    expect(buildInfillPrompt({ ...parts, extra: chunks }, layout({ nCtx: 32, fim: REPO }))).toEqual([
      1, 100, 10, 11, 12, 30, 101, 20, 21, 102,
    ]);
  });

  it("refuses a model without the prefix, suffix and middle tokens", () => {
    expect(() => buildInfillPrompt(parts, layout({ fim: { ...PSM, mid: undefined } }))).toThrow(/FIM/);
  });
});
