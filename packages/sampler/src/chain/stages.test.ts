import { describe, expect, it } from "vitest";
import { Sampler } from "../sampler.js";
import {
  draws,
  expectIntervalsMatchReference,
  expectMatchesReference,
  N_DRAWS,
  withUniform,
} from "../test-checks.js";
import { randomLogits, reference } from "../test-helpers.js";

const OFF = { topK: 0, topP: 1, minP: 0 } as const;

/** Softmax in float64 (an independent one, for the sets the tests expect). */
function probs(logits: ArrayLike<number>): number[] {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  const w = Array.from(logits, (v) => Math.exp(v - max));
  const z = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / z);
}

describe("min-p", () => {
  it("keeps exactly the tokens with p >= minP · p_max (ids just either side of the cut)", () => {
    const minP = 0.2;
    const c = Math.log(minP);
    // Logits relative to the max at 0: just above / below ln(minP), and far on either side.
    const logits = new Float32Array([0, c + 0.001, c - 0.001, -0.5, c + 0.3, -5, c - 0.2, -0.01]);
    const p = probs(logits);
    const pmax = Math.max(...p);
    const want = [...logits.keys()].filter((i) => p[i]! >= minP * pmax);
    expect(want).toEqual([0, 1, 3, 4, 7]);
    const support = expectIntervalsMatchReference(logits, { ...OFF, minP, temperature: 1.5 });
    expect(support).toBe(want.length);
    const got = new Set(draws(new Sampler({ ...OFF, minP, temperature: 3, seed: 4 }), logits, 4000));
    expect([...got].sort((a, b) => a - b)).toEqual(want);
  });

  it("matches the reference after top-k and top-p, and on a 152k vocabulary", () => {
    expectMatchesReference(randomLogits(300, 21, -3, 3, 0.01), {
      temperature: 0.9,
      topK: 100,
      topP: 0.97,
      minP: 0.1,
      seed: 9,
    });
    const big = randomLogits(152_064, 22, -4, 0, 0.0001);
    const support = expectIntervalsMatchReference(big, { ...OFF, minP: 0.5, temperature: 1 });
    expect(support).toBeGreaterThan(10_000);
  });
});

describe("typical", () => {
  it("keeps the tokens nearest the entropy, which can leave out the most probable one", () => {
    // One dominant token and a flat tail: the tail's surprise is near the entropy, the top's is not.
    const logits = new Float32Array(60).fill(0);
    logits[7] = 3;
    const o = { ...OFF, typicalP: 0.5, temperature: 1 };
    const { ids } = reference(logits, o);
    expect(ids).not.toContain(7);
    expect(expectIntervalsMatchReference(logits, o)).toBe(ids.length);
    const got = new Set(draws(new Sampler({ ...o, seed: 3 }), logits, 3000));
    expect(got.has(7)).toBe(false);
  });

  it("matches the reference (with top-k, and alone)", () => {
    const logits = randomLogits(200, 23, -3, 3, 0.01);
    for (const typicalP of [0.3, 0.8, 0.95]) {
      expectIntervalsMatchReference(logits, { ...OFF, typicalP, temperature: 0.8 });
      expectIntervalsMatchReference(logits, { topK: 50, topP: 1, minP: 0, typicalP, temperature: 1.2 });
    }
    expectMatchesReference(logits, { ...OFF, typicalP: 0.7, temperature: 1, seed: 31 });
  });
});

describe("top-n-sigma", () => {
  it("keeps exactly the logits >= max − n·σ", () => {
    const logits = randomLogits(500, 24, -6, 6, 0.01);
    for (const n of [0.5, 1, 2.5]) {
      const v = Array.from(logits);
      const mean = v.reduce((a, b) => a + b, 0) / v.length;
      const sd = Math.sqrt(v.reduce((a, x) => a + (x - mean) ** 2, 0) / v.length);
      const max = Math.max(...v);
      const want = v.filter((x) => x >= max - n * sd).length;
      expect(expectIntervalsMatchReference(logits, { ...OFF, topNSigma: n, temperature: 1 })).toBe(want);
    }
  });

  it("uses the population σ (n = 1.3 over 0..4 keeps 3 and 4; the sample σ would keep 2 too)", () => {
    expect(expectIntervalsMatchReference(new Float32Array([0, 1, 2, 3, 4]), { ...OFF, topNSigma: 1.3 })).toBe(
      2,
    );
  });

  it("applies to what top-k kept; <= 0 is off", () => {
    const logits = randomLogits(400, 25, -3, 3, 0.01);
    const n = expectIntervalsMatchReference(logits, {
      topK: 60,
      topP: 1,
      minP: 0,
      topNSigma: 1,
      temperature: 1,
    });
    expect(n).toBeLessThan(60);
    expect(expectIntervalsMatchReference(logits, { ...OFF, topNSigma: 0, temperature: 1 })).toBe(400);
  });
});

describe("dynamic temperature (dynatempRange)", () => {
  it("draws at the temperature the kept candidates' entropy gives, within t ± range", () => {
    const logits = randomLogits(300, 31, -4, 4, 0.01);
    for (const [range, exponent, topK] of [
      [0.5, 1, 0],
      [0.7, 2, 40],
      [1.5, 0.5, 12],
    ] as const)
      expect(
        expectIntervalsMatchReference(logits, {
          ...OFF,
          topK,
          temperature: 0.8,
          dynatempRange: range,
          dynatempExponent: exponent,
        }),
      ).toBe(topK || 300);
  });

  it("moves the temperature: a flat row draws hotter than a peaked one, and range 0 is plain temperature", () => {
    // The same ids' order either way; the first id's probability tells the temperature used.
    const flat = new Float32Array([1, 0.9, 0.8, 0.7]);
    const peaked = new Float32Array([5, 0.9, 0.8, 0.7]);
    const first = (logits: Float32Array, o: { dynatempRange?: number }) =>
      reference(logits, { temperature: 1, topK: 0, topP: 1, minP: 0, ...o }).probs[0]!;
    const plainFlat = first(flat, {});
    expect(first(flat, { dynatempRange: 0.9 })).toBeLessThan(plainFlat); // near-max entropy: hotter
    expect(first(peaked, { dynatempRange: 0.9 })).toBeGreaterThan(first(peaked, {})); // low entropy: colder
    expect(expectIntervalsMatchReference(flat, { ...OFF, temperature: 1, dynatempRange: 0.9 })).toBe(4);
    expect(expectIntervalsMatchReference(peaked, { ...OFF, temperature: 1, dynatempRange: 0.9 })).toBe(4);
    expect(() => new Sampler({ dynatempRange: -1 })).toThrow(/dynatempRange/);
    expect(() => new Sampler({ dynatempExponent: Number.NaN })).toThrow(/dynatempExponent/);
  });
});

describe("XTC", () => {
  // Probabilities 0.3, 0.25, 0.2, 0.15 and a tail: with threshold 0.18, ids 0..2 are above it.
  const tail = 50;
  const logits = new Float32Array(4 + tail);
  const head = [0.3, 0.25, 0.2, 0.15];
  head.forEach((p, i) => {
    logits[i] = Math.log(p);
  });
  for (let i = 0; i < tail; i++) logits[4 + i] = Math.log(0.1 / tail);

  it("always firing: removes every token above the threshold but the least probable of them", () => {
    const o = { ...OFF, xtcProbability: 1, xtcThreshold: 0.18, temperature: 1 };
    const { ids } = reference(logits, { ...o, xtcFiresAt: 0.18 });
    expect(ids.slice(0, 2)).toEqual([2, 3]);
    expect(expectIntervalsMatchReference(logits, o)).toBe(2 + tail);
    const got = new Set(draws(new Sampler({ ...o, seed: 1 }), logits, 3000));
    expect(got.has(0) || got.has(1)).toBe(false);
  });

  it("fires with the given probability (a mixture of both distributions)", () => {
    const fire = reference(logits, { ...OFF, xtcFiresAt: 0.18, temperature: 1 });
    const keep = reference(logits, { ...OFF, temperature: 1 });
    const pFire = 0.3;
    const want = new Float64Array(logits.length);
    fire.ids.forEach((id, j) => {
      want[id]! += pFire * fire.probs[j]!;
    });
    keep.ids.forEach((id, j) => {
      want[id]! += (1 - pFire) * keep.probs[j]!;
    });
    const s = new Sampler({ ...OFF, xtcProbability: pFire, xtcThreshold: 0.18, temperature: 1, seed: 5 });
    const counts = new Float64Array(logits.length);
    for (let t = 0; t < N_DRAWS; t++) counts[s.sample(logits)]!++;
    for (let i = 0; i < logits.length; i++) {
      const pi = want[i]!;
      const tol = 4.5 * Math.sqrt((pi * (1 - pi)) / N_DRAWS) + 1 / N_DRAWS;
      expect(Math.abs(counts[i]! / N_DRAWS - pi), `id ${i}`).toBeLessThanOrEqual(tol);
    }
  });

  it("does nothing above threshold 0.5 or with fewer than two tokens above the threshold", () => {
    const a = draws(new Sampler({ ...OFF, xtcProbability: 1, xtcThreshold: 0.6, seed: 2 }), logits, 200);
    const b = draws(new Sampler({ ...OFF, xtcProbability: 1, xtcThreshold: 0.28, seed: 2 }), logits, 200);
    expect(new Set(a).has(0)).toBe(true);
    expect(new Set(b).has(0)).toBe(true);
  });
});

describe("top-k + typical + top-p + min-p + XTC + top-n-sigma together", () => {
  it("match the reference, exactly and statistically", () => {
    const logits = randomLogits(1000, 26, -4, 4, 0.01);
    const o = {
      topK: 200,
      typicalP: 0.95,
      topP: 0.9,
      minP: 0.02,
      xtcProbability: 1,
      xtcThreshold: 0.05,
      topNSigma: 3,
      temperature: 0.7,
    };
    expect(expectIntervalsMatchReference(logits, o)).toBeGreaterThan(3);
    expectMatchesReference(logits, { ...o, seed: 77 });
  });
});

describe("mirostat", () => {
  const logits = randomLogits(2000, 27, -8, 4, 0.001);

  it("v2 keeps the tokens with surprise <= mu, draws by the renormalized softmax, and moves mu by eta·(s − tau)", () => {
    const tau = 3;
    const eta = 0.2;
    const temperature = 0.9;
    const s = new Sampler({ mirostat: 2, mirostatTau: tau, mirostatEta: eta, temperature, seed: 8 });
    const scaled = Array.from(logits, (v) => v / temperature);
    const p = probs(scaled);
    let mu = 2 * tau;
    expect(s.mirostatMu).toBe(mu);
    for (let step = 0; step < 200; step++) {
      const keep = [...p.keys()].filter((i) => -Math.log2(p[i]!) <= mu);
      const kept = keep.length > 0 ? keep : [p.indexOf(Math.max(...p))];
      const t = s.sample(logits);
      expect(kept).toContain(t);
      const z = kept.reduce((a, i) => a + p[i]!, 0);
      s.accept(t);
      mu -= eta * (-Math.log2(p[t]! / z) - tau);
      expect(s.mirostatMu).toBeCloseTo(mu, 7);
    }
  });

  it("v2 draws match the renormalized distribution at a fixed mu (eta 0)", () => {
    const tau = 4;
    const s = new Sampler({ mirostat: 2, mirostatTau: tau, mirostatEta: 0, temperature: 1, seed: 10 });
    const p = probs(logits);
    const kept = [...p.keys()].filter((i) => -Math.log2(p[i]!) <= 2 * tau);
    const z = kept.reduce((a, i) => a + p[i]!, 0);
    const counts = new Map<number, number>();
    for (let t = 0; t < N_DRAWS; t++) {
      const id = s.sample(logits);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    for (const id of counts.keys()) expect(kept).toContain(id);
    for (const id of kept) {
      const pi = p[id]! / z;
      const tol = 4.5 * Math.sqrt((pi * (1 - pi)) / N_DRAWS) + 1 / N_DRAWS;
      expect(Math.abs((counts.get(id) ?? 0) / N_DRAWS - pi)).toBeLessThanOrEqual(tol);
    }
  });

  it("v1 draws from the top k that its Zipf estimate gives, and updates mu", () => {
    const tau = 5;
    const eta = 0.1;
    const n = logits.length;
    const s = new Sampler({ mirostat: 1, mirostatTau: tau, mirostatEta: eta, temperature: 1, seed: 12 });
    const order = [...logits.keys()].sort((a, b) => logits[b]! - logits[a]! || a - b);
    let mu = 2 * tau;
    for (let step = 0; step < 100; step++) {
      let num = 0;
      let den = 0;
      for (let i = 0; i < 99; i++) {
        const ti = Math.log((i + 2) / (i + 1));
        num += ti * (logits[order[i]!]! - logits[order[i + 1]!]!);
        den += ti * ti;
      }
      const sHat = num / den;
      const eps = sHat - 1;
      const k = Math.min(n, Math.max(1, Math.floor(((eps * 2 ** mu) / (1 - n ** -eps)) ** (1 / sHat))));
      const top = order.slice(0, k);
      const t = s.sample(logits);
      expect(top).toContain(t);
      const w = top.map((i) => Math.exp(logits[i]! - logits[order[0]!]!));
      const z = w.reduce((a, b) => a + b, 0);
      s.accept(t);
      mu -= eta * (-Math.log2(w[top.indexOf(t)]! / z) - tau);
      expect(s.mirostatMu).toBeCloseTo(mu, 7);
    }
  });

  it("accepting a token other than the one drawn leaves mu alone; reset restores 2·tau", () => {
    const s = new Sampler({ mirostat: 2, mirostatTau: 2, seed: 1 });
    const t = s.sample(logits);
    s.accept(t === 0 ? 1 : 0);
    expect(s.mirostatMu).toBe(4);
    s.sample(logits);
    s.accept(s.sample(logits));
    expect(s.mirostatMu).not.toBe(4);
    s.reset();
    expect(s.mirostatMu).toBe(4);
  });
});

describe("seeding with the whole chain", () => {
  it("a seed reproduces a run with penalties, DRY, typical, XTC and mirostat", () => {
    const logits = randomLogits(5000, 28, -4, 4, 0.01);
    const run = (o: ConstructorParameters<typeof Sampler>[0]): number[] => {
      const s = new Sampler(o);
      s.acceptPrompt([1, 2, 3, 1, 2]);
      return Array.from({ length: 100 }, () => {
        const t = s.sample(logits);
        s.accept(t);
        return t;
      });
    };
    const o = {
      seed: 99,
      repeatPenalty: 1.3,
      frequencyPenalty: 0.2,
      dryMultiplier: 0.8,
      tokenText: (id: number) => String(id % 97),
      typicalP: 0.9,
      xtcProbability: 0.5,
    };
    expect(run(o)).toEqual(run(o));
    expect(run({ ...o, seed: 100 })).not.toEqual(run(o));
    expect(run({ mirostat: 2, seed: 4 })).toEqual(run({ mirostat: 2, seed: 4 }));
  });

  it("withUniform probes see XTC's draw too (two uniforms per call when XTC is on)", () => {
    let calls = 0;
    const s = withUniform({ ...OFF, xtcProbability: 0.5, seed: 1 }, () => {
      calls++;
      return 0.25;
    });
    s.sample(new Float32Array([1, 2, 3]));
    expect(calls).toBe(2);
  });
});
