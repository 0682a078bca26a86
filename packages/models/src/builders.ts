import { DType, type Graph, GraphBuilder, type RopeParams, rowBytes, type Tensor } from "@minfer/ir";
import type { Hparams } from "./hparams.js";
import { ropeParams, usesRopeFreqs } from "./rope.js";
import type { ModelTensors, TensorSpec } from "./tensors.js";

/** The sizes one graph is built for. */
export interface GraphShape {
  /** Tokens in the micro-batch. */
  readonly nTokens: number;
  /** KV cells attention reads (cells [0, nKv) of the cache). */
  readonly nKv: number;
  /** Tokens whose logits are computed (rows of `outIds`). */
  readonly nOutputs: number;
}

/** Options of `buildGraph`. */
export interface BuildOptions extends GraphShape {
  /** Cells of the KV cache state tensors `k_cache-{il}`/`v_cache-{il}` ([row, nCtx]). Default: nKv. */
  readonly nCtx?: number;
  /** Dtype of the KV cache. Default: F32. */
  readonly kvDtype?: DType;
  /**
   * Attention visibility as spans (I32 [2, nTokens]: query j sees cells [start_j, end_j)) instead
   * of a mask; usable when every query's visible cells are one run. Default: false (a mask).
   */
  readonly spans?: boolean;
  /** The checked tensors (dtypes, tying) from `loadTensors`. Default: every weight F32, untied. */
  readonly tensors?: ModelTensors;
}

/** The inputs the caller fills before each run. */
export interface GraphInputs {
  /** I32 [nTokens]: token ids. */
  readonly tokens: Tensor;
  /** I32 [nTokens]: positions. */
  readonly positions: Tensor;
  /** I32 [nTokens]: the KV cell each token's K/V row is written to. */
  readonly cells: Tensor;
  /** F32 [nKv, nTokens]: 0 where a token sees a cell, -Infinity elsewhere; or, built with `spans`, I32 [2, nTokens]. */
  readonly mask: Tensor;
  /** I32 [nOutputs]: indices (into the batch) of the tokens whose logits are wanted. */
  readonly outIds: Tensor;
  /** F32 [nRot / 2]: RoPE frequency factors from the llama3 scaling keys (fill with `llama3RopeFreqs`); absent when the file has `rope_freqs.weight`. */
  readonly ropeFreqs?: Tensor;
}

/** A built graph, its inputs and its output. */
export interface BuiltGraph {
  readonly graph: Graph;
  readonly inputs: GraphInputs;
  /** F32 [nVocab, nOutputs]. */
  readonly logits: Tensor;
}

/** What differs between the dense decoders. */
export interface ArchFeatures {
  readonly ropeMode: RopeParams["mode"];
  /** Q/K/V projections have biases (qwen2). */
  readonly qkvBias: boolean;
  /** Per-head RMSNorm of Q and K before RoPE (qwen3). */
  readonly qkNorm: boolean;
}

/**
 * The tensors of a dense llama-like decoder with these features, yielded one at a time: a
 * consumer that stops at the first missing tensor never builds the specs of the layers after it,
 * so a hostile `block_count` costs nothing before it is found out.
 */
export function* decoderTensorSpecs(hp: Hparams, f: ArchFeatures): Generator<TensorSpec, void, undefined> {
  const m = (name: string, ...ne: number[]): TensorSpec => ({ name, ne, kind: "matrix" });
  const v = (name: string, n: number): TensorSpec => ({ name, ne: [n], kind: "vector" });
  const nQ = hp.nHead * hp.headDimK;
  const nK = hp.nHeadKv * hp.headDimK;
  const nV = hp.nHeadKv * hp.headDimV;
  yield m("token_embd.weight", hp.nEmbd, hp.nVocab);
  yield v("output_norm.weight", hp.nEmbd);
  yield m("output.weight", hp.nEmbd, hp.nVocab);
  // RoPE frequency factors as llama.cpp's converter stores llama3 scaling (optional).
  yield { ...v(ROPE_FREQS, hp.nRot / 2), optional: true };
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    yield v(`${p}attn_norm.weight`, hp.nEmbd);
    yield m(`${p}attn_q.weight`, hp.nEmbd, nQ);
    yield m(`${p}attn_k.weight`, hp.nEmbd, nK);
    yield m(`${p}attn_v.weight`, hp.nEmbd, nV);
    if (f.qkvBias) {
      yield v(`${p}attn_q.bias`, nQ);
      yield v(`${p}attn_k.bias`, nK);
      yield v(`${p}attn_v.bias`, nV);
    }
    if (f.qkNorm) {
      yield v(`${p}attn_q_norm.weight`, hp.headDimK);
      yield v(`${p}attn_k_norm.weight`, hp.headDimK);
    }
    yield m(`${p}attn_output.weight`, hp.nHead * hp.headDimV, hp.nEmbd);
    yield v(`${p}ffn_norm.weight`, hp.nEmbd);
    yield m(`${p}ffn_gate.weight`, hp.nEmbd, hp.nFf);
    yield m(`${p}ffn_up.weight`, hp.nEmbd, hp.nFf);
    yield m(`${p}ffn_down.weight`, hp.nFf, hp.nEmbd);
  }
}

/** The tensor llama.cpp's converter stores llama3 RoPE frequency factors in. */
export const ROPE_FREQS = "rope_freqs.weight";

/**
 * The ROPE frequency factors of a graph: the file's `rope_freqs.weight` when it has one (llama.cpp
 * uses it whatever the scaling keys say), else an input filled from the llama3 scaling keys, else none.
 */
export function ropeFactors(
  b: GraphBuilder,
  hp: Hparams,
  tensors: ModelTensors | undefined,
): { tensor?: Tensor; input?: Tensor } {
  if (tensors?.byName.has(ROPE_FREQS)) return { tensor: b.weight(ROPE_FREQS, DType.F32, [hp.nRot / 2]) };
  if (usesRopeFreqs(hp)) {
    const input = b.input("rope_freqs", DType.F32, [hp.nRot / 2]);
    return { tensor: input, input };
  }
  return {};
}

/** Weights by name, created once per graph with the dtype `loadTensors` found (default F32). */
class Weights {
  readonly #cache = new Map<string, Tensor>();
  constructor(
    readonly b: GraphBuilder,
    readonly tensors: ModelTensors | undefined,
  ) {}

  get(name: string, ne: readonly number[]): Tensor {
    let t = this.#cache.get(name);
    if (!t) {
      const dtype = this.tensors?.byName.get(name)?.dtype ?? DType.F32;
      t = this.b.weight(name, dtype, ne);
      this.#cache.set(name, t);
    }
    return t;
  }
}

/** RMSNorm over dim 0 times a weight: F32 [n, …] → F32 [n, …], named `name`. */
export function buildNorm(
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

/** Feed-forward with SwiGLU: down(silu(gate·x) ⊙ up·x). F32 [nEmbd, nTokens] → same. */
export function buildFfn(
  b: GraphBuilder,
  x: Tensor,
  gate: Tensor,
  up: Tensor,
  down: Tensor,
  il: number,
): Tensor {
  const g = b.name(b.mulMat(gate, x), "ffn_gate", il);
  const u = b.name(b.mulMat(up, x), "ffn_up", il);
  const act = b.name(b.swiglu(g, u), "ffn_swiglu", il);
  return b.name(b.mulMat(down, act), "ffn_out", il);
}

/** The attention block's weights and settings for one layer. */
export interface AttentionLayer {
  readonly wq: Tensor;
  readonly wk: Tensor;
  readonly wv: Tensor;
  readonly wo: Tensor;
  readonly bq?: Tensor;
  readonly bk?: Tensor;
  readonly bv?: Tensor;
  /** F32 [headDimK]: per-head norms of Q and K (qwen3). */
  readonly qNorm?: Tensor;
  readonly kNorm?: Tensor;
  /** State F32/F16 [nHeadKv·headDimK, nCtx]. */
  readonly kCache: Tensor;
  /** State F32/F16 [nHeadKv·headDimV, nCtx]. */
  readonly vCache: Tensor;
}

/**
 * Self-attention of one layer: Q/K/V projections (+ biases, + per-head norms), RoPE, K and V
 * written into the cache at `cells` (SET_ROWS), the cache's first nKv cells read back as views
 * for ATTENTION with the mask, then the output projection. F32 [nEmbd, nTokens] → same.
 */
export function buildAttention(
  b: GraphBuilder,
  hp: Hparams,
  x: Tensor,
  w: AttentionLayer,
  inp: GraphInputs,
  rope: RopeParams,
  nKv: number,
  il: number,
  freqFactors: Tensor | undefined = inp.ropeFreqs,
): Tensor {
  const nTokens = x.ne[1];
  const proj = (wt: Tensor, bias: Tensor | undefined, name: string) => {
    const y = b.name(b.mulMat(wt, x), name, il);
    return bias ? b.name(b.add(y, bias), `${name}_b`, il) : y;
  };
  let q = proj(w.wq, w.bq, "Qcur");
  let k = proj(w.wk, w.bk, "Kcur");
  const v = proj(w.wv, w.bv, "Vcur");
  q = b.reshape(q, [hp.headDimK, hp.nHead, nTokens], `Qcur_heads-${il}`);
  k = b.reshape(k, [hp.headDimK, hp.nHeadKv, nTokens], `Kcur_heads-${il}`);
  if (w.qNorm) q = buildNorm(b, q, w.qNorm, hp.rmsEps, "Qcur_normed", il);
  if (w.kNorm) k = buildNorm(b, k, w.kNorm, hp.rmsEps, "Kcur_normed", il);
  q = b.name(b.rope(q, inp.positions, rope, freqFactors), "Qcur_rope", il);
  k = b.name(b.rope(k, inp.positions, rope, freqFactors), "Kcur_rope", il);

  const kRows = b.reshape(k, [hp.headDimK * hp.nHeadKv, nTokens], `Kcur_rows-${il}`);
  const kStored = b.name(b.setRows(w.kCache, kRows, inp.cells), "k_cache_store", il);
  const vStored = b.name(b.setRows(w.vCache, v, inp.cells), "v_cache_store", il);
  const kView = b.view(
    kStored,
    [hp.headDimK, hp.nHeadKv, nKv],
    [kStored.nb[0], rowBytes(kStored.dtype, hp.headDimK), kStored.nb[1]],
    0,
    `k_view-${il}`,
  );
  const vView = b.view(
    vStored,
    [hp.headDimV, hp.nHeadKv, nKv],
    [vStored.nb[0], rowBytes(vStored.dtype, hp.headDimV), vStored.nb[1]],
    0,
    `v_view-${il}`,
  );
  const attn = b.name(
    b.attention(q, kView, vView, inp.mask, { scale: 1 / Math.sqrt(hp.headDimK) }),
    "kqv_out",
    il,
  );
  const merged = b.reshape(attn, [hp.headDimV * hp.nHead, nTokens], `kqv_merged-${il}`);
  return b.name(b.mulMat(w.wo, merged), "attn_out", il);
}

/** The graph of a dense llama-like decoder: embeddings, nLayer blocks, final norm, logits of outIds. */
export function buildDecoder(hp: Hparams, f: ArchFeatures, o: BuildOptions): BuiltGraph {
  const { nTokens, nKv, nOutputs } = o;
  const nCtx = o.nCtx ?? nKv;
  const kvDtype = o.kvDtype ?? DType.F32;
  const b = new GraphBuilder();
  const W = new Weights(b, o.tensors);
  const factors = ropeFactors(b, hp, o.tensors);
  const inputs: GraphInputs = {
    tokens: b.input("tokens", DType.I32, [nTokens]),
    positions: b.input("positions", DType.I32, [nTokens]),
    cells: b.input("cells", DType.I32, [nTokens]),
    mask: o.spans ? b.input("kq_spans", DType.I32, [2, nTokens]) : b.input("mask", DType.F32, [nKv, nTokens]),
    outIds: b.input("out_ids", DType.I32, [nOutputs]),
    ...(factors.input ? { ropeFreqs: factors.input } : {}),
  };
  const rope = ropeParams(hp, f.ropeMode);
  const nQ = hp.nHead * hp.headDimK;
  const nK = hp.nHeadKv * hp.headDimK;
  const nV = hp.nHeadKv * hp.headDimV;

  let cur = b.name(b.getRows(W.get("token_embd.weight", [hp.nEmbd, hp.nVocab]), inputs.tokens), "inp_embd");
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    const inpL = cur;
    const normed = buildNorm(b, cur, W.get(`${p}attn_norm.weight`, [hp.nEmbd]), hp.rmsEps, "attn_norm", il);
    const layer: AttentionLayer = {
      wq: W.get(`${p}attn_q.weight`, [hp.nEmbd, nQ]),
      wk: W.get(`${p}attn_k.weight`, [hp.nEmbd, nK]),
      wv: W.get(`${p}attn_v.weight`, [hp.nEmbd, nV]),
      wo: W.get(`${p}attn_output.weight`, [hp.nHead * hp.headDimV, hp.nEmbd]),
      ...(f.qkvBias
        ? {
            bq: W.get(`${p}attn_q.bias`, [nQ]),
            bk: W.get(`${p}attn_k.bias`, [nK]),
            bv: W.get(`${p}attn_v.bias`, [nV]),
          }
        : {}),
      ...(f.qkNorm
        ? {
            qNorm: W.get(`${p}attn_q_norm.weight`, [hp.headDimK]),
            kNorm: W.get(`${p}attn_k_norm.weight`, [hp.headDimK]),
          }
        : {}),
      kCache: b.state(`k_cache-${il}`, kvDtype, [nK, nCtx]),
      vCache: b.state(`v_cache-${il}`, kvDtype, [nV, nCtx]),
    };
    const attn = buildAttention(b, hp, normed, layer, inputs, rope, nKv, il, factors.tensor);
    const ffnInp = b.name(b.add(attn, inpL), "ffn_inp", il);
    const ffnNormed = buildNorm(
      b,
      ffnInp,
      W.get(`${p}ffn_norm.weight`, [hp.nEmbd]),
      hp.rmsEps,
      "ffn_norm",
      il,
    );
    const ffn = buildFfn(
      b,
      ffnNormed,
      W.get(`${p}ffn_gate.weight`, [hp.nEmbd, hp.nFf]),
      W.get(`${p}ffn_up.weight`, [hp.nEmbd, hp.nFf]),
      W.get(`${p}ffn_down.weight`, [hp.nFf, hp.nEmbd]),
      il,
    );
    cur = b.name(b.add(ffn, ffnInp), "l_out", il);
  }
  const selected = b.name(b.getRows(cur, inputs.outIds), "out_rows");
  const outNormed = buildNorm(b, selected, W.get("output_norm.weight", [hp.nEmbd]), hp.rmsEps, "result_norm");
  const outWeight = o.tensors?.tiedOutput
    ? W.get("token_embd.weight", [hp.nEmbd, hp.nVocab])
    : W.get("output.weight", [hp.nEmbd, hp.nVocab]);
  const logits = b.output(b.name(b.mulMat(outWeight, outNormed), "result_output"));
  return { graph: b.build(), inputs, logits };
}
