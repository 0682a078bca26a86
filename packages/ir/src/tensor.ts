import { blockOf, type DType, dtypeName, rowBytes } from "./dtype.js";
import type { Op } from "./ops.js";

/** Four dimensions, innermost first (ggml's `ne`): a [rows × cols] matrix is [cols, rows, 1, 1]. */
export type Shape = readonly [number, number, number, number];

/**
 * What a tensor is: an `input` filled per step (token ids, positions, masks), a `weight` whose
 * data comes from the model, `state` that lives across graphs (the KV cache), a `result` an op
 * computes, or a `view` of another tensor's memory.
 */
export type TensorKind = "input" | "weight" | "state" | "result" | "view";

export interface Tensor {
  readonly id: number;
  name: string;
  readonly dtype: DType;
  readonly ne: Shape;
  /** Byte strides per dimension (nb[0] is the size of one element, or of one block). */
  readonly nb: Shape;
  readonly kind: TensorKind;
  /** For views: the tensor whose memory this one is, and the byte offset into it. */
  readonly viewOf: Tensor | undefined;
  readonly viewOffset: number;
  /** The node computing it (results, and views made by ops that write in place). */
  node: Node | undefined;
  /** For weights: the name of the data (e.g. the GGUF tensor name); for state: its key. */
  readonly source: string | undefined;
}

export interface Node {
  readonly id: number;
  name: string;
  readonly op: Op;
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly Tensor[];
  /** Parameter values in the order of the op's spec. */
  readonly params: readonly number[];
}

/** Number of elements. */
export function numel(t: { ne: Shape }): number {
  return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}

/** Row-major ("contiguous") strides of a shape. */
export function contiguousStrides(dtype: DType, ne: Shape): Shape {
  const { typeSize } = blockOf(dtype);
  const nb1 = rowBytes(dtype, ne[0]);
  return [typeSize, nb1, nb1 * ne[1], nb1 * ne[1] * ne[2]];
}

export function isContiguous(t: Tensor): boolean {
  const c = contiguousStrides(t.dtype, t.ne);
  for (let i = 0; i < 4; i++) if (t.ne[i]! > 1 && t.nb[i] !== c[i]) return false;
  return true;
}

/**
 * Bytes from the tensor's first byte to one past the last byte it touches, for any strides
 * (transposed and permuted views included). Along dim 0 a block type steps one block at a time.
 */
export function byteSpan(t: { dtype: DType; ne: Shape; nb: Shape }): number {
  if (numel(t) === 0) return 0;
  const { blockSize, typeSize } = blockOf(t.dtype);
  rowBytes(t.dtype, t.ne[0]); // whole blocks, or an error
  let last = (t.ne[0] / blockSize - 1) * t.nb[0] + typeSize;
  for (let i = 1; i < 4; i++) last += (t.ne[i]! - 1) * t.nb[i]!;
  return last;
}

/** The tensor whose memory a view finally is, and the view's byte offset in it. */
export function viewRoot(t: Tensor): { root: Tensor; offset: number } {
  let offset = 0;
  let cur = t;
  while (cur.viewOf) {
    offset += cur.viewOffset;
    cur = cur.viewOf;
  }
  return { root: cur, offset };
}

/** `"F32 [64, 7]"` — dtype and the dimensions in use. */
export function describe(t: { dtype: DType; ne: Shape }): string {
  let n = 4;
  while (n > 1 && t.ne[n - 1] === 1) n--;
  return `${dtypeName(t.dtype)} [${t.ne.slice(0, n).join(", ")}]`;
}
