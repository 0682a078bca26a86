import { dequantize } from "@minfer/gguf";
import { blockOf, dtypeName, isQuantized, OP_SPECS, WEIGHT_DTYPES } from "@minfer/ir";
import { beforeAll, describe, expect, it } from "vitest";
import { canWrite } from "../reference/dtype-io.js";
import { geluValue } from "../reference/elementwise.js";
import { referenceBackend } from "../reference-device.js";
import { buildCase, CONFORMANCE_CASES, FULL_WEIGHT_DTYPES, SPOT_CHECKED_WEIGHT_DTYPES } from "./cases.js";
import { caseData, compareOutputs, randomBlocks, runCase, unsupportedReason } from "./harness.js";
import { prng } from "./prng.js";

const device = referenceBackend().devices()[0]!;
let runtime: Awaited<ReturnType<typeof device.init>>;
beforeAll(async () => {
  runtime = await device.init();
});

describe("the conformance table", () => {
  it("covers every op in OP_SPECS", () => {
    const ops = new Set(CONFORMANCE_CASES.map((c) => c.op));
    expect(OP_SPECS.filter((s) => !ops.has(s.name)).map((s) => s.name)).toEqual([]);
    const combos = new Set(CONFORMANCE_CASES.map((c) => `${c.op}:${c.dtypes.join("/")}`));
    console.log(`${CONFORMANCE_CASES.length} cases, ${ops.size} ops, ${combos.size} op × dtype combinations`);
  });

  it("names each case's tensors with real dtypes", () => {
    for (const c of CONFORMANCE_CASES) {
      const g = buildCase(c);
      for (const t of g.tensors) expect(() => dtypeName(t.dtype)).not.toThrow();
    }
  });

  // Every case must build and run on the reference itself with finite outputs; a case that
  // silently produced zeros or NaN would make the suite pass for the wrong reason.
  it.each(CONFORMANCE_CASES.map((c) => [c.name, c] as const))(
    "runs on the reference: %s",
    async (_name, c) => {
      expect(unsupportedReason(device, buildCase(c))).toBeUndefined();
      const outs = await runCase(c, runtime);
      expect(outs.length).toBeGreaterThan(0);
      for (const o of outs) {
        expect(o.every(Number.isFinite)).toBe(true);
        if (c.tolerance > 0 && o.length > 1) expect(o.some((v) => v !== 0)).toBe(true);
      }
    },
  );

  // The i-quants, ternary types and MXFP4 enter the ops that take weights in a few shapes each,
  // never as a written dtype (no quantizer).
  it("spot-checks the weight types without tuned kernels, and splits the weight types in two", () => {
    expect([...FULL_WEIGHT_DTYPES, ...SPOT_CHECKED_WEIGHT_DTYPES].sort((a, b) => a - b)).toEqual(
      [...WEIGHT_DTYPES].sort((a, b) => a - b),
    );
    expect(SPOT_CHECKED_WEIGHT_DTYPES.length).toBe(12);
    const spot = new Set<string>();
    for (const d of SPOT_CHECKED_WEIGHT_DTYPES) {
      const name = dtypeName(d);
      const mine = CONFORMANCE_CASES.filter((c) => c.dtypes.includes(name));
      const count = (op: string, pattern?: RegExp) =>
        mine.filter((c) => c.op === op && (!pattern || pattern.test(c.name))).length;
      expect(count("GET_ROWS"), name).toBe(2);
      expect(count("MUL_MAT", /×\[256, 1\]$/), name).toBe(1);
      expect(count("MUL_MAT", /×\[256, 7\]$/), name).toBe(2);
      expect(count("MUL_MAT", /decode/), name).toBe(1);
      expect(count("MUL_MAT", /prefill/), name).toBe(1);
      expect(count("MUL_MAT_ADD"), name).toBe(1);
      expect(count("MUL_MAT_ID"), name).toBe(2);
      expect(count("MUL_MAT_MULTI"), name).toBe(1);
      expect(count("CPY") + count("SET_ROWS"), name).toBe(0);
      for (const c of mine) spot.add(c.name);
    }
    // 10 a type, a short-tile product for each of the two with 32-element blocks, 4 MUL_MAT_MULTIs of 3.
    expect(spot.size).toBe(12 * 10 + 2 + 4);
  });

  it("makes valid random blocks of every quantized weight type without a quantizer", () => {
    const rng = prng(1);
    for (const d of WEIGHT_DTYPES.filter((x) => isQuantized(x) && !canWrite(x))) {
      const count = 8 * blockOf(d).blockSize;
      const bytes = randomBlocks(d, count, rng);
      expect(bytes.length).toBe(8 * blockOf(d).typeSize);
      const values = dequantize(d, bytes, count);
      const max = values.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      expect(values.every(Number.isFinite), dtypeName(d)).toBe(true);
      expect(max, dtypeName(d)).toBeGreaterThan(1e-3);
      expect(max, dtypeName(d)).toBeLessThan(64);
      // Several distinct values: not a constant block.
      expect(new Set(values).size, dtypeName(d)).toBeGreaterThan(2);
    }
  });

  // GELU_ERF exists to replace GELU's tanh approximation where a model wants the exact erf; a
  // tolerance that let the tanh form through would not tell them apart.
  it("fails GELU's tanh approximation on the GELU_ERF cases", async () => {
    const plain = CONFORMANCE_CASES.filter((c) => c.op === "GELU_ERF" && !/transposed|strided/.test(c.name));
    expect(plain.length).toBeGreaterThan(4);
    for (const c of plain) {
      const [bytes] = [...caseData(c, buildCase(c)).values()];
      const x = new Float32Array(bytes!.buffer, bytes!.byteOffset, bytes!.byteLength / 4);
      const want = (await runCase(c, runtime))[0]!;
      expect(compareOutputs(want, Float64Array.from(x, geluValue)).nmse, c.name).toBeGreaterThan(
        100 * c.tolerance,
      );
    }
  });
});

describe("the comparison", () => {
  const onePerOp = [...new Map(CONFORMANCE_CASES.map((c) => [c.op, c])).values()];

  it("passes a second device that computes the same (one case per op, through the whole scheduler)", async () => {
    const twin = await referenceBackend({ name: "twin" }).devices()[0]!.init();
    for (const c of onePerOp) {
      const want = await runCase(c, runtime);
      const got = await runCase(c, twin);
      for (const [i, o] of got.entries())
        expect(compareOutputs(want[i]!, o).nmse).toBeLessThanOrEqual(c.tolerance);
    }
  });

  it("fails a device that is off by more than the tolerance (1%+), or that swaps two indices (mutation check)", async () => {
    for (const c of onePerOp) {
      const want = (await runCase(c, runtime))[0]!;
      const bad = Float64Array.from(want);
      if (c.tolerance === 0) [bad[0], bad[1]] = [want[1]!, want[0]!];
      else {
        // 1% off, or twice the tolerance's RMS for loose (quantized-output) cases.
        const f = 1 + Math.max(0.01, 2 * Math.sqrt(c.tolerance));
        for (let i = 0; i < bad.length; i++) bad[i]! *= f;
      }
      expect(compareOutputs(want, bad).nmse, c.name).toBeGreaterThan(c.tolerance);
    }
  });
});
