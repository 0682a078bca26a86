import { GgufError } from "../errors.js";

/** Architectures `synthesizeModel` writes. */
export const SYNTH_ARCHS = ["llama", "qwen2", "qwen3"] as const;
export type SynthArch = (typeof SYNTH_ARCHS)[number];

/** The shapes of a real model (or a tiny test model), for random weights at those shapes. */
export interface SynthPreset {
  /** The architecture the preset belongs to; `undefined` for shape-only presets usable with any. */
  readonly arch: SynthArch | undefined;
  readonly nLayer: number;
  readonly nEmbd: number;
  readonly nHead: number;
  readonly nHeadKv: number;
  readonly nFf: number;
  /** Per-head dimension; defaults to nEmbd / nHead. */
  readonly headDim?: number;
  /** No `output.weight`: the output projection reuses `token_embd.weight`. */
  readonly tiedOutput: boolean;
  readonly contextLength: number;
  readonly ropeFreqBase: number;
  readonly rmsEps: number;
}

/**
 * Presets. The named ones follow the published configurations of Qwen2-0.5B, Qwen2-7B, Qwen3-0.6B,
 * Llama-3.2-1B and Llama-3.1-8B (layers, widths, heads, KV heads, FFN width, head size, tying).
 */
export const SYNTH_PRESETS: Readonly<Record<string, SynthPreset>> = {
  tiny: {
    arch: undefined,
    nLayer: 2,
    nEmbd: 64,
    nHead: 4,
    nHeadKv: 2,
    nFf: 128,
    tiedOutput: false,
    contextLength: 2048,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
  },
  /** Still small, with the 64-wide heads real models have (what a Q8_0 KV cache needs). */
  small: {
    arch: undefined,
    nLayer: 2,
    nEmbd: 256,
    nHead: 4,
    nHeadKv: 2,
    nFf: 512,
    tiedOutput: false,
    contextLength: 2048,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
  },
  "qwen2-0.5b": {
    arch: "qwen2",
    nLayer: 24,
    nEmbd: 896,
    nHead: 14,
    nHeadKv: 2,
    nFf: 4864,
    tiedOutput: false,
    contextLength: 32768,
    ropeFreqBase: 1000000,
    rmsEps: 1e-6,
  },
  "qwen2-7b": {
    arch: "qwen2",
    nLayer: 28,
    nEmbd: 3584,
    nHead: 28,
    nHeadKv: 4,
    nFf: 18944,
    tiedOutput: false,
    contextLength: 32768,
    ropeFreqBase: 1000000,
    rmsEps: 1e-6,
  },
  "qwen3-0.6b": {
    arch: "qwen3",
    nLayer: 28,
    nEmbd: 1024,
    nHead: 16,
    nHeadKv: 8,
    nFf: 3072,
    headDim: 128,
    tiedOutput: true,
    contextLength: 40960,
    ropeFreqBase: 1000000,
    rmsEps: 1e-6,
  },
  "llama-1b": {
    arch: "llama",
    nLayer: 16,
    nEmbd: 2048,
    nHead: 32,
    nHeadKv: 8,
    nFf: 8192,
    headDim: 64,
    tiedOutput: true,
    contextLength: 131072,
    ropeFreqBase: 500000,
    rmsEps: 1e-5,
  },
  "llama-8b": {
    arch: "llama",
    nLayer: 32,
    nEmbd: 4096,
    nHead: 32,
    nHeadKv: 8,
    nFf: 14336,
    tiedOutput: false,
    contextLength: 131072,
    ropeFreqBase: 500000,
    rmsEps: 1e-5,
  },
};

/** Resolves a preset name and architecture; an unknown name or a mismatched pair is an error. */
export function resolvePreset(
  name: string,
  arch: string | undefined,
): { preset: SynthPreset; arch: SynthArch } {
  const preset = SYNTH_PRESETS[name];
  if (!preset) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `unknown preset "${name}"; presets: ${Object.keys(SYNTH_PRESETS).join(", ")}`,
    );
  }
  if (arch !== undefined && !SYNTH_ARCHS.includes(arch as SynthArch)) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `unknown architecture "${arch}"; supported: ${SYNTH_ARCHS.join(", ")}`,
    );
  }
  const chosen = (arch as SynthArch | undefined) ?? preset.arch;
  if (!chosen) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `preset "${name}" fits any architecture; choose one with --arch (${SYNTH_ARCHS.join(", ")})`,
    );
  }
  if (preset.arch && chosen !== preset.arch) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `preset "${name}" is a ${preset.arch} model; use --arch ${preset.arch} or another preset`,
    );
  }
  return { preset, arch: chosen };
}
