import type { GgufMetadata } from "@minfer/gguf";
import type { ArchFeatures, BuildOptions, BuiltGraph } from "./builders.js";
import { ModelError } from "./errors.js";
import type { Hparams } from "./hparams.js";
import * as llama from "./llama.js";
import * as qwen2 from "./qwen2.js";
import * as qwen3 from "./qwen3.js";
import type { ModelTensors, TensorInfo } from "./tensors.js";

/** The entry points every architecture module exports. */
export interface ArchModule {
  readonly ARCH: string;
  /** The decoder's features (the KV-shift graph needs its RoPE layout). */
  readonly FEATURES: ArchFeatures;
  loadHparams(meta: GgufMetadata): Hparams;
  loadTensors(hp: Hparams, infos: Iterable<TensorInfo>): ModelTensors;
  buildGraph(hp: Hparams, options: BuildOptions): BuiltGraph;
}

const MODULES: ReadonlyMap<string, ArchModule> = new Map([llama, qwen2, qwen3].map((m) => [m.ARCH, m]));

/** The architecture names this package supports (`general.architecture` values). */
export const SUPPORTED_ARCHS: readonly string[] = [...MODULES.keys()];

/** The module of an architecture; an unknown one is UNKNOWN_ARCH listing the supported ones. */
export function architecture(name: string): ArchModule {
  const m = MODULES.get(name);
  if (!m)
    throw new ModelError(
      "UNKNOWN_ARCH",
      `architecture "${name}" is not supported; supported: ${SUPPORTED_ARCHS.join(", ")}`,
      { supported: SUPPORTED_ARCHS },
    );
  return m;
}
