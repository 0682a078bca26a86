import type { ArchFeatures } from "./builders.js";
import { denseArch } from "./dense-arch.js";
import type { ArchDefaults } from "./hparams.js";

/** Qwen3 (dense): per-head RMSNorm of Q and K before RoPE, head size from `attention.key_length` (not nEmbd / nHead), NeoX RoPE, eps default 1e-6, RoPE base default 1e6. */
export const ARCH = "qwen3";

/** Defaults of keys a qwen3 file may omit. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 1000000 };

/** What this architecture's decoder uses (RoPE layout, biases, Q/K norms). */
export const FEATURES: ArchFeatures = { ropeMode: "neox", qkvBias: false, qkNorm: true };

export const { loadHparams, loadTensors, buildGraph } = denseArch(ARCH, DEFAULTS, FEATURES);
