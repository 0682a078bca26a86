import { GgufMetadata, GgufValueType, readGgufSync } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { Tokenizer, TokenizerError } from "./index.js";
import { randomText, seeded } from "./random-text.js";
import { testVectors, vocabPath } from "./test-vectors.js";

const WITH_VECTORS = [
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
];
const BPE = WITH_VECTORS.filter((n) => !["llama-spm", "phi-3", "bert-bge"].includes(n));
const cache = new Map<string, Tokenizer>();
function tokenizer(name: string): Tokenizer {
  let t = cache.get(name);
  if (!t) {
    t = Tokenizer.fromMetadata(readGgufSync(vocabPath(name)).metadata);
    cache.set(name, t);
  }
  return t;
}

describe.each(WITH_VECTORS)("%s: llama.cpp's test vectors", (name) => {
  it("every case gives exactly the expected ids", () => {
    const tok = tokenizer(name);
    const cases = testVectors(name);
    const failures = cases
      .map((c) => ({ ...c, got: tok.encode(c.text, { addSpecial: false, parseSpecial: false }) }))
      .filter((c) => JSON.stringify(c.got) !== JSON.stringify(c.ids))
      .map((c) => `${JSON.stringify(c.text)}: want ${c.ids.join(" ")}, got ${c.got.join(" ")}`);
    expect(failures).toEqual([]);
    expect(cases.length).toBeGreaterThanOrEqual(46);
  });
});

describe.each([...BPE, "llama-spm", "phi-3"])("%s: round trip", (name) => {
  it("decode(encode(s)) == s for thousands of random strings", () => {
    const tok = tokenizer(name);
    const rand = seeded(name.length * 31 + name.charCodeAt(0));
    for (let i = 0; i < 2000; i++) {
      const s = randomText(rand);
      const ids = tok.encode(s, { addSpecial: false });
      expect(tok.decode(ids), JSON.stringify(s)).toBe(s);
    }
  });

  it("with BOS/EOS added, decoding still gives the text", () => {
    const tok = tokenizer(name);
    const ids = tok.encode("Hello world", { addSpecial: true });
    expect(tok.decode(ids)).toBe("Hello world");
  });

  it("lone surrogates become U+FFFD, as UTF-8 encoding of the string makes them", () => {
    const tok = tokenizer(name);
    for (const s of ["a\ud800b", "\udc00", "x\ud83d", "\ud83d\ude00\ud800"]) {
      expect(tok.decode(tok.encode(s, { addSpecial: false }))).toBe(s.toWellFormed());
    }
  });
});

describe("special tokens", () => {
  it("are parsed only when asked", () => {
    const tok = tokenizer("qwen2");
    const im = tok.vocab.ids.get("<|im_start|>")!;
    expect(tok.encode("<|im_start|>user", { parseSpecial: true, addSpecial: false })[0]).toBe(im);
    expect(tok.encode("<|im_start|>user", { parseSpecial: false, addSpecial: false })).not.toContain(im);
    expect(tok.isEog(tok.vocab.ids.get("<|im_end|>")!)).toBe(true);
    expect(tok.isEog(tok.vocab.ids.get("<|endoftext|>")!)).toBe(true);
  });

  it("render as text only with renderSpecial", () => {
    const tok = tokenizer("llama-spm");
    const ids = tok.encode("Hi");
    expect(ids[0]).toBe(1);
    expect(tok.decode(ids)).toBe("Hi");
    expect(tok.decode(ids, { renderSpecial: true })).toBe("<s> Hi");
  });

  it("render as text when preserved (a chat format's markers), the others still as nothing", () => {
    const tok = tokenizer("qwen2");
    const start = tok.vocab.ids.get("<|im_start|>")!;
    const end = tok.vocab.ids.get("<|im_end|>")!;
    const ids = [start, ...tok.encode("user", { addSpecial: false }), end];
    expect(tok.decode(ids)).toBe("user");
    expect(tok.decode(ids, { preserve: new Set([start]) })).toBe("<|im_start|>user");
    const d = tok.streamDecoder({ preserve: new Set([end]) });
    expect(d.pushMany(ids) + d.flush()).toBe("user<|im_end|>");
  });
});

describe("streaming decode", () => {
  it("never emits half of a UTF-8 character", () => {
    const tok = tokenizer("llama-spm");
    // "😀" is not a token: it is spelled with four byte tokens.
    const ids = tok.encode("a😀b", { addSpecial: false });
    expect(ids.length).toBeGreaterThanOrEqual(6);
    const d = tok.streamDecoder();
    const parts = ids.map((id) => d.push(id));
    parts.push(d.flush());
    expect(parts.join("")).toBe("a😀b");
    for (const p of parts) expect(p.toWellFormed()).toBe(p);
    expect(parts.filter((p) => p === "").length).toBeGreaterThanOrEqual(3);
  });

  it("pushMany gives the text of pushing one by one, however the tokens are sliced", () => {
    for (const name of ["llama-spm", "qwen2"] as const) {
      const tok = tokenizer(name);
      const ids = tok.encode(" a😀b  ünïcode 東京 \n x😀", { addSpecial: false });
      const one = tok.streamDecoder();
      const expected = ids.map((id) => one.push(id)).join("") + one.flush();
      for (let cut = 0; cut <= ids.length; cut++) {
        const d = tok.streamDecoder();
        const got = d.pushMany(ids, 0, cut) + d.pushMany(ids, cut) + d.flush();
        expect(got, `${name} cut at ${cut}`).toBe(expected);
      }
      expect(tok.decode(ids)).toBe(expected);
    }
  });

  it("flushes an unfinished character as U+FFFD at the end", () => {
    const tok = tokenizer("llama-spm");
    const byte = tok.vocab.ids.get("<0xF0>")!;
    const d = tok.streamDecoder();
    expect(d.push(byte)).toBe("");
    expect(d.flush()).toBe("\ufffd");
  });
});

describe("encodeAsync", () => {
  it.each(["qwen2", "llama-spm", "bert-bge"])(
    "%s: gives the same ids as encode on long text, yielding on the way",
    async (name) => {
      const tok = tokenizer(name);
      const text = testVectors(name)
        .map((c) => c.text)
        .join("\n")
        .repeat(40);
      const sync = tok.encode(text);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 0);
      const async = await tok.encodeAsync(text);
      clearInterval(timer);
      expect(async).toEqual(sync);
      expect(ticks).toBeGreaterThan(0);
    },
  );
});

describe("bad vocabularies are refused at load, naming the problem", () => {
  const base = readGgufSync(vocabPath("gpt-2")).metadata;
  const without = (key: string, extra: ConstructorParameters<typeof GgufMetadata>[0] = []) =>
    new GgufMetadata([...[...base.entries()].filter((kv) => kv.key !== key), ...extra]);

  function refusal(md: GgufMetadata): TokenizerError {
    try {
      Tokenizer.fromMetadata(md);
    } catch (e) {
      expect(e).toBeInstanceOf(TokenizerError);
      return e as TokenizerError;
    }
    throw new Error("was not refused");
  }

  it("missing merges", () => {
    const e = refusal(without("tokenizer.ggml.merges"));
    expect(e.code).toBe("MISSING_MERGES");
    expect(e.message).toContain("tokenizer.ggml.merges");
  });

  it("a special id outside the vocabulary", () => {
    const e = refusal(
      without("tokenizer.ggml.eos_token_id", [
        { key: "tokenizer.ggml.eos_token_id", type: GgufValueType.UINT32, value: 99999 },
      ]),
    );
    expect(e.code).toBe("BAD_SPECIAL_ID");
    expect(e.message).toContain(
      "tokenizer.ggml.eos_token_id is 99999, outside the vocabulary of 50257 tokens",
    );
  });

  it("a missing or unknown pre-tokenizer, listing the supported ones", () => {
    const missing = refusal(without("tokenizer.ggml.pre"));
    expect(missing.code).toBe("UNKNOWN_PRE_TOKENIZER");
    expect(missing.message).toContain("qwen2");
    const unknown = refusal(
      without("tokenizer.ggml.pre", [
        { key: "tokenizer.ggml.pre", type: GgufValueType.STRING, value: "gpt-5" },
      ]),
    );
    expect(unknown.message).toMatch(/unknown pre-tokenizer "gpt-5".*supported: .*llama-bpe/);
  });

  it("an unknown tokenizer model", () => {
    const e = refusal(
      without("tokenizer.ggml.model", [
        { key: "tokenizer.ggml.model", type: GgufValueType.STRING, value: "rwkv" },
      ]),
    );
    expect(e.code).toBe("UNKNOWN_MODEL");
    expect(e.message).toContain("supported: gpt2, llama, bert, t5");
  });

  it("a decode of an id outside the vocabulary", () => {
    expect(() => tokenizer("gpt-2").decode([50257])).toThrow(/token id 50257 is outside/);
  });
});
