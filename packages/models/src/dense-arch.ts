import type { GgufMetadata } from "@minfer/gguf";
import {
  type ArchFeatures,
  type BuildOptions,
  type BuiltGraph,
  buildDecoder,
  decoderTensorSpecs,
} from "./builders.js";
import { type ArchDefaults, type Hparams, readHparams } from "./hparams.js";
import { checkBlockCount, checkTensors, type ModelTensors, type TensorInfo } from "./tensors.js";

/** The entry points of a dense llama-like decoder, from what sets one apart from another. */
export interface DenseArch {
  /** Hyperparameters from `<arch>.*` keys; a missing required key is MISSING_KEY naming it. */
  loadHparams(meta: GgufMetadata): Hparams;
  /**
   * Checks the file's tensors (presence, shape, dtype class) and `block_count` against them;
   * `output.weight` may be absent (tied).
   */
  loadTensors(hp: Hparams, infos: Iterable<TensorInfo>): ModelTensors;
  /** The graph of one micro-batch: logits F32 [nVocab, nOutputs]. */
  buildGraph(hp: Hparams, options: BuildOptions): BuiltGraph;
}

export function denseArch(arch: string, defaults: ArchDefaults, features: ArchFeatures): DenseArch {
  return {
    loadHparams: (meta) => readHparams(meta, arch, defaults),
    loadTensors: (hp, infos) => {
      const table = [...infos];
      checkBlockCount(`${arch}.block_count`, hp.nLayer, table, (il) => `blk.${il}.attn_norm.weight`);
      return checkTensors(table, decoderTensorSpecs(hp, features));
    },
    buildGraph: (hp, options) => buildDecoder(hp, features, options),
  };
}
