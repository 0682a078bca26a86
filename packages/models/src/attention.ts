import { type DType, type GraphBuilder, type RopeParams, rowBytes, type Tensor } from "@minfer/ir";
import type { KvInputs } from "./graph-inputs.js";
import { rmsNorm } from "./norm.js";

/** The heads of one attention layer. */
export interface HeadShape {
  readonly nHead: number;
  readonly nHeadKv: number;
  readonly headDimK: number;
  readonly headDimV: number;
}

/** The projections of one attention layer (biases and norms where the architecture has them). */
export interface AttentionWeights {
  readonly wq: Tensor;
  readonly wk: Tensor;
  readonly wv: Tensor;
  readonly wo: Tensor;
  readonly bq?: Tensor;
  readonly bk?: Tensor;
  readonly bv?: Tensor;
  readonly bo?: Tensor;
  /** RMSNorm weights of Q and K: per head (F32 [headDimK]) or over the whole projection (F32 [nHead·headDimK]). */
  readonly qNorm?: Tensor;
  readonly kNorm?: Tensor;
}

/** How one layer attends. */
export interface AttentionOptions {
  readonly heads: HeadShape;
  /** Absent: no rotary embedding (positions added to the input instead, as BERT's). */
  readonly rope?: RopeParams;
  /** RoPE frequency factors F32 [nDims / 2]. */
  readonly ropeFactors?: Tensor;
  /** Multiplies q·k. */
  readonly scale: number;
  /** Scores become softcap·tanh(s / softcap) before the mask (0: none). */
  readonly softcap?: number;
  /** Epsilon of the Q/K norms. */
  readonly normEps: number;
  /** The cache the layer's K/V go to, and its inputs. */
  readonly kv: KvInputs;
  readonly kvDtype: DType;
}

/**
 * Self-attention of one layer: Q/K/V projections (+ biases, + Q/K RMSNorms per head or over the
 * projection, as the norm weight's size says), RoPE, K and V written into the cache at `cells`
 * (SET_ROWS), the cache's first nKv cells read back as views for ATTENTION with the mask or spans,
 * then the output projection (+ bias). F32 [nEmbd, nTokens] → same. States `k_cache-{il}` and
 * `v_cache-{il}` ([row, the cache's nCtx]).
 */
export function buildAttention(
  b: GraphBuilder,
  x: Tensor,
  positions: Tensor,
  w: AttentionWeights,
  o: AttentionOptions,
  il: number,
): Tensor {
  const { nHead, nHeadKv, headDimK, headDimV } = o.heads;
  const nTokens = x.ne[1];
  const { nCtx, nKv } = o.kv.shape;
  const proj = (wt: Tensor, bias: Tensor | undefined, name: string) => {
    const y = b.name(b.mulMat(wt, x), name, il);
    return bias ? b.name(b.add(y, bias), `${name}_b`, il) : y;
  };
  let q = proj(w.wq, w.bq, "Qcur");
  let k = proj(w.wk, w.bk, "Kcur");
  const v = proj(w.wv, w.bv, "Vcur");
  const whole = (n: Tensor | undefined) => n !== undefined && n.ne[0] !== headDimK;
  if (w.qNorm && whole(w.qNorm)) q = rmsNorm(b, q, w.qNorm, o.normEps, "Qcur_normed", il);
  if (w.kNorm && whole(w.kNorm)) k = rmsNorm(b, k, w.kNorm, o.normEps, "Kcur_normed", il);
  q = b.reshape(q, [headDimK, nHead, nTokens], `Qcur_heads-${il}`);
  k = b.reshape(k, [headDimK, nHeadKv, nTokens], `Kcur_heads-${il}`);
  if (w.qNorm && !whole(w.qNorm)) q = rmsNorm(b, q, w.qNorm, o.normEps, "Qcur_normed", il);
  if (w.kNorm && !whole(w.kNorm)) k = rmsNorm(b, k, w.kNorm, o.normEps, "Kcur_normed", il);
  if (o.rope) {
    q = b.name(b.rope(q, positions, o.rope, o.ropeFactors), "Qcur_rope", il);
    k = b.name(b.rope(k, positions, o.rope, o.ropeFactors), "Kcur_rope", il);
  }

  const kCache = b.state(`k_cache-${il}`, o.kvDtype, [headDimK * nHeadKv, nCtx]);
  const vCache = b.state(`v_cache-${il}`, o.kvDtype, [headDimV * nHeadKv, nCtx]);
  const kRows = b.reshape(k, [headDimK * nHeadKv, nTokens], `Kcur_rows-${il}`);
  const kStored = b.name(b.setRows(kCache, kRows, o.kv.cells), "k_cache_store", il);
  const vStored = b.name(b.setRows(vCache, v, o.kv.cells), "v_cache_store", il);
  const kView = b.view(
    kStored,
    [headDimK, nHeadKv, nKv],
    [kStored.nb[0], rowBytes(kStored.dtype, headDimK), kStored.nb[1]],
    0,
    `k_view-${il}`,
  );
  const vView = b.view(
    vStored,
    [headDimV, nHeadKv, nKv],
    [vStored.nb[0], rowBytes(vStored.dtype, headDimV), vStored.nb[1]],
    0,
    `v_view-${il}`,
  );
  const attn = b.name(
    b.attention(q, kView, vView, o.kv.visibility, { scale: o.scale, softcap: o.softcap ?? 0 }),
    "kqv_out",
    il,
  );
  const merged = b.reshape(attn, [headDimV * nHead, nTokens], `kqv_merged-${il}`);
  const out = b.name(b.mulMat(w.wo, merged), "attn_out", il);
  return w.bo ? b.name(b.add(out, w.bo), "attn_out_b", il) : out;
}
