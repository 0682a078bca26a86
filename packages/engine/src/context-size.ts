import { DEFAULT_KV_DTYPE, type KvDtype, kvRowBytes } from "@minfer/kvcache";
import type { Hparams } from "@minfer/models";

/** The context size when none is asked for: this many tokens, or the model's training context if smaller. */
export const DEFAULT_N_CTX = 4096;

/** The micro-batch when none is asked for: the most tokens one decode graph runs. */
export const DEFAULT_N_UBATCH = 512;

/**
 * The KV cells a context gets for a requested size, as llama.cpp reads `-c`: undefined is the
 * default (min({@link DEFAULT_N_CTX}, the training context)), 0 is the training context, any other
 * value is taken as it is (checked by the caller).
 */
export function contextSize(requested: number | undefined, nCtxTrain: number): number {
  if (requested === undefined) return Math.min(DEFAULT_N_CTX, nCtxTrain);
  return requested === 0 ? nCtxTrain : requested;
}

/**
 * Bytes one layer's K and V caches take for `nCtx` cells in `kvDtype` (what an offload plan
 * reserves per layer on the device that holds it).
 */
export function kvBytesPerLayer(
  hp: Pick<Hparams, "nHeadKv" | "headDimK" | "headDimV">,
  nCtx: number,
  kvDtype: KvDtype = DEFAULT_KV_DTYPE,
): number {
  return (
    nCtx * (kvRowBytes(kvDtype, hp.nHeadKv * hp.headDimK) + kvRowBytes(kvDtype, hp.nHeadKv * hp.headDimV))
  );
}
