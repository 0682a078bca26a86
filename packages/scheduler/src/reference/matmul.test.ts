import { DType } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { dense } from "./dense.js";
import { encodeValues, readTensor } from "./dtype-io.js";
import { mulMat, mulMatAdd } from "./matmul.js";
import { mulMatId } from "./mul-mat-id.js";
import { mulMatMulti } from "./mul-mat-multi.js";

describe("reference matmul", () => {
  it("multiplies tiny integer matrices: a rows [1,2],[3,4] · b [5,6] = [17, 39]", () => {
    const out = mulMat(
      dense([2, 2, 1, 1], Float64Array.of(1, 2, 3, 4)),
      dense([2, 1, 1, 1], Float64Array.of(5, 6)),
    );
    expect([...out.data]).toEqual([17, 39]);
  });
  it("broadcasts a over b's batch dims", () => {
    const a = dense([1, 1, 2, 1], Float64Array.of(2, 3));
    const b = dense([1, 1, 4, 1], Float64Array.of(1, 1, 1, 1));
    expect([...mulMat(a, b).data]).toEqual([2, 2, 3, 3]);
  });
  it("reads Q8_0 weights through dequantize (integers in ±127 are exact)", () => {
    const values = Array.from({ length: 32 }, (_, i) => (i % 2 ? -1 : 1) * (i === 0 ? 127 : i));
    const bytes = encodeValues(DType.Q8_0, [32, 1, 1, 1], values);
    const w = readTensor(bytes, { dtype: DType.Q8_0, offset: 0, ne: [32, 1, 1, 1], nb: [34, 34, 34, 34] });
    expect([...w.data]).toEqual(values);
    const out = mulMat(w, dense([32, 1, 1, 1], new Float64Array(32).fill(1)));
    expect(out.data[0]).toBe(values.reduce((s, v) => s + v, 0));
  });
  it("mul_mat_id picks each token's experts", () => {
    // Two experts [k=1, m=1]: 10 and 20; token 0 uses expert 1, token 1 expert 0.
    const experts = dense([1, 1, 2, 1], Float64Array.of(10, 20));
    const out = mulMatId(
      experts,
      dense([1, 1, 2, 1], Float64Array.of(1, 2)),
      dense([1, 2, 1, 1], Float64Array.of(1, 0)),
    );
    expect([...out.data]).toEqual([20, 20]);
  });
  it("mul_mat_add adds c broadcast over the product: a bias per row, or the full shape", () => {
    const a = dense([2, 2, 1, 1], Float64Array.of(1, 2, 3, 4));
    const b = dense([2, 2, 1, 1], Float64Array.of(5, 6, 1, 0));
    expect([...mulMat(a, b).data]).toEqual([17, 39, 1, 3]);
    expect([...mulMatAdd(a, b, dense([2, 1, 1, 1], Float64Array.of(10, 20))).data]).toEqual([27, 59, 11, 23]);
    expect([...mulMatAdd(a, b, dense([2, 2, 1, 1], Float64Array.of(1, 2, 3, 4))).data]).toEqual([
      18, 41, 4, 7,
    ]);
  });
  it("mul_mat_multi is one mul_mat per weight", () => {
    const x = dense([2, 1, 1, 1], Float64Array.of(1, 1));
    const outs = mulMatMulti(x, [
      dense([2, 1, 1, 1], Float64Array.of(1, 2)),
      dense([2, 1, 1, 1], Float64Array.of(3, 4)),
    ]);
    expect(outs.map((o) => o.data[0])).toEqual([3, 7]);
  });
  it("mul_mat_multi with addends adds c_i to out_i", () => {
    const x = dense([2, 1, 1, 1], Float64Array.of(1, 1));
    const outs = mulMatMulti(
      x,
      [
        dense([2, 1, 1, 1], Float64Array.of(1, 2)),
        dense([2, 1, 1, 1], Float64Array.of(3, 4)),
        dense([1, 1, 1, 1], Float64Array.of(10)),
        dense([1, 1, 1, 1], Float64Array.of(-7)),
      ],
      2,
    );
    expect(outs.map((o) => o.data[0])).toEqual([13, 0]);
  });
});
