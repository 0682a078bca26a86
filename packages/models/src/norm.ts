import type { GraphBuilder, Tensor } from "@minfer/ir";

/** RMSNorm over dim 0 times a weight: F32 [n, …] → F32 [n, …], named `name` (the bare norm `${name}_rms`). */
export function rmsNorm(
  b: GraphBuilder,
  x: Tensor,
  weight: Tensor,
  eps: number,
  name: string,
  il?: number,
): Tensor {
  const normed = b.name(b.rmsNorm(x, eps), `${name}_rms`, il);
  return b.name(b.mul(normed, weight), name, il);
}

/** LayerNorm over dim 0 (mean removed, unit variance), times a weight and plus a bias when given. */
export function layerNorm(
  b: GraphBuilder,
  x: Tensor,
  weight: Tensor | undefined,
  bias: Tensor | undefined,
  eps: number,
  name: string,
  il?: number,
): Tensor {
  let y = b.name(b.norm(x, eps), `${name}_ln`, il);
  if (weight) y = b.name(b.mul(y, weight), bias ? `${name}_w` : name, il);
  if (bias) y = b.name(b.add(y, bias), name, il);
  return y;
}
