import type { Hparams } from "./hparams.js";
import type { TensorSpec } from "./tensors.js";

/** A matrix spec (any weight dtype). */
export const matrix = (name: string, ...ne: number[]): TensorSpec => ({ name, ne, kind: "matrix" });
/** A vector spec (F32: norms, biases). */
export const vector = (name: string, n: number): TensorSpec => ({ name, ne: [n], kind: "vector" });

/** Width of the Q, K and V projections. */
export function projectionSizes(hp: Hparams): { nQ: number; nK: number; nV: number; nO: number } {
  return {
    nQ: hp.nHead * hp.headDimK,
    nK: hp.nHeadKv * hp.headDimK,
    nV: hp.nHeadKv * hp.headDimV,
    nO: hp.nHead * hp.headDimV,
  };
}

/** `token_embd`, `output_norm` and `output` (absent when tied; never listed with `tied`: the architecture always ties). */
export function* headSpecs(hp: Hparams, o: { tied?: boolean } = {}): Generator<TensorSpec> {
  yield matrix("token_embd.weight", hp.nEmbd, hp.nVocab);
  yield vector("output_norm.weight", hp.nEmbd);
  if (!o.tied) yield matrix("output.weight", hp.nEmbd, hp.nVocab);
}

/** `attn_q/k/v/output` of block `il` (separate projections). */
export function* attentionSpecs(hp: Hparams, il: number): Generator<TensorSpec> {
  const p = `blk.${il}.`;
  const { nQ, nK, nV, nO } = projectionSizes(hp);
  yield matrix(`${p}attn_q.weight`, hp.nEmbd, nQ);
  yield matrix(`${p}attn_k.weight`, hp.nEmbd, nK);
  yield matrix(`${p}attn_v.weight`, hp.nEmbd, nV);
  yield matrix(`${p}attn_output.weight`, nO, hp.nEmbd);
}

/** `ffn_gate/up/down` of block `il`. */
export function* ffnSpecs(hp: Hparams, il: number): Generator<TensorSpec> {
  const p = `blk.${il}.`;
  yield matrix(`${p}ffn_gate.weight`, hp.nEmbd, hp.nFf);
  yield matrix(`${p}ffn_up.weight`, hp.nEmbd, hp.nFf);
  yield matrix(`${p}ffn_down.weight`, hp.nFf, hp.nEmbd);
}

/**
 * Block `il`'s Q, K, V: the fused `attn_qkv.weight` when the file has it (`fused`), else separate
 * ones; biases (fused or separate) optional.
 */
export function* qkvSpecs(hp: Hparams, il: number, fused: boolean): Generator<TensorSpec> {
  const p = `blk.${il}.`;
  const { nQ, nK, nV } = projectionSizes(hp);
  if (fused) {
    yield matrix(`${p}attn_qkv.weight`, hp.nEmbd, nQ + nK + nV);
    yield { ...vector(`${p}attn_qkv.bias`, nQ + nK + nV), optional: true };
    return;
  }
  yield matrix(`${p}attn_q.weight`, hp.nEmbd, nQ);
  yield matrix(`${p}attn_k.weight`, hp.nEmbd, nK);
  yield matrix(`${p}attn_v.weight`, hp.nEmbd, nV);
  yield { ...vector(`${p}attn_q.bias`, nQ), optional: true };
  yield { ...vector(`${p}attn_k.bias`, nK), optional: true };
  yield { ...vector(`${p}attn_v.bias`, nV), optional: true };
}

/** Whether a file keeps block 0's Q, K and V in one `attn_qkv.weight`. */
export function hasFusedQkv(infos: Iterable<{ readonly name: string }>): boolean {
  for (const t of infos) if (t.name === "blk.0.attn_qkv.weight") return true;
  return false;
}
