import { describe, expect, it } from "vitest";
import type { TokenConstraint } from "./constraint.js";
import type { SamplerOptions } from "./options.js";
import { Sampler } from "./sampler.js";
import { lcg, randomLogits } from "./test-helpers.js";

/** A backend's TOP_K of a row: NaN first, then larger logit first, lower id first on ties. */
function topK(row: Float32Array, k: number): Int32Array {
  const ids = Array.from(row.keys());
  const rank = (v: number) => (Number.isNaN(v) ? Infinity : v);
  ids.sort((a, b) => {
    const na = Number.isNaN(row[a]!);
    const nb = Number.isNaN(row[b]!);
    if (na !== nb) return na ? -1 : 1;
    const va = rank(row[a]!);
    const vb = rank(row[b]!);
    return va > vb ? -1 : va < vb ? 1 : a - b;
  });
  return Int32Array.from(ids.slice(0, k));
}

/** A row with ties (quarter steps), some -Infinity, sometimes mostly -Infinity or all equal. */
function row(n: number, seed: number): Float32Array {
  const r = lcg(seed * 7919 + 1);
  const kind = r();
  const x = randomLogits(n, seed, -4, 4, kind < 0.3 ? 1 : 0.25);
  if (kind < 0.1) x.fill(1.5);
  const dead = kind > 0.9 ? 0.95 : 0.05;
  for (let i = 0; i < n; i++) if (r() < dead) x[i] = -Infinity;
  return x;
}

/** A logit bias of a few ids: up, down, banned; inside and outside the best ids. */
function bias(n: number, seed: number): Record<number, number> {
  const r = lcg(seed * 104729 + 3);
  const out: Record<number, number> = {};
  const count = Math.floor(r() * 4);
  for (let j = 0; j < count; j++) {
    const id = Math.floor(r() * n);
    const kind = r();
    out[id] = kind < 0.3 ? -Infinity : kind < 0.6 ? -3 * r() : 10 * r();
  }
  return out;
}

/** Option sets the candidate path serves, and some it must leave to the whole row. */
const OPTIONS: SamplerOptions[] = [
  { temperature: 0 },
  { temperature: -1, topK: 5, topP: 0.5 },
  { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 },
  { temperature: 1, topK: 1 },
  { temperature: 1.3, topK: 8 },
  { temperature: 0.7, topK: 20, typicalP: 0.8 },
  { temperature: 0.9, topK: 30, xtcProbability: 0.5, xtcThreshold: 0.05 },
  { temperature: 1, topK: 16, topNSigma: 1.5, minP: 0.1 },
  { temperature: 0.8, topK: 70 }, // more than the ids: whole row
  { temperature: 0.8, topP: 0.9 }, // top-k off: whole row
  { temperature: 0.8, topK: 10, mirostat: 2 }, // mirostat: whole row
  { temperature: 0.8, topK: 10, repeatPenalty: 1.3, presencePenalty: 0.5 }, // penalties: whole row
];

/** Tokens of `steps` samples (each accepted), with the row's K best ids or without. */
function run(
  options: SamplerOptions,
  rows: Float32Array[],
  k: number | undefined,
): { tokens: number[]; s: Sampler } {
  const s = new Sampler({ ...options, seed: 1234 });
  s.acceptPrompt([1, 2, 3]);
  const tokens: number[] = [];
  for (const x of rows) {
    const before = Array.from(x);
    const t = k === undefined ? s.sample(x) : s.sample(x, topK(x, k));
    expect(Array.from(x)).toEqual(before); // the caller's logits are left as they were
    tokens.push(t);
    s.accept(t);
  }
  return { tokens, s };
}

describe("Sampler.sample with candidate ids", () => {
  it.each(OPTIONS.map((o, i) => [i, o] as const))(
    "gives the whole row's tokens and draws (options %i)",
    (_, o) => {
      let onIds = 0;
      let fullRow = 0;
      for (let trial = 0; trial < 60; trial++) {
        const n = [50, 300, 3000][trial % 3]!;
        const k = [1, 8, 64][Math.floor(trial / 3) % 3]!;
        const rows = Array.from({ length: 6 }, (_, j) => row(n, trial * 10 + j));
        const opts = { ...o, logitBias: bias(n, trial) };
        const full = run(opts, rows, undefined);
        const ids = run(opts, rows, Math.min(k, n));
        expect(ids.tokens, `trial ${trial} n ${n} k ${k}`).toEqual(full.tokens);
        // the same draws: the next one of both streams agrees too
        expect(ids.s.sample(rows[0]!)).toBe(full.s.sample(rows[0]!));
        onIds += ids.s.candidateStats.onIds;
        fullRow += ids.s.candidateStats.fullRow;
      }
      const wholeRow =
        o.mirostat || o.repeatPenalty || (o.temperature! > 0 && !(o.topK! > 0)) || o.topK! > 64;
      if (wholeRow) expect(onIds).toBe(0);
      else expect(onIds).toBeGreaterThan(30); // the ids served many samples (K ≥ top-k, few ties)
      expect(fullRow).toBeGreaterThan(0); // ties, bans and -Infinity rows left some to the whole row
    },
  );

  it("serves every sample of untied rows from 64 ids: greedy with an end-of-sequence ban, llama.cpp's defaults", () => {
    const r = lcg(9);
    const rows = Array.from({ length: 30 }, () => Float32Array.from({ length: 5000 }, () => 8 * r() - 4));
    for (const o of [
      { temperature: 0, logitBias: { 7: -100 } },
      { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, logitBias: { 7: -100 } },
    ]) {
      const full = run(o, rows, undefined);
      const ids = run(o, rows, 64);
      expect(ids.tokens).toEqual(full.tokens);
      expect(ids.s.candidateStats).toEqual({ onIds: 30, fullRow: 0 });
    }
  });

  it("greedy from the ids: a bias that ties two candidates gives the lower id, as the whole row does", () => {
    const row = new Float32Array(12).fill(-10);
    row[5] = 2;
    row[3] = 1.5;
    row[9] = 1;
    const ids = Int32Array.from([5, 3, 9]);
    const values = Float32Array.from([2, 1.5, 1]);
    const opts = { temperature: 0, logitBias: { 5: -0.5 } };
    expect(new Sampler(opts).sampleCandidates(ids, values, 12)).toBe(3);
    expect(new Sampler(opts).sample(row)).toBe(3);
    // lowered below the bound (the last candidate's logit): the next id
    const low = { temperature: 0, logitBias: { 5: -1.5 } };
    expect(new Sampler(low).sampleCandidates(ids, values, 12)).toBe(3);
    expect(new Sampler(low).sample(row)).toBe(3);
  });

  it("uses the ids only when they prove the answer: a bias that lifts an outside id, ties at the bound", () => {
    const x = new Float32Array([5, 4, 3, 3, 3, 1, 0]);
    const greedy = new Sampler({ temperature: 0, logitBias: { 6: 10 } });
    expect(greedy.sample(x, Int32Array.from([0, 1]))).toBe(6); // the lifted id joins the set
    expect(greedy.candidateStats).toEqual({ onIds: 1, fullRow: 0 });
    // top-3 needs 3 ids strictly above the bound; ids 2, 3, 4 tie at 3: not provable from [0, 1, 2]
    const top3 = new Sampler({ temperature: 1, topK: 3, seed: 5 });
    top3.sample(x, Int32Array.from([0, 1, 2]));
    expect(top3.candidateStats).toEqual({ onIds: 0, fullRow: 1 });
    top3.sample(x, Int32Array.from([0, 1, 2, 3, 4, 5]));
    expect(top3.candidateStats).toEqual({ onIds: 1, fullRow: 1 });
    // every candidate banned: the whole row decides
    const banned = new Sampler({ temperature: 0, logitBias: { 0: -Infinity, 1: -Infinity } });
    expect(banned.sample(x, Int32Array.from([0, 1]))).toBe(2);
    expect(banned.candidateStats).toEqual({ onIds: 0, fullRow: 1 });
  });

  it("runs the constraint's rejection path on the whole row with the same draws", () => {
    // allows only odd ids: the first pick is often rejected, then the row is masked and drawn again
    const odd: TokenConstraint = {
      allows: (t) => t % 2 === 1,
      mask: (l) => {
        for (let i = 0; i < l.length; i += 2) l[i] = -Infinity;
      },
      accept: () => {},
      isComplete: () => true,
      isExhausted: () => false,
      reset: () => {},
    };
    for (const o of [{ temperature: 0 }, { temperature: 0.8, topK: 10, minP: 0.05 }]) {
      const rows = Array.from({ length: 20 }, (_, j) => randomLogits(500, j + 1));
      const full = run({ ...o, constraint: odd }, rows, undefined);
      const ids = run({ ...o, constraint: odd }, rows, 32);
      expect(ids.tokens).toEqual(full.tokens);
      expect(ids.tokens.every((t) => t % 2 === 1)).toBe(true);
      expect(ids.s.candidateStats.onIds).toBe(20);
    }
  });

  it("refuses ids outside the vocabulary or out of order, and reports a NaN row as the whole row does", () => {
    const x = randomLogits(100, 3);
    const s = new Sampler({ temperature: 0 });
    const bad = expect.objectContaining({ code: "INVALID_ARGUMENT", argument: "candidates" });
    expect(() => s.sample(x, Int32Array.from([100]))).toThrow(bad);
    expect(() => s.sample(x, Int32Array.from([-1]))).toThrow(bad);
    expect(() => s.sample(x, new Int32Array(0))).toThrow(bad);
    expect(() => s.sample(x, Array.from(topK(x, 5)).reverse() as unknown as Int32Array)).toThrow(bad);
    expect(() => s.sample(x, Int32Array.from(topK(x, 5)).reverse())).toThrow(bad);
    const dup = topK(x, 4);
    dup[1] = dup[0]!;
    expect(() => s.sample(x, dup)).toThrow(bad);
    x[77] = Number.NaN;
    expect(() => s.sample(x, topK(x, 4))).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", argument: "logits" }),
    );
  });
});

/**
 * Tokens of `steps` samples (each accepted) from the ids and their logits alone, the row sampled
 * only when they cannot prove the answer (as a server that left the rows on the device does).
 */
function runOnValues(
  options: SamplerOptions,
  rows: Float32Array[],
  k: number,
): { tokens: number[]; s: Sampler; fromIds: number } {
  const s = new Sampler({ ...options, seed: 1234 });
  s.acceptPrompt([1, 2, 3]);
  const tokens: number[] = [];
  let fromIds = 0;
  for (const x of rows) {
    const ids = topK(x, k);
    const values = Float32Array.from(ids, (id) => x[id]!);
    let t = s.sampleCandidates(ids, values, x.length);
    if (t >= 0) fromIds++;
    else t = s.sample(x, ids);
    tokens.push(t);
    s.accept(t);
  }
  return { tokens, s, fromIds };
}

describe("Sampler.sampleCandidates (the ids and their logits, no row)", () => {
  it.each(OPTIONS.map((o, i) => [i, o] as const))(
    "gives the whole row's tokens and draws, or -1 before any draw (options %i)",
    (_, o) => {
      let fromIds = 0;
      for (let trial = 0; trial < 60; trial++) {
        const n = [50, 300, 3000][trial % 3]!;
        const k = [1, 8, 64][Math.floor(trial / 3) % 3]!;
        const rows = Array.from({ length: 6 }, (_, j) => row(n, trial * 10 + j));
        const opts = { ...o, logitBias: bias(n, trial) };
        const full = run(opts, rows, undefined);
        const vals = runOnValues(opts, rows, Math.min(k, n));
        expect(vals.tokens, `trial ${trial} n ${n} k ${k}`).toEqual(full.tokens);
        expect(vals.s.sample(rows[0]!)).toBe(full.s.sample(rows[0]!));
        fromIds += vals.fromIds;
      }
      const wholeRow =
        o.mirostat || o.repeatPenalty || (o.temperature! > 0 && !(o.topK! > 0)) || o.topK! > 64;
      if (wholeRow) expect(fromIds).toBe(0);
      else expect(fromIds).toBeGreaterThan(30);
    },
  );

  it("serves llama.cpp's defaults and greedy with an end-of-sequence ban from 64 ids, and knows its limits", () => {
    const r = lcg(9);
    const rows = Array.from({ length: 30 }, () => Float32Array.from({ length: 5000 }, () => 8 * r() - 4));
    for (const o of [
      { temperature: 0, logitBias: { 7: -100 } },
      { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, logitBias: { 7: -100 } },
    ]) {
      const full = run(o, rows, undefined);
      const vals = runOnValues(o, rows, 64);
      expect(vals.tokens).toEqual(full.tokens);
      expect(vals.fromIds).toBe(30);
    }
    const x = new Float32Array([5, 4, 3, 3, 3, 1, 0]);
    const of = (ids: number[]) => [Int32Array.from(ids), Float32Array.from(ids, (id) => x[id]!)] as const;
    // a raised id outside the ids, a constraint, ties at the bound: the row decides
    expect(new Sampler({ temperature: 0, logitBias: { 6: 10 } }).sampleCandidates(...of([0, 1]), 7)).toBe(-1);
    expect(new Sampler({ temperature: 0, logitBias: { 1: 10 } }).sampleCandidates(...of([0, 1]), 7)).toBe(1);
    const constraint: TokenConstraint = {
      allows: () => true,
      mask: () => {},
      accept: () => {},
      isComplete: () => true,
      isExhausted: () => false,
      reset: () => {},
    };
    expect(new Sampler({ temperature: 0, constraint }).sampleCandidates(...of([0, 1]), 7)).toBe(-1);
    expect(new Sampler({ temperature: 1, topK: 3 }).sampleCandidates(...of([0, 1, 2]), 7)).toBe(-1);
    expect(new Sampler({ temperature: 0 }).sampleCandidates(...of([0, 1]), 7)).toBe(0);
    // checked like the row's ids: vocabulary, order, the values' length; NaN left to the row
    const s = new Sampler({ temperature: 0 });
    const bad = expect.objectContaining({ code: "INVALID_ARGUMENT" });
    expect(() => s.sampleCandidates(...of([0, 1]), 1)).toThrow(bad);
    expect(() => s.sampleCandidates(...of([1, 0]), 7)).toThrow(bad);
    expect(() => s.sampleCandidates(Int32Array.from([0, 1]), new Float32Array(1), 7)).toThrow(bad);
    expect(s.sampleCandidates(Int32Array.from([0, 1]), Float32Array.from([Number.NaN, 4]), 7)).toBe(-1);
  });

  it("canSampleCandidates says which samplers it can serve before the values are known", () => {
    const can = (o: SamplerOptions, history: number[] = []) => {
      const s = new Sampler(o);
      s.acceptPrompt(history);
      return s.canSampleCandidates(64, 1000);
    };
    expect(can({ temperature: 0 })).toBe(true);
    expect(can({ temperature: 0, logitBias: { 7: -100 } })).toBe(true);
    expect(can({ temperature: 0, logitBias: { 7: 1 } })).toBe(false);
    expect(can({ temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 })).toBe(true);
    expect(can({ temperature: 0.8, topK: 65 })).toBe(false);
    expect(can({ temperature: 0.8, topP: 0.9 })).toBe(false);
    expect(can({ temperature: 0.8, topK: 10, mirostat: 2 })).toBe(false);
    expect(can({ temperature: 0, repeatPenalty: 1.3 })).toBe(true); // no history yet
    expect(can({ temperature: 0, repeatPenalty: 1.3 }, [1, 2])).toBe(false);
    expect(can({ temperature: 0, dryMultiplier: 0.8, drySequenceBreakers: [] }, [1, 2, 3])).toBe(false);
    const constraint: TokenConstraint = {
      allows: () => true,
      mask: () => {},
      accept: () => {},
      isComplete: () => true,
      isExhausted: () => false,
      reset: () => {},
    };
    expect(can({ temperature: 0, constraint })).toBe(false);
  });
});
