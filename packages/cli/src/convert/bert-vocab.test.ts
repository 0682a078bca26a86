// A real WordPiece vocabulary round-tripped: bge-small's tokenizer.json rebuilt from llama.cpp's
// ggml-vocab-bert-bge.gguf (30522 tokens, converted by llama.cpp from BAAI/bge-small-en-v1.5), put in
// a tiny BertModel checkpoint and converted. The GGUF's tokens, types and special ids must be the
// fixture's, and llama.cpp's tokenizer on it must give the ids Hugging Face's tokenizer gave for
// llama.cpp's test strings (the fixture's .inp/.out).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readGguf } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures } from "../test-helpers.js";
import { convertCheckpoint } from "./convert.js";
import { testVectors } from "./test-helpers.js";
import { readFixtureVocab, writeJson } from "./test-tokenizers.js";
import { wordPieceTokenizerJson } from "./test-tokenizers-bert.js";
import { tinyBertCheckpoint } from "./tiny-bert.js";

type Llama = Awaited<ReturnType<typeof import("node-llama-cpp")["getLlama"]>>;

let llama: Llama | undefined;
try {
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
} catch {
  llama = undefined;
}

let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-bert-vocab-"));
});
afterAll(async () => {
  await llama?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const fixture = join(fixtures, "vocab/ggml-vocab-bert-bge.gguf");
/** bert-base-uncased's reserved tokens: an older llama.cpp converter left them without the ▁. */
const UNUSED = /^\[unused\d+\]$/;

describe("bge-small's WordPiece vocabulary", () => {
  let gguf = "";
  beforeAll(async () => {
    const v = await readFixtureVocab(fixture);
    // Back from llama.cpp's phantom-space form to WordPiece: "▁x" → "x", a bare piece → "##x".
    const vocab = v.tokens.map((t, i) =>
      v.types[i] === 3 || UNUSED.test(t) ? t : t.startsWith("\u2581") ? t.slice(1) : `##${t}`,
    );
    const dir = join(tmp, "bge");
    await tinyBertCheckpoint("bert", dir, {
      edit: (c) => {
        c.vocab_size = vocab.length;
        c.hidden_size = 8;
        c.num_attention_heads = 2;
        c.intermediate_size = 16;
        c.num_hidden_layers = 1;
        c.max_position_embeddings = 512;
      },
    });
    writeFileSync(join(dir, "vocab.txt"), `${vocab.join("\n")}\n`);
    writeJson(join(dir, "tokenizer.json"), wordPieceTokenizerJson(vocab));
    gguf = `${dir}.gguf`;
    await convertCheckpoint(dir, gguf, { type: "f16" });
  }, 120_000);

  it("gives llama.cpp's tokens, types and special ids (the reserved [unusedN] now with ▁, as its converter writes them today)", async () => {
    const md = (await readGguf(gguf)).metadata;
    const fx = (await readFixtureVocab(fixture)).md;
    const want = fx.stringArray("tokenizer.ggml.tokens").map((t) => (UNUSED.test(t) ? `\u2581${t}` : t));
    expect(md.stringArray("tokenizer.ggml.tokens")).toEqual(want);
    expect(md.value("tokenizer.ggml.token_type")).toEqual(fx.value("tokenizer.ggml.token_type"));
    for (const k of [
      "tokenizer.ggml.model",
      "tokenizer.ggml.token_type_count",
      "tokenizer.ggml.unknown_token_id",
      "tokenizer.ggml.seperator_token_id",
      "tokenizer.ggml.padding_token_id",
      "tokenizer.ggml.cls_token_id",
      "tokenizer.ggml.mask_token_id",
    ])
      expect(md.value(k), k).toEqual(fx.value(k));
    // gguf-py now takes BOS/EOS from CLS/SEP; the fixture predates it.
    expect(md.value("tokenizer.ggml.bos_token_id")).toBe(101);
    expect(md.value("tokenizer.ggml.eos_token_id")).toBe(102);
  });

  it.skipIf(!llama)(
    "llama.cpp's tokenizer on the converted file gives Hugging Face's ids for llama.cpp's test strings",
    async () => {
      const model = await llama!.loadModel({ modelPath: gguf, gpuLayers: 0, vocabOnly: true });
      try {
        const cases = testVectors(fixture);
        expect(cases.length).toBeGreaterThan(40);
        for (const c of cases) expect(model.tokenize(c.text, false), JSON.stringify(c.text)).toEqual(c.ids);
      } finally {
        await model.dispose();
      }
    },
  );
});
