import type { Tokenizer } from "@minfer/tokenizer";
import { describe, expect, it } from "vitest";
import type { TokenConstraint } from "../constraint.js";
import { lcg } from "../test-helpers.js";
import type { Grammar } from "./grammar.js";
import { fixtureGrammar, vocab } from "./test-fixtures.js";
import { arithmetic, CHESS, ENGLISH, JAPANESE, LIST } from "./test-recognisers.js";

// Random walks with real vocabularies: at each step a random allowed token (argmax of random logits
// after mask), then the text is checked by a recogniser that knows nothing of the grammar code.

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A token spelling exactly `text` (the first such id), or undefined. */
function tokenFor(tok: Tokenizer, text: string): number | undefined {
  const want = new TextEncoder().encode(text);
  for (let id = 0; id < tok.size; id++) {
    const b = tok.tokenBytes(id);
    if (b.length === want.length && b.every((x, i) => x === want[i])) return id;
  }
  return undefined;
}

interface Walk {
  text: string;
  ended: boolean;
  /** Texts at the states where the EOG check ran, with whether EOG was allowed. */
  eogAt: [string, boolean][];
}

/**
 * `steps` random allowed tokens, then up to `steps * 4` more steering towards an end: EOG when
 * allowed, else the first allowed of `closers`, else a random allowed token among the shortest.
 */
function walk(
  g: Grammar,
  tok: Tokenizer,
  seed: number,
  steps: number,
  closers: readonly number[],
  onState?: (c: TokenConstraint, tokens: readonly number[]) => void,
): Walk {
  const c = g.constraint(tok);
  const rand = lcg(seed);
  const logits = new Float32Array(tok.size);
  const bytes: number[] = [];
  const tokens: number[] = [];
  const eogAt: [string, boolean][] = [];
  const eos = [...Array(tok.size).keys()].find((i) => tok.isEog(i))!;
  for (let step = 0; step < steps * 5; step++) {
    for (let i = 0; i < logits.length; i++) logits[i] = rand();
    c.mask(logits);
    const allowed: number[] = [];
    for (let i = 0; i < logits.length; i++) if (logits[i] !== -Infinity) allowed.push(i);
    if (allowed.length === 0) break;
    onState?.(c, tokens);
    eogAt.push([decodeOrPartial(bytes), logits[eos] !== -Infinity]);
    let t: number;
    if (step < steps) {
      t = allowed.reduce((best, i) => (logits[i]! > logits[best]! ? i : best), allowed[0]!);
      if (tok.isEog(t)) t = allowed.find((i) => !tok.isEog(i)) ?? t; // keep walking
    } else if (logits[eos] !== -Infinity) {
      t = eos;
    } else {
      t = closers.find((i) => logits[i] !== -Infinity) ?? -1;
      if (t < 0) {
        const shortest = allowed.reduce((m, i) => Math.min(m, tok.tokenBytes(i).length), Infinity);
        const short = allowed.filter((i) => tok.tokenBytes(i).length === shortest);
        t = short[Math.floor(rand() * short.length)]!;
      }
    }
    expect(c.allows(t)).toBe(true);
    if (tok.isEog(t)) {
      c.accept(t);
      return { text: utf8.decode(Uint8Array.from(bytes)), ended: true, eogAt };
    }
    c.accept(t);
    tokens.push(t);
    bytes.push(...tok.tokenBytes(t));
  }
  return { text: decodeOrPartial(bytes), ended: false, eogAt };
}

function decodeOrPartial(bytes: number[]): string {
  return new TextDecoder().decode(Uint8Array.from(bytes));
}

function isJsonObject(s: string): boolean {
  try {
    const v = JSON.parse(s);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

const VOCABS = ["qwen2", "llama-spm"] as const;

describe.each(VOCABS)("random walks with the %s vocabulary", (vocabName) => {
  const tok = vocab(vocabName);
  const ids = (...texts: string[]) =>
    texts.map((s) => tokenFor(tok, s)).filter((t): t is number => t !== undefined);

  it("json.gbnf: every ended walk is a JSON object, and EOG is allowed exactly when it parses", () => {
    const g = fixtureGrammar("json");
    const closers = ids('"', "}", "]", ":", "0");
    let ended = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const w = walk(g, tok, seed, 25, closers);
      for (const [text, eog] of w.eogAt) expect(eog, JSON.stringify(text)).toBe(isJsonObject(text));
      if (w.ended) {
        ended++;
        expect(isJsonObject(w.text), w.text).toBe(true);
      }
    }
    expect(ended).toBeGreaterThanOrEqual(10);
  });

  it("arithmetic.gbnf: every prefix is one the recogniser accepts; ended walks are complete", () => {
    const g = fixtureGrammar("arithmetic");
    const closers = ids(")", "=");
    let ended = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const w = walk(g, tok, seed, 20, closers);
      for (const [text, eog] of w.eogAt) {
        const v = arithmetic(text);
        expect(v, JSON.stringify(text)).not.toBe("invalid");
        expect(eog, JSON.stringify(text)).toBe(v === "complete");
      }
      if (w.ended) {
        ended++;
        expect(arithmetic(w.text), JSON.stringify(w.text)).toBe("complete");
      }
    }
    expect(ended).toBeGreaterThanOrEqual(6);
  });

  it.each([
    ["chess", CHESS, ["\n"]],
    ["list", LIST, ["\n"]],
    ["english", ENGLISH, []],
    ["japanese", JAPANESE, []],
  ] as const)("%s.gbnf: every ended walk matches the grammar's regular expression", (name, re, close) => {
    const g = fixtureGrammar(name);
    let ended = 0;
    for (let seed = 1; seed <= 8; seed++) {
      const w = walk(g, tok, seed, 12, ids(...close));
      for (const [text, eog] of w.eogAt) {
        if (eog) expect(re.test(text), JSON.stringify(text)).toBe(true);
      }
      if (w.ended) {
        ended++;
        expect(re.test(w.text), JSON.stringify(w.text)).toBe(true);
      }
    }
    expect(ended).toBeGreaterThanOrEqual(6);
  });

  it("allows(t) agrees with mask for every token at several states", () => {
    for (const name of ["json", "japanese", "c"]) {
      const g = fixtureGrammar(name);
      let checked = 0;
      walk(g, tok, 99, 6, [], (c, tokens) => {
        if (checked++ % 2 !== 0) return;
        // A fresh constraint, brought to the same state token by token, has no cached mask.
        const fresh = g.constraint(tok);
        for (const id of tokens) fresh.accept(id);
        const logits = new Float32Array(tok.size);
        c.mask(logits);
        let allowed = 0;
        for (let t = 0; t < tok.size; t++) {
          const want = logits[t] !== -Infinity;
          if (fresh.allows(t) !== want) expect.fail(`${name}: token ${t} allows=${!want} but mask=${want}`);
          if (want) allowed++;
        }
        expect(allowed).toBeGreaterThan(0);
      });
    }
  });

  it("never allows control tokens with no bytes", () => {
    const c = fixtureGrammar("english").constraint(tok);
    const logits = new Float32Array(tok.size);
    c.mask(logits);
    for (let t = 0; t < tok.size; t++) {
      if (tok.tokenBytes(t).length === 0) {
        expect(logits[t]).toBe(-Infinity);
        expect(c.allows(t)).toBe(false);
      }
    }
  });
});

describe("partial UTF-8 with llama-spm's byte tokens", () => {
  const tok = vocab("llama-spm");
  const byteToken = (b: number) => tok.vocab.ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`)!;

  it("spells a Japanese character one byte token at a time", () => {
    const c = fixtureGrammar("japanese").constraint(tok);
    const [e3, x81, x82, c3, a] = [0xe3, 0x81, 0x82, 0xc3, 0x41].map(byteToken) as number[];
    for (const t of [e3, x81, x82, c3, a]) expect(tok.tokenBytes(t!)).toHaveLength(1);
    expect(c.allows(e3!)).toBe(true);
    expect(c.allows(c3!)).toBe(false); // U+00C0–U+00FF: not Japanese
    expect(c.allows(a!)).toBe(false);
    c.accept(e3!);
    expect(c.isComplete()).toBe(false);
    expect(c.allows(a!)).toBe(false); // would break the character
    expect(c.allows(tok.vocab.special.eos!)).toBe(false);
    c.accept(x81!);
    expect(c.allows(x82!)).toBe(true);
    c.accept(x82!); // あ
    expect(c.isComplete()).toBe(true);
    const logits = new Float32Array(tok.size);
    c.mask(logits);
    expect(logits[tok.vocab.special.eos!]).not.toBe(-Infinity);
  });
});
