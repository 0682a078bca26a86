/**
 * Seeded test data for the quantizer tests (test-only: index.ts does not re-export this file).
 * iq4-quant.test.ts compares its errors with figures llama.cpp's quantizers measured on exactly
 * these vectors, so the generator must not change.
 */

/** Seeded PRNG (mulberry32): uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` N(0, 1) samples (Box–Muller) from a seeded stream. */
export function normals(n: number, seed: number): Float32Array {
  const rnd = mulberry32(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u = 1 - rnd(); // (0, 1]
    const v = rnd();
    const r = Math.sqrt(-2 * Math.log(u));
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < n) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

/**
 * `n` importances exp(1.5·z), z from {@link normals}(n, seed): positive and heavy-tailed (a few
 * columns matter far more than the rest), as an importance matrix's per-column mean x² are. The
 * i-quant tests weigh errors by `importances(4096, 0x1a7b)`, the vector llama.cpp's figures in
 * them were measured with.
 */
export function importances(n: number, seed: number): Float32Array {
  return Float32Array.from(normals(n, seed), (z) => Math.exp(1.5 * z));
}

/**
 * √(Σ w·(y − x)² / Σ w) over whole rows, w[j mod w.length] the importance of column j (the error
 * a quantizer given importance `w` minimizes); without `w`, the plain RMSE.
 */
export function weightedRmse(x: Float32Array, y: Float32Array, w?: Float32Array): number {
  let se = 0;
  let sw = 0;
  for (let i = 0; i < x.length; i++) {
    const c = w ? w[i % w.length]! : 1;
    se += c * (y[i]! - x[i]!) ** 2;
    sw += c;
  }
  return Math.sqrt(se / sw);
}
