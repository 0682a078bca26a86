import { describe, expect, it } from "vitest";
import { SamplerError } from "./errors.js";
import {
  DEFAULT_TEMPERATURE,
  DEFAULT_TOP_K,
  DEFAULT_TOP_P,
  LLAMA_CPP_SAMPLING,
  type SamplerOptions,
} from "./options.js";
import { Sampler } from "./sampler.js";
import { argmax } from "./select.js";
import { draws, expectIntervalsMatchReference, expectMatchesReference } from "./test-checks.js";
import { randomLogits } from "./test-helpers.js";

describe("Sampler options", () => {
  it("fills in the defaults and picks a seed", () => {
    const s = new Sampler();
    expect(s.options).toMatchObject({
      temperature: DEFAULT_TEMPERATURE,
      topK: DEFAULT_TOP_K,
      topP: DEFAULT_TOP_P,
    });
    // Every stage's default is a no-op: the softmax of the logits as they are.
    expect(s.options).toMatchObject({ temperature: 1, topK: 0, topP: 1, minP: 0, typicalP: 1, mirostat: 0 });
    expect(s.options).toMatchObject({
      repeatPenalty: 1,
      presencePenalty: 0,
      frequencyPenalty: 0,
      dryMultiplier: 0,
    });
    expect(s.options).toMatchObject({ xtcProbability: 0, topNSigma: -1 });
    // llama.cpp's command-line defaults, for the CLI.
    expect(LLAMA_CPP_SAMPLING).toEqual({ temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 });
    expect(Number.isInteger(s.options.seed) && s.options.seed >= 0 && s.options.seed <= 0xffffffff).toBe(
      true,
    );
    expect(Object.isFrozen(s.options)).toBe(true);
  });

  it.each([
    [{ temperature: Number.NaN }, "temperature", /temperature: .*NaN/],
    [{ temperature: Infinity }, "temperature", /temperature: .*Infinity/],
    [{ topK: 1.5 }, "topK", /topK: .*1\.5/],
    [{ topK: Number.NaN }, "topK", /topK: .*NaN/],
    [{ topP: 0 }, "topP", /topP: .*got 0/],
    [{ topP: 1.01 }, "topP", /topP: .*1\.01/],
    [{ topP: -0.5 }, "topP", /topP: .*-0\.5/],
    [{ topP: Number.NaN }, "topP", /topP: .*NaN/],
    [{ seed: -1 }, "seed", /seed: .*-1/],
    [{ seed: 2 ** 32 }, "seed", /seed: .*4294967296/],
    [{ seed: 1.5 }, "seed", /seed: .*1\.5/],
    [{ temperature: "1" as unknown as number }, "temperature", /temperature/],
  ])("rejects %o with INVALID_ARGUMENT naming %s", (options, argument, message) => {
    let err: unknown;
    try {
      new Sampler(options);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SamplerError);
    expect((err as SamplerError).code).toBe("INVALID_ARGUMENT");
    expect((err as SamplerError).argument).toBe(argument);
    expect((err as SamplerError).message).toMatch(message);
  });

  it("accepts the edges: topP 1, topK 0 or negative, seed 0 and 2^32 - 1, negative temperature", () => {
    expect(() => new Sampler({ topP: 1, topK: 0, seed: 0 })).not.toThrow();
    expect(() => new Sampler({ topK: -1, seed: 0xffffffff, temperature: -1 })).not.toThrow();
  });

  it("rejects empty, NaN and all -Infinity logits, and a bad reset seed", () => {
    const configs = [
      { temperature: 0 },
      { topK: 3, topP: 0.9 },
      { topK: 0, topP: 0.9 },
      { topK: 0, topP: 1 },
      { topK: 3, topP: 1 },
    ];
    for (const o of configs) {
      const s = new Sampler({ ...o, seed: 1 });
      const codeOf = (f: () => unknown) => {
        try {
          f();
        } catch (e) {
          return `${(e as SamplerError).code}:${(e as SamplerError).argument}`;
        }
        return "no error";
      };
      expect(codeOf(() => s.sample(new Float32Array(0)))).toBe("INVALID_ARGUMENT:logits");
      expect(codeOf(() => s.sample(new Float32Array([1, 2, Number.NaN, 0, 1])))).toBe(
        "INVALID_ARGUMENT:logits",
      );
      expect(codeOf(() => s.sample(new Float32Array([-Infinity, -Infinity])))).toBe(
        "INVALID_ARGUMENT:logits",
      );
      expect(codeOf(() => s.reset(-3))).toBe("INVALID_ARGUMENT:seed");
    }
  });
});

describe("greedy", () => {
  it("temperature <= 0 is the argmax, lowest id on ties", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const logits = randomLogits(1000, seed);
      for (const temperature of [0, -1]) {
        expect(new Sampler({ temperature, seed }).sample(logits)).toBe(argmax(logits));
      }
    }
    const tied = new Float32Array([0, 2, -1, 2, 2]);
    expect(new Sampler({ temperature: 0 }).sample(tied)).toBe(1);
  });

  it("topK 1 is the argmax whatever the temperature", () => {
    const logits = new Float32Array([0.5, 3, -1, 3, 2.9, 3]);
    for (const temperature of [0.01, 0.8, 1, 5, 1e6]) {
      const s = new Sampler({ temperature, topK: 1, topP: 1, seed: 99 });
      expect(new Set(draws(s, logits, 500))).toEqual(new Set([1]));
    }
  });

  it("a +Infinity logit is always drawn", () => {
    const logits = new Float32Array([1, Infinity, 50, 3]);
    for (const topK of [0, 2]) {
      const s = new Sampler({ temperature: 1, topK, topP: 0.5, seed: 3 });
      expect(new Set(draws(s, logits, 200))).toEqual(new Set([1]));
    }
  });
});

describe("distribution", () => {
  it("top-k + top-p + temperature match the reference", () => {
    const logits = randomLogits(64, 11, -3, 3, 0.125);
    const o = { temperature: 0.7, topK: 10, topP: 0.8, seed: 1234 };
    const support = expectMatchesReference(logits, o);
    expect(support).toBeGreaterThan(1);
    expect(support).toBeLessThan(10); // the nucleus really cuts inside top-k
  });

  it("top-k alone matches the reference", () => {
    const logits = randomLogits(200, 5, -2, 2, 0.25);
    expect(expectMatchesReference(logits, { temperature: 1.3, topK: 12, topP: 1, seed: 77 })).toBe(12);
  });

  it("top-p alone matches the reference", () => {
    const logits = randomLogits(300, 8, -4, 2, 0.05);
    const support = expectMatchesReference(logits, { temperature: 0.9, topK: 0, topP: 0.9, seed: 5 });
    expect(support).toBeGreaterThan(1);
    expect(support).toBeLessThan(300);
  });

  it("draws walk the exact reference intervals (top-k, top-p, both, neither; 152k vocabulary)", () => {
    const small = randomLogits(64, 11, -3, 3, 0.125);
    // A peaked large vocabulary: the nucleus fits in the first selection.
    const peaked = randomLogits(152_064, 31, -30, 0, 0.001);
    for (let i = 0; i < 300; i++) peaked[(i * 7919) % peaked.length] = 8 + i * 0.02;
    // A flat large vocabulary: the nucleus holds thousands of ids (the index-sort path).
    const flat = randomLogits(152_064, 32, -3, 3, 0.001);
    flat[5] = -Infinity;
    // One id just short of topP and 199 equal ones: the nucleus ends on an id of probability
    // ~(1 − topP) / count, right at the bound the index-sort path prefilters with.
    const edge = new Float32Array(200);
    edge[0] = Math.log((0.9 - 1e-5) / ((0.1 + 1e-5) / 199));
    const cases: [Float32Array, SamplerOptions, number, number][] = [
      [small, { temperature: 0.7, topK: 10, topP: 0.8 }, 2, 9],
      [small, { temperature: 2, topK: 0, topP: 1, minP: 0 }, 64, 64],
      [small, { temperature: 0.5, topK: 0, topP: 0.5 }, 2, 63],
      [peaked, { temperature: 0.8, topK: 40, topP: 0.95 }, 2, 40],
      [peaked, { temperature: 1, topK: 0, topP: 0.9 }, 2, 256],
      [flat, { temperature: 1.2, topK: 0, topP: 0.95, minP: 0 }, 1000, 152_062],
      // min-p alone and with top-p: the prefix bound comes from min-p (ln 0.05 ≈ −3: about half stay).
      [flat, { temperature: 1.2, topK: 0, topP: 1, minP: 0.05 }, 1000, 152_062],
      [flat, { temperature: 1.2, topK: 0, topP: 0.9, minP: 0.3 }, 1000, 152_062],
      [peaked, { temperature: 0.8, topK: 0, topP: 1, minP: 0.1 }, 2, 300],
      [flat, { temperature: 0.8, topK: 5000, topP: 0.9 }, 1000, 5000],
      [edge, { temperature: 1, topK: 0, topP: 0.9, minP: 0 }, 2, 2],
    ];
    for (const [logits, o, min, max] of cases) {
      const support = expectIntervalsMatchReference(logits, o);
      expect(support, JSON.stringify(o)).toBeGreaterThanOrEqual(min);
      expect(support, JSON.stringify(o)).toBeLessThanOrEqual(max);
    }
  }, 60_000);

  it("no cut (topK 0, topP 1): the tempered softmax over every finite logit", () => {
    const logits = randomLogits(40, 3, -2, 2, 0.25);
    logits[4] = -Infinity;
    logits[17] = -Infinity;
    expect(expectMatchesReference(logits, { temperature: 0.6, topK: 0, topP: 1, minP: 0, seed: 8 })).toBe(38);
  });

  it("topK at or past the vocabulary size is the same as topK off", () => {
    const logits = randomLogits(30, 4);
    for (const topP of [1, 0.6]) {
      const a = draws(new Sampler({ topK: 30, topP, seed: 10 }), logits, 300);
      const b = draws(new Sampler({ topK: 0, topP, seed: 10 }), logits, 300);
      const c = draws(new Sampler({ topK: 1000, topP, seed: 10 }), logits, 300);
      expect(a).toEqual(b);
      expect(c).toEqual(b);
    }
  });

  it("-Infinity logits are never drawn, even when top-k asks for more tokens than are finite", () => {
    const logits = new Float32Array(100).fill(-Infinity);
    logits[3] = 0;
    logits[42] = -1;
    logits[99] = 0.5;
    for (const topK of [0, 10, 200]) {
      const got = new Set(draws(new Sampler({ temperature: 5, topK, topP: 1, seed: 12 }), logits, 2000));
      expect(got).toEqual(new Set([3, 42, 99]));
    }
  });
});

describe("seeding", () => {
  const logits = randomLogits(5000, 9, -4, 4, 0.01);

  it("the same seed gives the same sequence, a different seed a different one", () => {
    const a = draws(new Sampler({ seed: 2024 }), logits, 200);
    const b = draws(new Sampler({ seed: 2024 }), logits, 200);
    const c = draws(new Sampler({ seed: 2025 }), logits, 200);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });

  it("reset() repeats the stream, reset(seed) starts that seed's stream", () => {
    const s = new Sampler({ seed: 1 });
    const first = draws(s, logits, 50);
    s.reset();
    expect(draws(s, logits, 50)).toEqual(first);
    s.reset(777);
    expect(s.options.seed).toBe(777);
    expect(draws(s, logits, 50)).toEqual(draws(new Sampler({ seed: 777 }), logits, 50));
    s.reset();
    expect(draws(s, logits, 50)).toEqual(draws(new Sampler({ seed: 777 }), logits, 50));
  });

  it("a sampler without a seed reproduces from its options.seed", () => {
    const s = new Sampler();
    const a = draws(s, logits, 50);
    expect(draws(new Sampler({ seed: s.options.seed }), logits, 50)).toEqual(a);
  });
});
