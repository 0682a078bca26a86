import { describe, expect, it } from "vitest";
import { Xoshiro128 } from "./prng.js";

// Expected values from the reference C code (prng.di.unimi.it/xoshiro128starstar.c) with the same
// splitmix32 seeding, compiled with gcc.
describe("Xoshiro128", () => {
  it("matches the reference xoshiro128** from state [1, 2, 3, 4]", () => {
    const g = new Xoshiro128(0);
    g.setState(1, 2, 3, 4);
    const got = Array.from({ length: 8 }, () => g.nextUint32());
    expect(got).toEqual([11520, 0, 5927040, 70819200, 2031721883, 1637235492, 1287239034, 3734860849]);
  });

  it.each([
    [0, [1789933344, 44971166, 2521387044, 3848737593, 1138324114, 749234105, 1899511038, 1995189375]],
    [42, [660444221, 3652823732, 77672526, 910233633, 2297337756, 3786072677, 3123505064, 1891482476]],
    [
      4294967295,
      [4104197751, 1825856343, 1152209388, 2427537429, 3685145430, 609215610, 4161674276, 1502890106],
    ],
  ])("matches the reference stream for seed %i", (seed, expected) => {
    const g = new Xoshiro128(seed);
    expect(Array.from({ length: 8 }, () => g.nextUint32())).toEqual(expected);
  });

  it("restarts on seed() and gives doubles in [0, 1)", () => {
    const g = new Xoshiro128(7);
    const a = Array.from({ length: 1000 }, () => g.nextFloat64());
    g.seed(7);
    const b = Array.from({ length: 1000 }, () => g.nextFloat64());
    expect(b).toEqual(a);
    for (const x of a) expect(x >= 0 && x < 1).toBe(true);
    const mean = a.reduce((s, x) => s + x, 0) / a.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.05);
  });

  it("never runs from an all-zero state", () => {
    const g = new Xoshiro128(0);
    g.setState(0, 0, 0, 0);
    expect(Array.from({ length: 4 }, () => g.nextUint32()).some((x) => x !== 0)).toBe(true);
  });
});
