import type { Shape } from "@minfer/ir";
import { SchedulerError } from "../errors.js";

/** A dense float64 tensor: `data` in ggml element order (dim 0 fastest), shape `ne`. */
export interface Dense {
  readonly data: Float64Array;
  readonly ne: Shape;
}

export function dense(ne: Shape, data?: Float64Array): Dense {
  return { ne, data: data ?? new Float64Array(ne[0] * ne[1] * ne[2] * ne[3]) };
}

/** Flat index of element [i0, i1, i2, i3] in a dense tensor of shape `ne`. */
export function at(ne: Shape, i0: number, i1: number, i2: number, i3: number): number {
  return i0 + ne[0] * (i1 + ne[1] * (i2 + ne[2] * i3));
}

/** Calls `f(i1, i2, i3, rowStart)` for every row (dim-0 run) of shape `ne`. */
export function forRows(ne: Shape, f: (i1: number, i2: number, i3: number, start: number) => void): void {
  for (let i3 = 0; i3 < ne[3]; i3++)
    for (let i2 = 0; i2 < ne[2]; i2++)
      for (let i1 = 0; i1 < ne[1]; i1++) f(i1, i2, i3, at(ne, 0, i1, i2, i3));
}

/** Reads an integer index tensor value, checking it lies in [0, limit). */
export function index(value: number, limit: number, what: string): number {
  if (!Number.isInteger(value) || value < 0 || value >= limit) {
    throw new SchedulerError("OUT_OF_RANGE", `${what} ${value} is out of range 0..${limit - 1}`, {
      value,
      limit,
    });
  }
  return value;
}
