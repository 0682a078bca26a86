import { DType, type Tensor } from "@minfer/ir";
import type { BuildOptions, LayerRope } from "./arch.js";
import type { AttentionOptions, AttentionWeights } from "./attention.js";
import { ModelError } from "./errors.js";
import type { FfnWeights } from "./ffn.js";
import type { KvInputs } from "./graph-inputs.js";
import type { Hparams } from "./hparams.js";
import type { ModelGraph } from "./model-graph.js";
import { rmsNorm } from "./norm.js";
import { projectionSizes } from "./tensor-specs.js";

/** Which optional attention tensors a block has. */
export interface AttentionExtras {
  /** `attn_q/k/v.bias`. */
  readonly qkvBias?: boolean;
  /** `attn_output.bias`. */
  readonly outBias?: boolean;
  /** `attn_q_norm`/`attn_k_norm` per head (F32 [headDimK]) or over the projection. */
  readonly qkNorm?: "head" | "projection";
}

/** Block `il`'s attention weights with separate Q, K, V projections. */
export function attentionWeights(
  g: ModelGraph,
  hp: Hparams,
  il: number,
  x: AttentionExtras = {},
): AttentionWeights {
  const p = `blk.${il}.`;
  const { nQ, nK, nV, nO } = projectionSizes(hp);
  const w = (name: string, ...ne: number[]) => g.weight(`${p}${name}`, ne);
  const norms =
    x.qkNorm === "head"
      ? { qNorm: w("attn_q_norm.weight", hp.headDimK), kNorm: w("attn_k_norm.weight", hp.headDimK) }
      : x.qkNorm === "projection"
        ? { qNorm: w("attn_q_norm.weight", nQ), kNorm: w("attn_k_norm.weight", nK) }
        : {};
  return {
    wq: w("attn_q.weight", hp.nEmbd, nQ),
    wk: w("attn_k.weight", hp.nEmbd, nK),
    wv: w("attn_v.weight", hp.nEmbd, nV),
    wo: w("attn_output.weight", nO, hp.nEmbd),
    ...(x.qkvBias ? { bq: w("attn_q.bias", nQ), bk: w("attn_k.bias", nK), bv: w("attn_v.bias", nV) } : {}),
    ...(x.outBias ? { bo: w("attn_output.bias", hp.nEmbd) } : {}),
    ...norms,
  };
}

/** Block `il`'s gated feed-forward weights (`ffn_gate`, `ffn_up`, `ffn_down`). */
export function ffnWeights(g: ModelGraph, hp: Hparams, il: number): FfnWeights {
  const p = `blk.${il}.`;
  return {
    gate: g.weight(`${p}ffn_gate.weight`, [hp.nEmbd, hp.nFf]),
    up: g.weight(`${p}ffn_up.weight`, [hp.nEmbd, hp.nFf]),
    down: g.weight(`${p}ffn_down.weight`, [hp.nFf, hp.nEmbd]),
  };
}

/** The token embeddings `token_embd.weight` F32/quantized [nEmbd, nVocab]. */
export function tokenEmbeddings(g: ModelGraph, hp: Hparams): Tensor {
  return g.weight("token_embd.weight", [hp.nEmbd, hp.nVocab]);
}

/** The output projection: `output.weight`, or the token embeddings when the file ties them. */
export function outputWeight(g: ModelGraph, hp: Hparams): Tensor {
  return g.tensors?.tiedOutput ? tokenEmbeddings(g, hp) : g.weight("output.weight", [hp.nEmbd, hp.nVocab]);
}

/**
 * Block `il`'s Q, K and V projections from the fused `attn_qkv.weight` [nEmbd, nQ + nK + nV] as
 * row views (and `attn_qkv.bias` split the same way when the file has it), or the separate ones.
 */
export function qkvWeights(
  g: ModelGraph,
  hp: Hparams,
  il: number,
): Pick<AttentionWeights, "wq" | "wk" | "wv" | "bq" | "bk" | "bv"> {
  const p = `blk.${il}.`;
  const { nQ, nK, nV } = projectionSizes(hp);
  if (!g.has(`${p}attn_qkv.weight`)) {
    const opt = (name: string, n: number) =>
      g.has(`${p}${name}`) ? g.weight(`${p}${name}`, [n]) : undefined;
    const [bq, bk, bv] = [opt("attn_q.bias", nQ), opt("attn_k.bias", nK), opt("attn_v.bias", nV)];
    return {
      wq: g.weight(`${p}attn_q.weight`, [hp.nEmbd, nQ]),
      wk: g.weight(`${p}attn_k.weight`, [hp.nEmbd, nK]),
      wv: g.weight(`${p}attn_v.weight`, [hp.nEmbd, nV]),
      ...(bq ? { bq } : {}),
      ...(bk ? { bk } : {}),
      ...(bv ? { bv } : {}),
    };
  }
  const w = g.weight(`${p}attn_qkv.weight`, [hp.nEmbd, nQ + nK + nV]);
  const out = {
    wq: g.rows(w, 0, nQ, `${p}attn_q.view`),
    wk: g.rows(w, nQ, nK, `${p}attn_k.view`),
    wv: g.rows(w, nQ + nK, nV, `${p}attn_v.view`),
  };
  if (!g.has(`${p}attn_qkv.bias`)) return out;
  const bias = g.weight(`${p}attn_qkv.bias`, [nQ + nK + nV]);
  const part = (first: number, n: number, name: string) =>
    g.b.view(bias, [n], [bias.nb[0]], first * bias.nb[0], name);
  return {
    ...out,
    bq: part(0, nQ, `${p}attn_q_bias.view`),
    bk: part(nQ, nK, `${p}attn_k_bias.view`),
    bv: part(nQ + nK, nV, `${p}attn_v_bias.view`),
  };
}

/** Block `il`'s feed-forward with gate and up fused in `ffn_up.weight` [nEmbd, 2·nFf] (gate first), as row views. */
export function fusedGateUpWeights(g: ModelGraph, hp: Hparams, il: number): FfnWeights {
  const p = `blk.${il}.`;
  const w = g.weight(`${p}ffn_up.weight`, [hp.nEmbd, 2 * hp.nFf]);
  return {
    gate: g.rows(w, 0, hp.nFf, `${p}ffn_gate.view`),
    up: g.rows(w, hp.nFf, hp.nFf, `${p}ffn_up.view`),
    down: g.weight(`${p}ffn_down.weight`, [hp.nFf, hp.nEmbd]),
  };
}

/**
 * A layer's attention settings: heads from `hp`, q·k scaled by 1/√headDim unless `scale` says
 * otherwise, the layer's RoPE with its factors, RMSNorm eps for Q/K norms, and its KV cache.
 */
export function attentionSettings(
  g: ModelGraph,
  hp: Hparams,
  o: BuildOptions,
  rope: LayerRope,
  kv: KvInputs,
  extra: { readonly scale?: number; readonly softcap?: number } = {},
): AttentionOptions {
  const factors = g.ropeFactors(rope);
  return {
    heads: hp,
    rope: rope.params,
    ...(factors ? { ropeFactors: factors } : {}),
    scale: extra.scale ?? 1 / Math.sqrt(hp.headDimK),
    ...(extra.softcap ? { softcap: extra.softcap } : {}),
    normEps: hp.rmsEps,
    kv,
    kvDtype: o.kvDtype ?? DType.F32,
  };
}

/**
 * The rows of `out_ids` (`out_rows`), the final RMSNorm (`result_norm`) and the output projection:
 * logits F32 [nVocab, nOutputs] named `name`. A graph built for `embeddings` ends at the norm (the
 * hidden state, as llama.cpp's embeddings); one built for `rank` projects it by the classifier
 * `cls.output.weight` (a decoder reranker's, which llama.cpp's converter makes from the output
 * rows of its answer tokens) and takes the softmax over the classes, as llama.cpp does.
 */
export function outputLogits(
  g: ModelGraph,
  hp: Hparams,
  cur: Tensor,
  outIds: Tensor,
  name = "result_output",
): Tensor {
  const { b } = g;
  const selected = b.name(b.getRows(cur, outIds), "out_rows");
  const normed = rmsNorm(b, selected, g.weight("output_norm.weight", [hp.nEmbd]), hp.rmsEps, "result_norm");
  if (g.output === "embeddings") return normed;
  if (g.output === "rank") return classifierScores(g, hp, normed, { softmax: true });
  return b.name(b.mulMat(outputWeight(g, hp), normed), name);
}

/**
 * A classifier head over pooled rows F32 [nEmbd, n]: `cls.weight`/`cls.bias` then tanh (BERT's
 * pooler) when the file has them, then `cls.output.weight`/`cls.output.bias` when it has them;
 * with `softmax`, the softmax over the classes. F32 [classes, n], named `result_rank`. A file with
 * neither is INVALID_ARGUMENT: rank pooling needs a classifier.
 */
export function classifierScores(
  g: ModelGraph,
  hp: Hparams,
  x: Tensor,
  o: { readonly softmax?: boolean } = {},
): Tensor {
  const { b } = g;
  const hasPooler = g.has("cls.weight");
  const out = g.tensors?.byName.get("cls.output.weight");
  if (!hasPooler && !out)
    throw new ModelError(
      "INVALID_ARGUMENT",
      "rank pooling needs a classifier head (cls.weight or cls.output.weight); this model has none",
    );
  let cur = x;
  if (hasPooler) {
    cur = b.name(b.mulMat(g.weight("cls.weight", [hp.nEmbd, hp.nEmbd]), cur), "cls");
    if (g.has("cls.bias")) cur = b.name(b.add(cur, g.weight("cls.bias", [hp.nEmbd])), "cls_b");
    cur = b.name(b.tanh(cur), "cls_tanh");
  }
  if (out) {
    const classes = out.ne[1] ?? 1;
    cur = b.name(b.mulMat(g.weight("cls.output.weight", [hp.nEmbd, classes]), cur), "cls_out");
    if (g.has("cls.output.bias"))
      cur = b.name(b.add(cur, g.weight("cls.output.bias", [classes])), "cls_out_b");
  }
  if (o.softmax) cur = b.softmax(cur);
  return b.name(cur, "result_rank");
}
