import { describe, expect, it } from "vitest";
import { dense } from "./dense.js";
import { add, geglu, gelu, mul, scale, silu, swiglu, tanh } from "./elementwise.js";
import { norm, rmsNorm, rmsNormMul } from "./norm.js";

const v = (...x: number[]) => dense([x.length, 1, 1, 1], Float64Array.from(x));

describe("reference elementwise and norms", () => {
  it("add and mul broadcast b over a", () => {
    const a = dense([2, 2, 1, 1], Float64Array.of(1, 2, 3, 4));
    expect([...add(a, v(10, 20)).data]).toEqual([11, 22, 13, 24]);
    expect([...mul(a, dense([1, 2, 1, 1], Float64Array.of(2, 3))).data]).toEqual([2, 4, 9, 12]);
  });
  it("scale, silu, gelu, swiglu known values", () => {
    expect([...scale(v(1, 2), 3, 1).data]).toEqual([4, 7]);
    expect(silu(v(0)).data[0]).toBe(0);
    expect(silu(v(1)).data[0]).toBeCloseTo(1 / (1 + Math.exp(-1)), 15);
    expect(gelu(v(0)).data[0]).toBe(0);
    expect(gelu(v(1)).data[0]).toBeCloseTo(0.8411919906082768, 12);
    expect(swiglu(v(1), v(2)).data[0]).toBeCloseTo(2 / (1 + Math.exp(-1)), 15);
  });
  it("tanh and geglu known values", () => {
    expect([...tanh(v(0, 1, -30)).data]).toEqual([0, Math.tanh(1), -1]);
    expect(geglu(v(1), v(2)).data[0]).toBeCloseTo(2 * 0.8411919906082768, 12);
    expect(geglu(v(-20), v(3)).data[0]).toBeCloseTo(0, 12);
    expect(geglu(v(0), v(5)).data[0]).toBe(0);
  });
  it("rms_norm of [3, 4] divides by sqrt(12.5); norm of [1, 3] is [−1, 1]", () => {
    const r = rmsNorm(v(3, 4), 0);
    expect(r.data[0]).toBeCloseTo(3 / Math.sqrt(12.5), 15);
    const nn = norm(v(1, 3), 0);
    expect([...nn.data]).toEqual([-1, 1]);
    expect(rmsNormMul(v(3, 4), v(2, 0), 0).data[0]).toBeCloseTo(6 / Math.sqrt(12.5), 15);
  });
});
