import type { ArchFeatures } from "./builders.js";
import { denseArch } from "./dense-arch.js";
import type { ArchDefaults } from "./hparams.js";

/** Qwen2 (and Qwen2.5): Q/K/V biases, NeoX RoPE, RMSNorm eps default 1e-6, RoPE base default 1e6. */
export const ARCH = "qwen2";

/** Defaults of keys a qwen2 file may omit. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 1000000 };

/** What this architecture's decoder uses (RoPE layout, biases, Q/K norms). */
export const FEATURES: ArchFeatures = { ropeMode: "neox", qkvBias: true, qkNorm: false };

export const { loadHparams, loadTensors, buildGraph } = denseArch(ARCH, DEFAULTS, FEATURES);
