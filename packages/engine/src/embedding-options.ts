import { type EncoderHparams, POOLINGS, type Pooling } from "@minfer/models";
import type { BatchLimits } from "./batch.js";
import { EngineError } from "./errors.js";
import type { Model } from "./model.js";

/**
 * The pooling a context computes embeddings with, or undefined for logits: the option, else the
 * file's `pooling_type`, else "mean" for an encoder and "last" for a decoder (the token that has
 * seen the whole text). An encoder without `embeddings` is INVALID_ARGUMENT: it has no logits.
 */
export function embeddingPooling(
  model: Model,
  o: { readonly embeddings?: boolean; readonly pooling?: Pooling },
): Pooling | undefined {
  if (o.embeddings !== undefined && typeof o.embeddings !== "boolean")
    throw new EngineError("INVALID_ARGUMENT", `embeddings must be a boolean, got ${String(o.embeddings)}`);
  if (o.pooling !== undefined && !POOLINGS.includes(o.pooling))
    throw new EngineError(
      "INVALID_ARGUMENT",
      `pooling must be one of ${POOLINGS.join(", ")}, got ${JSON.stringify(o.pooling)}`,
    );
  const encoder = model.arch.ENCODER === true;
  if (!o.embeddings) {
    if (encoder)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `${model.arch.ARCH} is an embedding model (an encoder without a vocabulary head): make the Context with embeddings: true`,
      );
    if (o.pooling !== undefined)
      throw new EngineError(
        "INVALID_ARGUMENT",
        "pooling applies to embeddings: give embeddings: true with it",
      );
    return undefined;
  }
  return o.pooling ?? model.hparams.pooling ?? (encoder ? "mean" : "last");
}

/** What a batch may hold beyond the vocabulary: an encoder's segment ids and absolute positions. */
export function batchLimits(model: Model): BatchLimits {
  if (!model.arch.ENCODER) return {};
  const hp = model.hparams as EncoderHparams;
  return {
    nTokenTypes: model.tensors.byName.has("token_types.weight") ? hp.nTokenTypes : 1,
    ...(model.tensors.byName.has("position_embd.weight") ? { posLimit: hp.nCtxTrain } : {}),
  };
}
