import { blockOf, DType } from "@minfer/ir";
import { KvCacheError } from "./errors.js";

/** Element types a KV cache may store K and V rows in. */
export type KvDtype = "f16" | "f32" | "q8_0";

/** The default KV dtype (as llama.cpp's). */
export const DEFAULT_KV_DTYPE: KvDtype = "f16";

const IDS: Record<KvDtype, DType> = { f16: DType.F16, f32: DType.F32, q8_0: DType.Q8_0 };

/** True for the names {@link KvDtype} allows. */
export function isKvDtype(v: unknown): v is KvDtype {
  return v === "f16" || v === "f32" || v === "q8_0";
}

/** Parses a KV dtype name (case-insensitive: `"F16"`, `"q8_0"`); BAD_DTYPE otherwise. */
export function parseKvDtype(v: string): KvDtype {
  const s = typeof v === "string" ? v.toLowerCase() : v;
  if (!isKvDtype(s)) {
    throw new KvCacheError("BAD_DTYPE", `unknown KV dtype ${JSON.stringify(v)}; known: f16, f32, q8_0`, {
      argument: "dtype",
    });
  }
  return s;
}

/** The `@minfer/ir` tensor dtype id of a KV dtype (what the engine gives the K and V tensors). */
export function kvDtypeId(dtype: KvDtype): DType {
  return IDS[parseKvDtype(dtype)];
}

/**
 * Bytes of one K or V row of `nEmbdKv` elements (one cell of one layer): 2·n for f16, 4·n for
 * f32, 34·n/32 for q8_0, which needs whole 32-element blocks (BAD_ROW_SIZE otherwise).
 */
export function kvRowBytes(dtype: KvDtype, nEmbdKv: number): number {
  const id = kvDtypeId(dtype);
  if (!Number.isInteger(nEmbdKv) || nEmbdKv < 1) {
    throw new KvCacheError("BAD_ROW_SIZE", `nEmbdKv must be a positive integer, got ${String(nEmbdKv)}`, {
      argument: "nEmbdKv",
    });
  }
  const { blockSize, typeSize } = blockOf(id);
  if (nEmbdKv % blockSize !== 0) {
    throw new KvCacheError(
      "BAD_ROW_SIZE",
      `a ${dtype} KV row of ${nEmbdKv} elements is not a whole number of ${blockSize}-element blocks`,
      { argument: "nEmbdKv" },
    );
  }
  return (nEmbdKv / blockSize) * typeSize;
}
