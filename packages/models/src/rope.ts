import type { RopeParams } from "@minfer/ir";
import type { LayerRope } from "./arch.js";
import type { Hparams } from "./hparams.js";
import type { ModelTensors } from "./tensors.js";

/** The tensor llama.cpp's converter stores llama3 RoPE frequency factors in. */
export const ROPE_FREQS = "rope_freqs.weight";

/**
 * A model's RoPE with one setting for every layer: the file's `rope_freqs.weight` when it has one
 * (llama.cpp uses it whatever the scaling keys say), else the llama3 factors computed from the
 * scaling keys (the constant input `rope_freqs`), else no factors.
 */
export function uniformRope(
  hp: Hparams,
  mode: RopeParams["mode"],
  tensors: ModelTensors | undefined,
): LayerRope {
  const params = ropeParams(hp, mode);
  if (tensors?.byName.has(ROPE_FREQS)) return { params, factors: { weight: ROPE_FREQS } };
  if (usesRopeFreqs(hp)) return { params, factors: { constant: "rope_freqs", data: llama3RopeFreqs(hp) } };
  return { params };
}

/**
 * The ROPE op's parameters for a model: `mode` is the architecture's pair layout ("normal" for
 * llama as converted by llama.cpp, "neox" for qwen2/qwen3); linear and YaRN scaling become
 * `freqScale = 1 / factor` (YaRN also mixes by the ramp: extFactor 1); llama3 and LongRoPE scaling
 * are carried by frequency factors instead (llama3's from {@link llama3RopeFreqs}, LongRoPE's from the
 * file), so freqScale stays 1; cos and sin are scaled by `rope.scaling.attn_factor` whenever the
 * file has it (YaRN multiplies it by its own magnitude factor).
 */
export function ropeParams(hp: Hparams, mode: RopeParams["mode"]): RopeParams {
  const s = hp.ropeScaling;
  const scaled = s.type === "linear" || s.type === "yarn";
  return {
    mode,
    nDims: hp.nRot,
    freqBase: hp.ropeFreqBase,
    freqScale: scaled ? 1 / s.factor : 1,
    nCtxOrig: s.originalContextLength,
    extFactor: s.type === "yarn" ? 1 : 0,
    // llama.cpp passes `rope.scaling.attn_factor` to every RoPE whatever the scaling type: Phi-3's
    // LongRoPE files carry it without a type key.
    attnFactor: s.attnFactor,
    betaFast: 32,
    betaSlow: 1,
  };
}

/** Whether the model's ROPE takes frequency factors (the `rope_freqs` input). */
export function usesRopeFreqs(hp: Hparams): boolean {
  return hp.ropeScaling.type === "llama3";
}

/**
 * Llama 3 frequency factors, F32 [nRot / 2], the ROPE op's third input (the angle of pair i is
 * divided by factor i). With freq_i = base^(−2i/nRot), wavelen_i = 2π / freq_i,
 * L = original_context_length, lo = L / low_freq_factor, hi = L / high_freq_factor:
 *
 * - wavelen_i < hi (high frequencies): factor 1 (unchanged);
 * - wavelen_i > lo (low frequencies): factor = rope.scaling.factor;
 * - otherwise smooth = (L / wavelen_i − low_freq_factor) / (high_freq_factor − low_freq_factor)
 *   and factor = 1 / ((1 − smooth) / rope.scaling.factor + smooth).
 *
 * This is the formula of Meta's reference and of llama.cpp's converter (which stores it as
 * `rope_freqs.weight`).
 */
export function llama3RopeFreqs(hp: Hparams): Float32Array {
  return llama3FreqFactors({ ...hp.ropeScaling, freqBase: hp.ropeFreqBase, nRot: hp.nRot });
}

/** What {@link llama3FreqFactors} needs: the scaling settings, the RoPE base and the rotated dims. */
export interface Llama3Scaling {
  readonly factor: number;
  readonly originalContextLength: number;
  readonly lowFreqFactor: number;
  readonly highFreqFactor: number;
  readonly freqBase: number;
  readonly nRot: number;
}

/** The factors of {@link llama3RopeFreqs} from the settings alone (what a converter has). */
export function llama3FreqFactors(s: Llama3Scaling): Float32Array {
  const { factor, originalContextLength: L, lowFreqFactor: low, highFreqFactor: high } = s;
  const out = new Float32Array(s.nRot / 2);
  const loWavelen = L / low;
  const hiWavelen = L / high;
  for (let i = 0; i < out.length; i++) {
    const freq = s.freqBase ** ((-2 * i) / s.nRot);
    const wavelen = (2 * Math.PI) / freq;
    if (wavelen < hiWavelen) out[i] = 1;
    else if (wavelen > loWavelen) out[i] = factor;
    else {
      const smooth = (L / wavelen - low) / (high - low);
      out[i] = 1 / ((1 - smooth) / factor + smooth);
    }
  }
  return out;
}
