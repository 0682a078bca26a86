// RoPE settings of a config.json, in either spelling (transformers 4's `rope_theta` +
// `rope_scaling`, transformers 5's `rope_parameters`, whole or split into `full_attention` /
// `sliding_attention`), read as llama.cpp's converter reads them (TextModel.__init__), and the
// `<arch>.rope.*` keys its base class writes.
import type { GgufKV } from "@minfer/gguf";
import { llama3FreqFactors } from "@minfer/models";
import { ConvertError } from "./errors.js";
import type { ConfigReader } from "./hf-config.js";
import { f32, str, u32 } from "./kv.js";

type Json = Record<string, unknown>;

export interface RopeScaling {
  /** `rope_type` (or `type`), lowercased. */
  type: string;
  factor?: number;
  originalContextLength?: number;
  lowFreqFactor?: number;
  highFreqFactor?: number;
  longFactor?: number[];
  shortFactor?: number[];
  attentionFactor?: number;
  extrapolationFactor?: number;
  betaFast?: number;
  betaSlow?: number;
}

export interface Rope {
  /** The (global) base frequency, if the config or class default gives one. */
  theta?: number;
  /** The sliding-window layers' base frequency, if separate. */
  localTheta?: number;
  /** The global layers' scaling; undefined for none ("default"). */
  scaling?: RopeScaling;
  /** The sliding-window layers' own scaling (transformers 5), if any. */
  localScaling?: RopeScaling;
  /** `partial_rotary_factor` (top level or in rope_parameters). */
  partialRotaryFactor?: number;
}

const THETA_KEYS = [
  "global_rope_theta",
  "rope_global_theta",
  "rope_theta_global",
  "rope_theta",
  "rotary_emb_base",
];
const LOCAL_THETA_KEYS = [
  "local_rope_theta",
  "rope_local_theta",
  "rope_theta_local",
  "swa_rope_theta",
  "rope_local_base_freq",
];

function scaling(r: ConfigReader, where: string, p: Json | undefined): RopeScaling | undefined {
  if (!p) return undefined;
  const type = String(p.rope_type ?? p.type ?? "").toLowerCase();
  if (type === "" || type === "default") return undefined;
  const n = (k: string): number | undefined => {
    const v = p[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v))
      throw r.bad(`${where}.${k}`, `is ${JSON.stringify(v)}; expected a number`);
    return v;
  };
  const list = (k: string): number[] | undefined => {
    const v = p[k];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === "number" && Number.isFinite(x)))
      throw r.bad(`${where}.${k}`, "is not a list of numbers");
    return v as number[];
  };
  return {
    type,
    factor: n("factor"),
    originalContextLength: n("original_max_position_embeddings"),
    lowFreqFactor: n("low_freq_factor"),
    highFreqFactor: n("high_freq_factor"),
    longFactor: list("long_factor"),
    shortFactor: list("short_factor"),
    attentionFactor: n("attention_factor") ?? n("attn_factor"),
    extrapolationFactor: n("extrapolation_factor"),
    betaFast: n("beta_fast"),
    betaSlow: n("beta_slow"),
  };
}

/** The RoPE settings of `r` (see the file comment). */
export function readRope(r: ConfigReader): Rope {
  const params = (r.value("rope_parameters") ?? r.value("rope_scaling") ?? {}) as Json;
  if (typeof params !== "object" || Array.isArray(params))
    throw r.bad("rope_scaling", `is ${JSON.stringify(params)}; expected an object`);
  const split = "full_attention" in params || "sliding_attention" in params;
  const full = (split ? params.full_attention : params) as Json | undefined;
  const sliding = (split ? params.sliding_attention : undefined) as Json | undefined;
  const theta = (p: Json | undefined) => (typeof p?.rope_theta === "number" ? p.rope_theta : undefined);
  const first = (keys: string[]) => {
    for (const k of keys) {
      const v = r.optNum(k);
      if (v !== undefined) return v;
    }
    return undefined;
  };
  const partial =
    r.optNum("partial_rotary_factor") ??
    (typeof params.partial_rotary_factor === "number" ? params.partial_rotary_factor : undefined);
  return {
    theta: theta(full) ?? first(THETA_KEYS),
    localTheta: split ? theta(sliding) : first(LOCAL_THETA_KEYS),
    scaling: scaling(r, split ? "rope_parameters.full_attention" : "rope_scaling", full),
    localScaling: scaling(r, "rope_parameters.sliding_attention", sliding),
    partialRotaryFactor: partial,
  };
}

/**
 * The `<arch>.rope.scaling.*` keys of llama.cpp's base converter: linear and yarn (each with a
 * factor) and longrope as keys; llama3 travels as the `rope_freqs.weight` tensor instead (see
 * {@link llama3RopeFactors}). `allowed` lists the types the architecture accepts; any other is
 * refused by name.
 */
export function ropeScalingKeys(
  arch: string,
  r: ConfigReader,
  s: RopeScaling | undefined,
  allowed: readonly string[],
): GgufKV[] {
  if (!s) return [];
  if (
    !allowed.includes(s.type) ||
    ((s.type === "linear" || s.type === "yarn" || s.type === "llama3") && s.factor === undefined)
  )
    throw r.unsupported(
      `rope scaling ${JSON.stringify(s.type)}${s.factor === undefined ? " without a factor" : ""} is not supported for ${arch}; supported: ${allowed.length ? allowed.join(", ") : "none"}`,
    );
  const kv: GgufKV[] = [];
  if (s.type === "linear")
    kv.push(str(`${arch}.rope.scaling.type`, "linear"), f32(`${arch}.rope.scaling.factor`, s.factor!));
  else if (s.type === "yarn") {
    if (s.originalContextLength === undefined)
      throw new ConvertError(
        "MISSING_CONFIG_KEY",
        `${r.path}: yarn rope scaling needs "original_max_position_embeddings" and has none`,
      );
    kv.push(
      str(`${arch}.rope.scaling.type`, "yarn"),
      f32(`${arch}.rope.scaling.factor`, s.factor!),
      u32(`${arch}.rope.scaling.original_context_length`, s.originalContextLength),
    );
    if (s.extrapolationFactor !== undefined)
      kv.push(f32(`${arch}.rope.scaling.yarn_ext_factor`, s.extrapolationFactor));
    if (s.attentionFactor !== undefined)
      kv.push(f32(`${arch}.rope.scaling.yarn_attn_factor`, s.attentionFactor));
    if (s.betaFast !== undefined) kv.push(f32(`${arch}.rope.scaling.yarn_beta_fast`, s.betaFast));
    if (s.betaSlow !== undefined) kv.push(f32(`${arch}.rope.scaling.yarn_beta_slow`, s.betaSlow));
  } else if (s.type === "longrope" || s.type === "su") kv.push(str(`${arch}.rope.scaling.type`, "longrope"));
  return kv;
}

/**
 * Llama 3 RoPE frequency factors (`rope_freqs.weight`, F32 [headDim / 2]), as llama.cpp's
 * converter computes them: wavelengths shorter than original_ctx / high_freq_factor keep their
 * frequency, longer than original_ctx / low_freq_factor are divided by `factor`, and the band
 * between is interpolated smoothly.
 */
export function llama3RopeFactors(s: RopeScaling, theta: number, headDim: number): Float32Array {
  return llama3FreqFactors({
    factor: s.factor!,
    lowFreqFactor: s.lowFreqFactor ?? 1,
    highFreqFactor: s.highFreqFactor ?? 4,
    originalContextLength: s.originalContextLength ?? 8192,
    freqBase: theta,
    nRot: headDim,
  });
}
