import { readGgufSync } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { BpeEncoder } from "./bpe.js";
import { preTokenizer } from "./pre-tokenizers.js";
import { partition, SpecialMatcher, specialTokenList } from "./special.js";
import { testVectors, vocabPath } from "./test-vectors.js";
import { loadVocab } from "./vocab.js";

const BPE_VOCABS = [
  "gpt-2",
  "qwen2",
  "qwen35",
  "llama-bpe",
  "deepseek-llm",
  "deepseek-coder",
  "falcon",
  "mpt",
  "starcoder",
  "refact",
];

describe.each(BPE_VOCABS)("%s vectors", (name) => {
  const vocab = loadVocab(readGgufSync(vocabPath(name)).metadata);
  const enc = new BpeEncoder(vocab, preTokenizer(vocab.pre));
  const specials = new SpecialMatcher(specialTokenList(vocab));
  it.each(testVectors(name).map((c, i) => [i, c] as const))("case %i", (_, c) => {
    const out: number[] = [];
    for (const f of partition(c.text, specials, false)) {
      if ("token" in f) out.push(f.token);
      else enc.encode(f.text, out);
    }
    expect(out, JSON.stringify(c.text)).toEqual(c.ids);
  });
});
