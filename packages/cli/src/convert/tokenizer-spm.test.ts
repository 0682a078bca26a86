// SentencePiece tokenizers checked against vocabularies made by llama.cpp's own converter: from a
// fixture GGUF (llama-spm: Llama 2; phi-3) the files Hugging Face ships for that family are written
// (tokenizer.model with the GGUF's pieces, scores and types; the tokenizer.json transformers makes
// of it; tokenizer_config.json), converted, and the `tokenizer.*` keys required to equal the
// fixture's, and @minfer/tokenizer on the converted file to reproduce llama.cpp's test vectors.
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type GgufMetadata, readGguf } from "@minfer/gguf";
import { Tokenizer } from "@minfer/tokenizer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures } from "../test-helpers.js";
import { convertCheckpoint } from "./convert.js";
import { parseSentencePieceModel } from "./sentencepiece-model.js";
import { testVectors } from "./test-helpers.js";
import { extractMerges, readFixtureVocab, sentencePieceModel } from "./test-tokenizers.js";
import { tinyCheckpoint } from "./tiny-checkpoint.js";

const vocabPath = (n: string) => join(fixtures, `vocab/ggml-vocab-${n}.gguf`);
let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-spm-"));
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A one-layer checkpoint with the family's tokenizer files: Llama (llama-spm) or Phi-3 (phi-3). */
async function checkpoint(
  vocab: "llama-spm" | "phi-3",
  name: string,
  o: { model?: boolean } = {},
): Promise<string> {
  const dir = join(tmp, name);
  await tinyCheckpoint(vocab === "phi-3" ? "phi3-4k" : "gemma", dir, {
    edit: (c) => {
      c.num_hidden_layers = 1;
    },
  });
  if (vocab === "llama-spm") {
    // Gemma's tensors are named as Llama's: the same checkpoint as a LlamaForCausalLM.
    const p = join(dir, "config.json");
    const c = JSON.parse(readFileSync(p, "utf8"));
    // Llama 2's config.json names no padding token.
    const { pad_token_id: _, ...rest } = c;
    writeFileSync(p, JSON.stringify({ ...rest, architectures: ["LlamaForCausalLM"], model_type: "llama" }));
  }
  if (o.model === false) unlinkSync(join(dir, "tokenizer.model"));
  return dir;
}

async function convertedMetadata(dir: string): Promise<GgufMetadata> {
  const out = `${dir}.gguf`;
  await convertCheckpoint(dir, out, { type: "f16" });
  return (await readGguf(out)).metadata;
}

const tokenizerKeys = (md: GgufMetadata) => [...md.keys()].filter((k) => k.startsWith("tokenizer.")).sort();

function expectVectors(md: GgufMetadata, vocab: string): void {
  const tok = Tokenizer.fromMetadata(md);
  const cases = testVectors(vocabPath(vocab));
  expect(cases.length).toBeGreaterThan(10);
  for (const c of cases)
    expect(tok.encode(c.text, { addSpecial: false, parseSpecial: false }), JSON.stringify(c.text)).toEqual(
      c.ids,
    );
}

describe("tokenizer.model: parsed without a protobuf library", () => {
  it("pieces, scores, types and the trainer / normalizer flags round-trip", () => {
    const pieces = [
      { piece: "<unk>", score: 0, type: 2 },
      { piece: "<s>", score: 0, type: 3 },
      { piece: "<0x41>", score: 0, type: 6 },
      { piece: "▁hé", score: -1.5, type: 1 },
      { piece: "<user>", score: 0, type: 4 },
      { piece: "[unused]", score: -3, type: 5 },
    ];
    const m = parseSentencePieceModel(
      sentencePieceModel(pieces, { modelType: 1, byteFallback: false, addDummyPrefix: false }),
      "x.model",
    );
    expect(m.pieces).toEqual(pieces);
    expect([
      m.modelType,
      m.byteFallback,
      m.addDummyPrefix,
      m.removeExtraWhitespaces,
      m.normalizerName,
    ]).toEqual([1, false, false, false, "identity"]);
  });
});

describe("SentencePiece tokenizers against llama.cpp's vocabularies", () => {
  it("llama-spm from tokenizer.model: every tokenizer key equals the fixture's; the test vectors pass", async () => {
    const md = await convertedMetadata(await checkpoint("llama-spm", "llama-model"));
    const fx = (await readFixtureVocab(vocabPath("llama-spm"))).md;
    expect(tokenizerKeys(md)).toEqual(tokenizerKeys(fx));
    for (const k of tokenizerKeys(fx)) expect(md.value(k), k).toEqual(fx.value(k));
    expectVectors(md, "llama-spm");
  }, 120_000);

  it("llama-spm from tokenizer.json alone (BPE with byte_fallback): the fixture's tokens, types and ids; scores in the fixture's order; the test vectors pass", async () => {
    const md = await convertedMetadata(await checkpoint("llama-spm", "llama-json", { model: false }));
    const v = await readFixtureVocab(vocabPath("llama-spm"));
    const fx = v.md;
    expect(tokenizerKeys(md)).toEqual(tokenizerKeys(fx));
    for (const k of tokenizerKeys(fx).filter((k) => k !== "tokenizer.ggml.scores"))
      expect(md.value(k), k).toEqual(fx.value(k));
    // tokenizer.json has merges, not scores: the pieces merges make are ranked as the fixture's
    // scores rank them (so llama.cpp merges in the same order); the others score below all merges.
    const scores = md.numberArray("tokenizer.ggml.scores");
    const made = new Set(
      extractMerges(v.tokens.map((piece, i) => ({ piece, score: v.scores![i]! }))).map(([l, r]) => l + r),
    );
    const ids = [...made].map((p) => v.tokens.indexOf(p));
    const byFixture = [...ids].sort((a, b) => v.scores![b]! - v.scores![a]! || a - b);
    const byConverted = [...ids].sort((a, b) => scores[b]! - scores[a]! || a - b);
    expect(byConverted).toEqual(byFixture);
    const lowest = Math.min(...ids.map((i) => scores[i]!));
    for (let i = 0; i < v.tokens.length; i++)
      if (!made.has(v.tokens[i]!) && v.types[i] === 1) expect(scores[i]!).toBeLessThan(lowest);
    expectVectors(md, "llama-spm");
  }, 120_000);

  it("phi-3 from tokenizer.model with Phi-3's added tokens: every key equals the fixture's but the padding's type; the test vectors pass", async () => {
    const md = await convertedMetadata(await checkpoint("phi-3", "phi3-model"));
    const fx = (await readFixtureVocab(vocabPath("phi-3"))).md;
    expect(tokenizerKeys(md)).toEqual(tokenizerKeys(fx));
    for (const k of tokenizerKeys(fx).filter((k) => k !== "tokenizer.ggml.token_type"))
      expect(md.value(k), k).toEqual(fx.value(k));
    // The fixture comes from an older converter that typed the [PADn] fillers UNKNOWN (2);
    // llama.cpp's converter now types them UNUSED (5). Every other type is the fixture's.
    const tokens = md.stringArray("tokenizer.ggml.tokens");
    const got = Array.from(md.numberArray("tokenizer.ggml.token_type"));
    const want = Array.from(fx.numberArray("tokenizer.ggml.token_type"));
    const pads = tokens.flatMap((t, i) => (/^\[PAD\d+\]$/.test(t) ? [i] : []));
    expect(pads.length).toBe(53);
    for (const i of pads) {
      expect(want[i]).toBe(2);
      expect(got[i]).toBe(5);
      got[i] = want[i]!;
    }
    expect(got).toEqual(want);
    expectVectors(md, "phi-3");
  }, 120_000);

  it("phi-3 from tokenizer.json alone: tokens, types (but padding) and ids as the fixture's; the test vectors pass", async () => {
    const md = await convertedMetadata(await checkpoint("phi-3", "phi3-json", { model: false }));
    const fx = (await readFixtureVocab(vocabPath("phi-3"))).md;
    expect(md.stringArray("tokenizer.ggml.tokens")).toEqual(fx.stringArray("tokenizer.ggml.tokens"));
    for (const k of tokenizerKeys(fx).filter((k) => !/scores|token_type|tokens/.test(k)))
      expect(md.value(k), k).toEqual(fx.value(k));
    const got = Array.from(md.numberArray("tokenizer.ggml.token_type")).map((t) => (t === 5 ? 2 : t));
    expect(got).toEqual(Array.from(fx.numberArray("tokenizer.ggml.token_type")));
    expectVectors(md, "phi-3");
  }, 120_000);
});
