// Per-element weights from an importance matrix (llama-imatrix's mean x² of the activations each
// input column saw). The quantizers that take an importance minimize Σ w·(x − y)² over a block
// instead of Σ(x − y)², with w from the helpers below.

/** Whether x[o..o+n) holds only finite values. */
export function allFinite(x: Float32Array, o: number, n: number): boolean {
  let s = 0;
  for (let j = 0; j < n; j++) s += x[o + j]! - x[o + j]!; // NaN once any value is ±Inf or NaN
  return s === 0;
}

/**
 * Writes imp[o + j]·√(σ² + x[o + j]²) into out[0..n), σ² = `spread`·mean(x²) over x[o..o+n): the
 * column's importance times a magnitude term that favours the large elements of the block
 * without letting the small ones drop out. The values must be finite.
 */
export function importanceWeights(
  x: Float32Array,
  imp: Float32Array,
  o: number,
  n: number,
  spread: number,
  out: Float64Array,
): void {
  let sum = 0;
  for (let j = 0; j < n; j++) sum += x[o + j]! * x[o + j]!;
  const sigma2 = (spread * sum) / n;
  for (let j = 0; j < n; j++) {
    const v = x[o + j]!;
    out[j] = imp[o + j]! * Math.sqrt(sigma2 + v * v);
  }
}
