import { blockOf, DType } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { DEFAULT_KV_DTYPE, KvCache, KvCacheError, kvDtypeId, kvRowBytes, parseKvDtype } from "./index.js";

describe("KV dtypes", () => {
  it("sizes rows of f16, f32 and q8_0", () => {
    expect(kvRowBytes("f16", 128)).toBe(256);
    expect(kvRowBytes("f32", 128)).toBe(512);
    expect(kvRowBytes("q8_0", 128)).toBe(4 * 34);
    expect(kvRowBytes("q8_0", 1024)).toBe((1024 / 32) * blockOf(DType.Q8_0).typeSize);
  });

  it("refuses q8_0 rows that are not whole 32-element blocks", () => {
    expect(() => kvRowBytes("q8_0", 100)).toThrow(expect.objectContaining({ code: "BAD_ROW_SIZE" }));
    expect(() => kvRowBytes("f16", 0)).toThrow(expect.objectContaining({ code: "BAD_ROW_SIZE" }));
    expect(() => kvRowBytes("f16", 1.5)).toThrow(KvCacheError);
  });

  it("maps to @minfer/ir dtype ids, defaults to f16, rejects unknown names", () => {
    expect(kvDtypeId("f16")).toBe(DType.F16);
    expect(kvDtypeId("f32")).toBe(DType.F32);
    expect(kvDtypeId("q8_0")).toBe(DType.Q8_0);
    expect(DEFAULT_KV_DTYPE).toBe("f16");
    expect(new KvCache({ nCtx: 8 }).dtype).toBe("f16");
    expect(new KvCache({ nCtx: 8, dtype: "q8_0" }).dtype).toBe("q8_0");
    expect(parseKvDtype("Q8_0")).toBe("q8_0");
    expect(() => parseKvDtype("q4_0")).toThrow(
      expect.objectContaining({ code: "BAD_DTYPE", argument: "dtype" }),
    );
    expect(() => new KvCache({ nCtx: 8, dtype: "bf16" as "f16" })).toThrow(
      expect.objectContaining({ code: "BAD_DTYPE" }),
    );
  });
});
