// Byte-level BPE pre-tokenizers recognised by structure: Granite's (Digits one at a time, then
// ByteLevel with its own regex) round-tripped from llama.cpp's refact vocabulary, which llama.cpp
// names "refact" — the name it gives Granite 3's tokenizer.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readGguf } from "@minfer/gguf";
import { Tokenizer } from "@minfer/tokenizer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures } from "../test-helpers.js";
import { convertCheckpoint } from "./convert.js";
import { testVectors } from "./test-helpers.js";
import { bpeTokenizerJson, readFixtureVocab, writeJson } from "./test-tokenizers.js";
import { tinyCheckpoint } from "./tiny-checkpoint.js";

let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-bpe-"));
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("byte-level BPE: the pre-tokenizer by structure and architecture", () => {
  it("Granite with the refact vocabulary (Digits + ByteLevel): refact, the fixture's tokens, types and merges; the test vectors pass", async () => {
    const path = join(fixtures, "vocab/ggml-vocab-refact.gguf");
    const v = await readFixtureVocab(path);
    const dir = join(tmp, "granite-refact");
    await tinyCheckpoint("granite", dir, {
      edit: (c) => {
        c.vocab_size = v.tokens.length;
        c.num_hidden_layers = 1;
      },
    });
    writeJson(join(dir, "tokenizer.json"), bpeTokenizerJson(v, "digits"));
    writeJson(join(dir, "tokenizer_config.json"), { bos_token: "<|endoftext|>", eos_token: "<|endoftext|>" });
    await convertCheckpoint(dir, `${dir}.gguf`, { type: "f16" });
    const md = (await readGguf(`${dir}.gguf`)).metadata;
    const fx = v.md;
    expect(md.string("tokenizer.ggml.pre")).toBe("refact");
    for (const k of [
      "tokenizer.ggml.tokens",
      "tokenizer.ggml.token_type",
      "tokenizer.ggml.merges",
      "tokenizer.ggml.bos_token_id",
    ])
      expect(md.value(k), k).toEqual(fx.value(k));
    const tok = Tokenizer.fromMetadata(md);
    const cases = testVectors(path);
    expect(cases.length).toBeGreaterThan(10);
    for (const c of cases)
      expect(tok.encode(c.text, { addSpecial: false, parseSpecial: false }), JSON.stringify(c.text)).toEqual(
        c.ids,
      );
  }, 120_000);
});
