// Writes an importance matrix in llama-imatrix's GGUF format (see imatrix.ts for the layout):
// per weight `W.in_sum2` F32 [nCols, nMat] (Σx² per column of each expert) and `W.counts`
// F32 [1, nMat] (activation rows summed), with `general.type` "imatrix", `imatrix.datasets`,
// `imatrix.chunk_count` and `imatrix.chunk_size`.

import { GgufError } from "./errors.js";
import { GgmlType } from "./ggml-types.js";
import type { GgufKV } from "./metadata.js";
import { GgufValueType } from "./value-types.js";
import { encodeGguf } from "./write.js";

/** One weight's sums and counts (float64 while summing; written as F32 as llama-imatrix does). */
export interface ImatrixSums {
  readonly nCols: number;
  /** [nMat · nCols]: expert e's sums at [e·nCols, (e+1)·nCols). */
  readonly sums: ArrayLike<number>;
  /** [nMat]. */
  readonly counts: ArrayLike<number>;
}

export interface ImatrixMeta {
  /** The texts the sums were collected over (file names). */
  readonly datasets: readonly string[];
  readonly chunkCount: number;
  readonly chunkSize: number;
}

function f32Bytes(values: ArrayLike<number>): Uint8Array {
  return new Uint8Array(Float32Array.from(values as ArrayLike<number>).buffer);
}

/** The GGUF bytes of an importance matrix (entries by name). */
export function encodeImatrix(entries: ReadonlyMap<string, ImatrixSums>, meta: ImatrixMeta): Uint8Array {
  if (entries.size === 0)
    throw new GgufError("INVALID_ARGUMENT", "an importance matrix needs at least one entry");
  const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
  const kvs: GgufKV[] = [
    { key: "general.type", type: GgufValueType.STRING, value: "imatrix" },
    {
      key: "imatrix.datasets",
      type: GgufValueType.ARRAY,
      value: { itemType: GgufValueType.STRING, items: [...meta.datasets] },
    },
    u32("imatrix.chunk_count", meta.chunkCount),
    u32("imatrix.chunk_size", meta.chunkSize),
  ];
  const tensors: { name: string; type: number; dims: number[]; data: Uint8Array }[] = [];
  // (by name, as llama-imatrix orders them)
  for (const name of [...entries.keys()].sort()) {
    const e = entries.get(name)!;
    const nMat = e.counts.length;
    if (nMat < 1 || e.sums.length !== nMat * e.nCols)
      throw new GgufError(
        "INVALID_ARGUMENT",
        `imatrix entry ${name}: ${e.sums.length} sums for ${nMat} count(s) of ${e.nCols} columns`,
        { key: name },
      );
    // (a trailing dimension of 1 is left out, as ggml writes a tensor's dimensions)
    const sumDims = nMat > 1 ? [e.nCols, nMat] : [e.nCols];
    tensors.push({ name: `${name}.in_sum2`, type: GgmlType.F32, dims: sumDims, data: f32Bytes(e.sums) });
    tensors.push({
      name: `${name}.counts`,
      type: GgmlType.F32,
      dims: nMat > 1 ? [1, nMat] : [1],
      data: f32Bytes(e.counts),
    });
  }
  return encodeGguf(kvs, tensors);
}
