import { describe, expect, it } from "vitest";
import type { TokenConstraint } from "../constraint.js";
import { SamplerError } from "../errors.js";
import { Sampler } from "../sampler.js";
import { argmax } from "../select.js";
import { draws } from "../test-checks.js";
import { lcg, randomLogits } from "../test-helpers.js";
import { Dry } from "./dry.js";
import { applyPenalties } from "./penalties.js";

/** The working logits a sampler sees after bias, penalties and DRY, recovered up to a constant from its log-probabilities. */
function workingLogits(s: Sampler, logits: Float32Array): Float64Array {
  const r = s.sampleWithLogprobs(logits, logits.length);
  const out = new Float64Array(logits.length).fill(-Infinity);
  for (const { token, logprob } of r.top) out[token] = logprob;
  return out;
}

/** Expects `got` (log-probabilities) to be `want` (logits) up to one additive constant, anchored at id `anchor`. */
function expectShifted(got: Float64Array, want: ArrayLike<number>, anchor: number): void {
  for (let i = 0; i < want.length; i++) {
    if (want[i] === -Infinity) {
      expect(got[i], `id ${i}`).toBe(-Infinity);
      continue;
    }
    expect(got[i]! - got[anchor]!, `id ${i}`).toBeCloseTo(want[i]! - want[anchor]!, 9);
  }
}

/** llama.cpp's penalty rule, written out from its definition. */
function penalized(v: number, count: number, repeat: number, freq: number, presence: number): number {
  if (count === 0) return v;
  const r = v > 0 ? v / repeat : v * repeat;
  return Math.fround(r - count * freq - presence);
}

describe("penalties", () => {
  it("change exactly the logits of the tokens in the window, by llama.cpp's rule", () => {
    const logits = new Float32Array([2, -1.5, 0, 3.25, -0.5, 1, 4, -2]);
    const window = new Uint32Array([3, 1, 3, 2, 3, 1, 99]); // 99 lies outside the vocabulary
    const out = logits.slice();
    applyPenalties(
      out,
      window,
      { repeatPenalty: 1.3, frequencyPenalty: 0.25, presencePenalty: 0.5 },
      new Map(),
    );
    const count = (t: number) => window.filter((x) => x === t).length;
    const want = Array.from(logits, (v, i) => penalized(v, count(i), 1.3, 0.25, 0.5));
    expect(Array.from(out)).toEqual(want);
    expect(out[0]).toBe(logits[0]); // untouched
    expect(out[3]).toBe(Math.fround(3.25 / 1.3 - 3 * 0.25 - 0.5));
    expect(out[1]).toBe(Math.fround(-1.5 * 1.3 - 2 * 0.25 - 0.5));
  });

  it("look at the last repeatLastN accepted tokens, prompt included, without changing the caller's logits", () => {
    const n = 40;
    const logits = randomLogits(n, 41, -3, 3, 0.01);
    const copy = logits.slice();
    const o = { repeatPenalty: 1.5, frequencyPenalty: 0.3, presencePenalty: 0.2, repeatLastN: 6, seed: 1 };
    const s = new Sampler(o);
    const hist = [5, 6, 7, 5, 30, 31, 5, 7, 9];
    s.acceptPrompt(hist.slice(0, 4));
    for (const t of hist.slice(4)) s.accept(t);
    const window = hist.slice(-6);
    const want = Array.from(logits, (v, i) =>
      penalized(v, window.filter((x) => x === i).length, 1.5, 0.3, 0.2),
    );
    expectShifted(workingLogits(s, logits), want, 0);
    expect(logits).toEqual(copy);
    // repeatLastN 0: off; -1: the whole history.
    expectShifted(workingLogits(new Sampler({ ...o, repeatLastN: 0 }), logits), logits, 0);
    const all = new Sampler({ ...o, repeatLastN: -1 });
    all.acceptPrompt(hist);
    const wantAll = Array.from(logits, (v, i) =>
      penalized(v, hist.filter((x) => x === i).length, 1.5, 0.3, 0.2),
    );
    expectShifted(workingLogits(all, logits), wantAll, 0);
  });

  it("reset() forgets the history, and acceptPrompt replaces it", () => {
    const logits = randomLogits(10, 42);
    const s = new Sampler({ presencePenalty: 5, seed: 1 });
    s.acceptPrompt([1, 2, 3]);
    s.reset();
    expectShifted(workingLogits(s, logits), logits, 0);
    s.acceptPrompt([1, 2, 3]);
    s.accept(4);
    s.acceptPrompt([7]);
    const want = Array.from(logits, (v, i) => (i === 7 ? v - 5 : v));
    expectShifted(workingLogits(s, logits), want, 0);
  });
});

/** DRY's penalty per token, by brute force from its definition. */
function dryReference(
  h: number[],
  vocab: number,
  o: { mult: number; base: number; allowed: number },
  isBreaker: (t: number) => boolean,
): Float64Array {
  const L = h.length;
  const pen = new Float64Array(vocab);
  const best = new Map<number, number>();
  for (let j = 1; j < L; j++) {
    let len = 0;
    // The longest n with h[j−n..j) equal to h[L−n..L), none of them breakers.
    for (let m = 1; m <= j; m++) {
      const a = h.slice(j - m, j);
      const b = h.slice(L - m, L);
      if (a.every((x, k) => x === b[k]) && !b.some(isBreaker)) len = m;
      else break;
    }
    if (len >= o.allowed) best.set(h[j]!, Math.max(best.get(h[j]!) ?? 0, len));
  }
  for (const [t, len] of best) pen[t] = o.mult * o.base ** (len - o.allowed);
  return pen;
}

describe("DRY", () => {
  it("penalizes the token that would extend a repeat by multiplier · base^(length − allowed)", () => {
    // a b c d ... a b c: d would repeat "a b c d" (length 3 before it).
    const text = (id: number) => ["a", "b", "c", "d", "e", "\n", "x:"][id] ?? "z";
    const dry = new Dry(
      { dryMultiplier: 0.8, dryBase: 1.75, dryAllowedLength: 2 },
      ["\n", ":"],
      Dry.bytesLookup(undefined, text),
    );
    const logits = new Float32Array(8);
    dry.apply(logits, new Uint32Array([0, 1, 2, 3, 4, 0, 1, 2]));
    expect(Array.from(logits)).toEqual([0, 0, 0, Math.fround(-0.8 * 1.75 ** 1), 0, 0, 0, 0]);
    // A breaker inside the repeat cuts it: "\n" (5) between b and c.
    const l2 = new Float32Array(8);
    dry.apply(l2, new Uint32Array([0, 5, 1, 2, 3, 4, 0, 5, 1, 2]));
    expect(l2[3]).toBe(Math.fround(-0.8 * 1.75 ** 0)); // only "b c" repeats: length 2
    expect(dry.isBreaker(6)).toBe(true); // "x:" holds ":"
    expect(dry.isBreaker(4)).toBe(false);
  });

  it("matches a brute-force reference on random histories", () => {
    const r = lcg(7);
    const breakers = new Set([3]);
    const o = { mult: 0.7, base: 1.6, allowed: 2 };
    for (let trial = 0; trial < 200; trial++) {
      const alphabet = 2 + Math.floor(r() * 5);
      const h = Array.from({ length: 5 + Math.floor(r() * 40) }, () => Math.floor(r() * alphabet));
      const dry = new Dry(
        { dryMultiplier: o.mult, dryBase: o.base, dryAllowedLength: o.allowed },
        ["!"],
        Dry.bytesLookup(undefined, (id) => (breakers.has(id) ? "!" : "t")),
      );
      const logits = new Float32Array(8);
      dry.apply(logits, new Uint32Array(h));
      const want = dryReference(h, 8, o, (t) => breakers.has(t));
      expect(Array.from(logits), h.join(",")).toEqual(
        Array.from(want, (p) => (p === 0 ? 0 : Math.fround(-p))),
      );
    }
  });

  it("runs in the sampler over the last dryPenaltyLastN tokens with the vocabulary's bytes", () => {
    const logits = randomLogits(6, 43, -1, 1, 0.01);
    const enc = new TextEncoder();
    const vocab = { tokenBytes: (id: number) => enc.encode(id === 5 ? "\n" : "w") };
    const o = { dryMultiplier: 1, dryBase: 2, dryAllowedLength: 1, seed: 1, vocab };
    const s = new Sampler(o);
    s.acceptPrompt([0, 1, 2, 0, 1]); // 2 would repeat "0 1 2": length 2
    const want = Array.from(logits, (v, i) => (i === 2 ? Math.fround(v - 2 ** 1) : v));
    expectShifted(workingLogits(s, logits), want, 0);
    const short = new Sampler({ ...o, dryPenaltyLastN: 2 }); // sees only "0 1"
    short.acceptPrompt([0, 1, 2, 0, 1]);
    expectShifted(workingLogits(short, logits), logits, 0);
  });

  it("needs the token texts when on", () => {
    expect(() => new Sampler({ dryMultiplier: 0.8 })).toThrow(/dryMultiplier: .*vocab/);
    expect(() => new Sampler({ dryMultiplier: 0.8, drySequenceBreakers: [] })).not.toThrow();
  });
});

describe("logit bias", () => {
  it("adds to the given logits; -Infinity bans; greedy sees the biased logits", () => {
    const logits = new Float32Array([1, 2, 3, 0.5]);
    const bias = new Map([
      [2, -Infinity],
      [0, 0.75],
    ]);
    const s = new Sampler({ logitBias: bias, seed: 1 });
    expectShifted(workingLogits(s, logits), [1.75, 2, -Infinity, 0.5], 1);
    expect(
      new Set(draws(new Sampler({ logitBias: { 2: -Infinity }, temperature: 5, seed: 2 }), logits, 2000)).has(
        2,
      ),
    ).toBe(false);
    expect(new Sampler({ logitBias: { 0: 5 }, temperature: 0 }).sample(logits)).toBe(0);
  });

  it("leaves the caller's logits as they were (applied in place and undone), also when sampling throws", () => {
    const rand = lcg(11);
    for (let trial = 0; trial < 20; trial++) {
      const logits = randomLogits(500, 100 + trial);
      const before = Float32Array.from(logits);
      const bias = new Map([
        [Math.floor(rand() * 500), 3 * rand() - 1.5],
        [Math.floor(rand() * 500), -Infinity],
        [7, 40],
      ]);
      // the biased row, written out: greedy is its argmax, with logprobs the same distribution
      const want = Float32Array.from(logits);
      for (const [id, b] of bias) want[id] = want[id]! + b;
      const greedy = new Sampler({ logitBias: bias, temperature: 0 });
      expect(greedy.sample(logits)).toBe(argmax(want));
      expect(greedy.sampleWithLogprobs(logits, 3).top.map((t) => t.token)).toEqual(
        new Sampler({ temperature: 0 }).sampleWithLogprobs(want, 3).top.map((t) => t.token),
      );
      const drawn = new Sampler({ logitBias: bias, temperature: 0.9, topK: 20, seed: trial }).sample(logits);
      expect(drawn).toBe(new Sampler({ temperature: 0.9, topK: 20, seed: trial }).sample(want));
      expect(logits).toEqual(before);
    }
    const logits = new Float32Array([1, Number.NaN, 3]);
    expect(() => new Sampler({ logitBias: { 0: 2 }, temperature: 0 }).sample(logits)).toThrow(/NaN/);
    expect(logits[0]).toBe(1);
    const short = new Float32Array([1, 2, 3]);
    expect(() => new Sampler({ logitBias: { 0: 2, 9: 1 } }).sample(short)).toThrow(/outside the vocabulary/);
    expect(Array.from(short)).toEqual([1, 2, 3]);
  });

  it("rejects bad ids and values, and ids outside the vocabulary at sample time", () => {
    expect(() => new Sampler({ logitBias: { 1: Number.NaN } })).toThrow(/logitBias/);
    expect(() => new Sampler({ logitBias: { 1: Infinity } })).toThrow(/logitBias/);
    expect(() => new Sampler({ logitBias: new Map([[-1, 1]]) })).toThrow(/logitBias/);
    expect(() => new Sampler({ logitBias: { 9: 1 } }).sample(new Float32Array(3))).toThrow(
      /outside the vocabulary/,
    );
  });
});

describe("greedy", () => {
  it("is the exact argmax after bias and penalties", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const logits = randomLogits(300, seed, -3, 3, 0.01);
      const s = new Sampler({
        temperature: 0,
        repeatPenalty: 1.4,
        presencePenalty: 0.3,
        logitBias: { 7: 2 },
      });
      const hist = [argmax(logits), 3, 4];
      s.acceptPrompt(hist);
      const work = Float32Array.from(logits, (v, i) =>
        penalized(v, hist.filter((x) => x === i).length, 1.4, 0, 0.3),
      );
      work[7] = work[7]! + 2;
      expect(s.sample(logits)).toBe(argmax(work));
    }
  });
});

/** A fake constraint allowing the tokens in `allowed`; it counts its calls. */
function fakeConstraint(allowed: Set<number>) {
  const calls = { allows: 0, mask: 0, accept: [] as number[], reset: 0 };
  const c: TokenConstraint = {
    allows: (t) => {
      calls.allows++;
      return allowed.has(t);
    },
    mask: (l) => {
      calls.mask++;
      for (let i = 0; i < l.length; i++) if (!allowed.has(i)) l[i] = -Infinity;
    },
    accept: (t) => {
      if (!allowed.has(t)) throw new SamplerError("GRAMMAR_REJECTED", `token ${t}`);
      calls.accept.push(t);
    },
    isComplete: () => false,
    isExhausted: () => calls.accept.length >= 3,
    reset: () => {
      calls.reset++;
      calls.accept.length = 0;
    },
  };
  return { c, calls };
}

describe("constraint", () => {
  const logits = new Float32Array([5, 0, 1, 0.5, -1]);

  it("fast path: an allowed draw is returned without masking", () => {
    const { c, calls } = fakeConstraint(new Set([0, 1, 2, 3, 4]));
    const s = new Sampler({ constraint: c, seed: 1 });
    for (let i = 0; i < 50; i++) s.sample(logits);
    expect(calls.mask).toBe(0);
    expect(calls.allows).toBe(50);
  });

  it("slow path: a rejected draw masks a copy and samples again among the allowed tokens", () => {
    const { c, calls } = fakeConstraint(new Set([2, 4]));
    const copy = logits.slice();
    const s = new Sampler({ constraint: c, topK: 0, topP: 1, minP: 0, temperature: 1, seed: 3 });
    const got = draws(s, logits, 2000);
    expect(new Set(got)).toEqual(new Set([2, 4]));
    expect(calls.mask).toBeGreaterThan(1900); // token 0 holds ~97% of the mass
    expect(logits).toEqual(copy);
    // Among the allowed, the masked chain's distribution: e^1 : e^-1.
    const f2 = got.filter((t) => t === 2).length / got.length;
    const p2 = Math.exp(1) / (Math.exp(1) + Math.exp(-1));
    expect(Math.abs(f2 - p2)).toBeLessThan(0.05);
    expect(new Sampler({ constraint: c, temperature: 0 }).sample(logits)).toBe(2);
  });

  it("accept advances the constraint, acceptPrompt restarts it; isDone is its isExhausted; reset resets it", () => {
    const { c, calls } = fakeConstraint(new Set([1, 2]));
    const s = new Sampler({ constraint: c, seed: 1 });
    s.acceptPrompt([0, 3]);
    expect(calls.accept).toEqual([]);
    expect(calls.reset).toBe(1);
    calls.reset = 0;
    s.accept(1);
    s.accept(2);
    expect(() => s.accept(0)).toThrow(SamplerError);
    expect(s.isDone()).toBe(false);
    s.accept(2);
    expect(s.isDone()).toBe(true);
    s.reset();
    expect(calls.reset).toBe(1);
    expect(s.isDone()).toBe(false);
  });

  it("a mask that leaves nothing throws GRAMMAR_DEAD_END", () => {
    const { c } = fakeConstraint(new Set([4]));
    const s = new Sampler({ constraint: c, logitBias: { 4: -Infinity }, seed: 1 });
    let err: unknown;
    try {
      s.sample(logits);
    } catch (e) {
      err = e;
    }
    expect((err as SamplerError).code).toBe("GRAMMAR_DEAD_END");
  });
});

describe("log-probabilities", () => {
  it("are the temperature-1 log-softmax of the biased, penalized logits; top-n best first", () => {
    const logits = randomLogits(500, 44, -4, 4, 0.001);
    const s = new Sampler({ presencePenalty: 1, logitBias: { 10: 3 }, temperature: 0.5, seed: 6 });
    s.acceptPrompt([1, 2]);
    const work = Array.from(logits, (v, i) => (i === 1 || i === 2 ? Math.fround(v - 1) : v));
    work[10] = Math.fround(work[10]! + 3);
    const max = Math.max(...work);
    const lse = max + Math.log(work.reduce((a, v) => a + Math.exp(v - max), 0));
    const r = s.sampleWithLogprobs(logits, 5);
    const best = [...work.keys()].sort((a, b) => work[b]! - work[a]! || a - b).slice(0, 5);
    expect(r.top.map((t) => t.token)).toEqual(best);
    r.top.forEach((t) => {
      expect(t.logprob).toBeCloseTo(work[t.token]! - lse, 10);
    });
    expect(r.logprob).toBeCloseTo(work[r.token]! - lse, 10);
    expect(s.sampleWithLogprobs(logits, 0).top).toEqual([]);
    expect(new Sampler({ nProbs: 3 }).sampleWithLogprobs(logits).top).toHaveLength(3);
  });

  it("sample and sampleWithLogprobs draw the same tokens from the same seed", () => {
    const logits = randomLogits(1000, 45);
    const a = new Sampler({ seed: 5 });
    const b = new Sampler({ seed: 5 });
    for (let i = 0; i < 50; i++) expect(b.sampleWithLogprobs(logits, 2).token).toBe(a.sample(logits));
  });
});
