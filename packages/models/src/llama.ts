import type { ArchFeatures } from "./builders.js";
import { denseArch } from "./dense-arch.js";
import type { ArchDefaults } from "./hparams.js";

/** Llama (1, 2, 3): RMSNorm eps default 1e-5, RoPE base 10000, normal (adjacent-pair) RoPE as llama.cpp's converter permutes Q/K, optional llama3 scaling via `rope_freqs`. */
export const ARCH = "llama";

/** Defaults of keys a llama file may omit. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-5, ropeFreqBase: 10000 };

/** What this architecture's decoder uses (RoPE layout, biases, Q/K norms). */
export const FEATURES: ArchFeatures = { ropeMode: "normal", qkvBias: false, qkNorm: false };

export const { loadHparams, loadTensors, buildGraph } = denseArch(ARCH, DEFAULTS, FEATURES);
