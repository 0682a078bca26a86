import type { Tensor } from "@minfer/ir";
import type { AttentionWeights } from "./attention.js";
import type { FfnWeights } from "./ffn.js";
import type { Hparams } from "./hparams.js";
import type { ModelGraph } from "./model-graph.js";
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
