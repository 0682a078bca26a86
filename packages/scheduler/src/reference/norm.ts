import { at, type Dense, dense, forRows } from "./dense.js";

/** Per row: x / sqrt(mean(x²) + eps). */
export function rmsNorm(a: Dense, eps: number): Dense {
  const out = dense(a.ne);
  const n = a.ne[0];
  forRows(a.ne, (_1, _2, _3, s) => {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += a.data[s + i]! ** 2;
    const k = 1 / Math.sqrt(sum / n + eps);
    for (let i = 0; i < n; i++) out.data[s + i] = a.data[s + i]! * k;
  });
  return out;
}

/** Per row: (x − mean) / sqrt(var + eps), var the population variance. */
export function norm(a: Dense, eps: number): Dense {
  const out = dense(a.ne);
  const n = a.ne[0];
  forRows(a.ne, (_1, _2, _3, s) => {
    let mean = 0;
    for (let i = 0; i < n; i++) mean += a.data[s + i]!;
    mean /= n;
    let v = 0;
    for (let i = 0; i < n; i++) v += (a.data[s + i]! - mean) ** 2;
    const k = 1 / Math.sqrt(v / n + eps);
    for (let i = 0; i < n; i++) out.data[s + i] = (a.data[s + i]! - mean) * k;
  });
  return out;
}

/** rms_norm(a, eps) * w, w broadcast over a's rows (the fused RMS_NORM_MUL). */
export function rmsNormMul(a: Dense, w: Dense, eps: number): Dense {
  const r = rmsNorm(a, eps);
  forRows(a.ne, (i1, i2, i3, s) => {
    const ws = at(w.ne, 0, i1 % w.ne[1], i2 % w.ne[2], i3 % w.ne[3]);
    for (let i = 0; i < a.ne[0]; i++) r.data[s + i]! *= w.data[ws + i]!;
  });
  return r;
}
