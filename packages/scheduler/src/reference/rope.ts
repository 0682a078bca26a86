import { RopeMode } from "@minfer/ir";
import { at, type Dense, dense } from "./dense.js";

/** ROPE parameters in encoding order (see OP_SPECS). */
export interface RopeArgs {
  mode: number;
  nDims: number;
  nCtxOrig: number;
  freqBase: number;
  freqScale: number;
  extFactor: number;
  attnFactor: number;
  betaFast: number;
  betaSlow: number;
}

export function ropeArgs(p: readonly number[]): RopeArgs {
  const [mode, nDims, nCtxOrig, freqBase, freqScale, extFactor, attnFactor, betaFast, betaSlow] =
    p as number[];
  return {
    mode,
    nDims,
    nCtxOrig,
    freqBase,
    freqScale,
    extFactor,
    attnFactor,
    betaFast,
    betaSlow,
  } as RopeArgs;
}

/** ggml_rope_yarn_corr_dim: the dimension whose wavelength makes `nRot` turns over the original context. */
function corrDim(nDims: number, nCtxOrig: number, nRot: number, base: number): number {
  return (nDims * Math.log(nCtxOrig / (nRot * 2 * Math.PI))) / (2 * Math.log(base));
}

/** ggml_rope_yarn_corr_dims: [low, high] of the YaRN ramp. */
export function yarnCorrDims(a: RopeArgs): [number, number] {
  const start = Math.floor(corrDim(a.nDims, a.nCtxOrig, a.betaFast, a.freqBase));
  const end = Math.ceil(corrDim(a.nDims, a.nCtxOrig, a.betaSlow, a.freqBase));
  return [Math.max(0, start), Math.min(a.nDims - 1, end)];
}

/**
 * cos and sin (times the magnitude scale) of pair `i0` (even) at position `pos`, as ggml's
 * rope_yarn computes them: theta_extrap = pos · base^(−i0/nDims) / freqFactor; theta_interp =
 * freqScale · theta_extrap; with extFactor ≠ 0 the two are mixed by the YaRN ramp and the
 * magnitude grows by 1 + 0.1·ln(1/freqScale).
 */
export function ropeAngle(
  a: RopeArgs,
  corr: [number, number],
  pos: number,
  i0: number,
  freqFactor: number,
): [cos: number, sin: number] {
  const thetaExtrap = (pos * a.freqBase ** (-i0 / a.nDims)) / freqFactor;
  const thetaInterp = a.freqScale * thetaExtrap;
  let theta = thetaInterp;
  let mscale = a.attnFactor;
  if (a.extFactor !== 0) {
    const y = (i0 / 2 - corr[0]) / Math.max(0.001, corr[1] - corr[0]);
    const rampMix = (1 - Math.min(1, Math.max(0, y))) * a.extFactor;
    theta = thetaInterp * (1 - rampMix) + thetaExtrap * rampMix;
    mscale *= 1 + 0.1 * Math.log(1 / a.freqScale);
  }
  return [Math.cos(theta) * mscale, Math.sin(theta) * mscale];
}

/**
 * Rotary embedding of x [headDim, nHead, nTokens] at positions pos [nTokens]. NORMAL rotates
 * pairs (2i, 2i+1); NEOX pairs (i, i + nDims/2). Dimensions past nDims are copied.
 */
export function rope(x: Dense, pos: Dense, params: readonly number[], freqFactors?: Dense): Dense {
  const a = ropeArgs(params);
  const corr = yarnCorrDims(a);
  const out = dense(x.ne, Float64Array.from(x.data));
  const half = a.nDims / 2;
  const [, n1, n2, n3] = x.ne;
  for (let i3 = 0; i3 < n3; i3++)
    for (let i2 = 0; i2 < n2; i2++) {
      const p = pos.data[i2]!;
      for (let i1 = 0; i1 < n1; i1++) {
        const s = at(x.ne, 0, i1, i2, i3);
        for (let i0 = 0; i0 < a.nDims; i0 += 2) {
          const ff = freqFactors ? freqFactors.data[i0 / 2]! : 1;
          const [c, sn] = ropeAngle(a, corr, p, i0, ff);
          const [j0, j1] = a.mode === RopeMode.NEOX ? [i0 / 2, i0 / 2 + half] : [i0, i0 + 1];
          const x0 = x.data[s + j0]!;
          const x1 = x.data[s + j1]!;
          out.data[s + j0] = x0 * c - x1 * sn;
          out.data[s + j1] = x0 * sn + x1 * c;
        }
      }
    }
  return out;
}
