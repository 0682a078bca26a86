import { describe, expect, it } from "vitest";
import { concat, setRows } from "./copy.js";
import { dense } from "./dense.js";
import { getRows } from "./get-rows.js";
import { argsort, topK } from "./sort.js";

describe("reference get_rows, set_rows, concat, argsort, top_k", () => {
  const a = dense([2, 3, 1, 1], Float64Array.of(1, 2, 3, 4, 5, 6));
  it("get_rows picks rows and refuses an index out of range", () => {
    expect([...getRows(a, dense([2, 1, 1, 1], Float64Array.of(2, 0))).data]).toEqual([5, 6, 1, 2]);
    expect(() => getRows(a, dense([1, 1, 1, 1], Float64Array.of(3)))).toThrow(/out of range/);
  });
  it("set_rows names the rows to write", () => {
    const w = setRows(
      [2, 3, 1, 1],
      dense([2, 1, 1, 1], Float64Array.of(7, 8)),
      dense([1, 1, 1, 1], Float64Array.of(1)),
    );
    expect(w).toHaveLength(1);
    expect(w[0]!.i1).toBe(1);
    expect([...w[0]!.values]).toEqual([7, 8]);
  });
  it("concat joins along a dim", () => {
    const out = concat(a, dense([1, 3, 1, 1], Float64Array.of(9, 9, 9)), 0);
    expect([...out.data]).toEqual([1, 2, 9, 3, 4, 9, 5, 6, 9]);
  });
  it("argsort and top_k", () => {
    const x = dense([4, 1, 1, 1], Float64Array.of(0.5, -1, 3, 2));
    expect([...argsort(x, false).data]).toEqual([1, 0, 3, 2]);
    expect([...argsort(x, true).data]).toEqual([2, 3, 0, 1]);
    expect([...topK(x, 2).data]).toEqual([2, 3]);
  });
  it("orders NaN above +inf and -0 as +0, ties by index", () => {
    const x = dense(
      [6, 1, 1, 1],
      Float64Array.of(1, Number.NaN, -0, 0, Number.POSITIVE_INFINITY, Number.NaN),
    );
    expect([...topK(x, 6).data]).toEqual([1, 5, 4, 0, 2, 3]);
    expect([...argsort(x, false).data]).toEqual([2, 3, 0, 4, 1, 5]);
  });
});
