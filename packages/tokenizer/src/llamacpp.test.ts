// Differential tests against llama.cpp's own tokenizer (through node-llama-cpp, on the same
// vocabulary GGUF): whole test-input files, seeded random strings, and special-token parsing.
import { readFileSync } from "node:fs";
import { readGgufSync } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Tokenizer } from "./index.js";
import { randomText, seeded } from "./random-text.js";
import { vocabPath } from "./test-vectors.js";

type Llama = Awaited<ReturnType<typeof import("node-llama-cpp")["getLlama"]>>;
type LlamaModel = Awaited<ReturnType<Llama["loadModel"]>>;

const VOCABS = [
  "qwen2",
  "qwen35",
  "llama-bpe",
  "llama-spm",
  "phi-3",
  "gpt-2",
  "deepseek-llm",
  "deepseek-coder",
  "falcon",
  "mpt",
  "starcoder",
  "refact",
  "bert-bge",
  "baichuan",
];

let llama: Llama | undefined;
let unavailable = "";
beforeAll(async () => {
  try {
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  } catch (e) {
    unavailable = (e as Error).message;
  }
}, 60_000);
afterAll(async () => {
  await llama?.dispose();
});

/**
 * Inputs on which llama.cpp is known to part from the model's reference tokenizer (Hugging Face
 * tokenizers, which produced the test vectors); minfer follows the reference there.
 */
function knownDifference(name: string, s: string): string | undefined {
  // llama.cpp rewrites non-ASCII whitespace to "\v" before matching the explicit character
  // ranges of DeepSeek LLM's pre-tokenizer, so U+3000 stops matching its punctuation range.
  if (name === "deepseek-llm" && /[^\P{White_Space}\t-\r ]/u.test(s)) {
    return "non-ASCII whitespace";
  }
  // llama.cpp's WordPiece drops every combining mark (\p{M}); BERT's normalizer strips only
  // nonspacing marks (Mn) and keeps spacing ones such as Devanagari vowel signs (Mc).
  if (name === "bert-bge" && /\p{Mc}|\p{Me}/u.test(s)) return "spacing combining mark";
  // llama.cpp keeps only the first code point of a decomposition; NFD turns a Hangul syllable
  // into two or three jamo, which BERT keeps.
  if (name === "bert-bge" && /[\uAC00-\uD7A3]/u.test(s)) return "Hangul syllable";
  return undefined;
}

describe.each(VOCABS)("%s against llama.cpp", (name) => {
  let model: LlamaModel;
  let tok: Tokenizer;
  beforeAll(async () => {
    if (!llama) throw new Error(`node-llama-cpp could not load llama.cpp here: ${unavailable}`);
    model = await llama.loadModel({ modelPath: vocabPath(name), vocabOnly: true });
    tok = Tokenizer.fromMetadata(readGgufSync(vocabPath(name)).metadata);
  }, 60_000);
  afterAll(async () => {
    await model?.dispose();
  });
  const theirs = (text: string, special: boolean) => Array.from(model.tokenize(text, special), Number);

  it("tokenizes the whole test-input file as one text the same", () => {
    const path = `${vocabPath(name === "baichuan" ? "llama-spm" : name)}.inp`;
    const text = readFileSync(path, "utf8");
    expect(tok.encode(text, { addSpecial: false })).toEqual(theirs(text, false));
  });

  it("tokenizes a thousand random strings the same", () => {
    const rand = seeded(7 + name.length);
    const diffs: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const s = randomText(rand, 48);
      if (knownDifference(name, s)) continue;
      // llama.cpp receives UTF-8, where a lone surrogate is U+FFFD.
      const ours = tok.encode(s.toWellFormed(), { addSpecial: false });
      const want = theirs(s, false);
      if (JSON.stringify(ours) !== JSON.stringify(want))
        diffs.push(`${JSON.stringify(s)}: ${want} vs ${ours}`);
    }
    expect(diffs.slice(0, 5)).toEqual([]);
  });

  it("ends generation on the same tokens (EOS/EOT/EOM, FIM padding/repository/separator, end-of-turn texts)", () => {
    const theirsEog: number[] = [];
    for (let id = 0; id < tok.vocab.tokens.length; id++)
      if (model.isEogToken(id as never)) theirsEog.push(id);
    expect([...tok.vocab.eog].sort((a, b) => a - b)).toEqual(theirsEog);
  });

  it("parses special tokens written in the text the same", () => {
    const specials = tok.vocab.tokens.filter((_, id) => tok.vocab.types[id] === 3).slice(0, 20);
    const rand = seeded(99);
    for (let i = 0; i < 200; i++) {
      let s = "";
      for (let k = 0; k < 4; k++) {
        s += randomText(rand, 12);
        if (knownDifference(name, s))
          s = s.replace(/[^\P{White_Space}\t-\r ]|\p{Mc}|\p{Me}|[\uAC00-\uD7A3]/gu, " ");
        if (specials.length > 0) s += specials[Math.floor(rand() * specials.length)];
      }
      expect(tok.encode(s, { addSpecial: false, parseSpecial: true }), JSON.stringify(s)).toEqual(
        theirs(s, true),
      );
    }
  });
});
