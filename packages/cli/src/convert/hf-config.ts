// config.json of a Hugging Face checkpoint → the model's hyperparameters and `<arch>.*` GGUF keys,
// with the names and defaults llama.cpp's converter uses.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type GgufKV, GgufValueType } from "@minfer/gguf";
import { llama3FreqFactors } from "@minfer/models";
import { ConvertError } from "./errors.js";

/** Architectures `minfer convert` reads, by Hugging Face class and model_type. */
export const ARCHITECTURES = {
  LlamaForCausalLM: "llama",
  Qwen2ForCausalLM: "qwen2",
  Qwen3ForCausalLM: "qwen3",
} as const;
export type Arch = (typeof ARCHITECTURES)[keyof typeof ARCHITECTURES];

/** Context lengths of the transformers config classes when config.json has none. */
const DEFAULT_CTX: Record<Arch, number> = { llama: 2048, qwen2: 32768, qwen3: 32768 };

export interface RopeScalingConfig {
  type: "linear" | "yarn" | "llama3";
  factor: number;
  originalContextLength?: number;
  lowFreqFactor?: number;
  highFreqFactor?: number;
}

export interface HfConfig {
  arch: Arch;
  /** The class name config.json gives (or model_type). */
  source: string;
  nEmbd: number;
  nFf: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  rmsEps: number;
  ropeTheta: number;
  ropeScaling?: RopeScalingConfig;
  nCtx: number;
  /** config.json's vocab_size (undefined when absent). */
  vocabSize?: number;
  tied: boolean;
  bosId?: number;
  eosId?: number;
  raw: Record<string, unknown>;
}

/** Reads `config.json` of `dir`; an unknown architecture or a missing required key is refused by name. */
export function readHfConfig(dir: string): HfConfig {
  const path = join(dir, "config.json");
  if (!existsSync(path)) throw new ConvertError("MISSING_FILE", `${dir} has no config.json`);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (e) {
    throw new ConvertError("BAD_FILE", `${path}: not valid JSON (${(e as Error).message})`);
  }
  const archs = Array.isArray(raw.architectures) ? raw.architectures.map(String) : [];
  const modelType = typeof raw.model_type === "string" ? raw.model_type : undefined;
  const known = Object.entries(ARCHITECTURES);
  let arch: Arch | undefined;
  let source = "";
  for (const a of archs) {
    const hit = known.find(([cls]) => cls === a);
    if (hit) {
      [source, arch] = hit;
      break;
    }
  }
  if (!arch && archs.length === 0 && modelType) {
    const hit = known.find(([, t]) => t === modelType);
    if (hit) [source, arch] = [modelType, hit[1]];
  }
  if (!arch) {
    const named = archs.length ? archs.join(", ") : (modelType ?? "(none given)");
    throw new ConvertError(
      "UNKNOWN_ARCH",
      `${path}: architecture ${named} is not supported; supported: ${Object.keys(ARCHITECTURES).join(", ")}`,
    );
  }
  const num = (key: string, opts: { int?: boolean } = {}): number | undefined => {
    const v = raw[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0 || (opts.int && !Number.isInteger(v)))
      throw new ConvertError(
        "BAD_CONFIG_KEY",
        `${path}: "${key}" is ${JSON.stringify(v)}; expected a positive ${opts.int ? "integer" : "number"}`,
      );
    return v;
  };
  const req = (key: string): number => {
    const v = num(key, { int: true });
    if (v === undefined)
      throw new ConvertError("MISSING_CONFIG_KEY", `${path}: "${key}" is required and missing`);
    return v;
  };
  const nEmbd = req("hidden_size");
  const nHead = req("num_attention_heads");
  const headDim = num("head_dim", { int: true }) ?? nEmbd / nHead;
  if (!Number.isInteger(headDim))
    throw new ConvertError(
      "BAD_CONFIG_KEY",
      `${path}: hidden_size ${nEmbd} is not a multiple of num_attention_heads ${nHead}, and there is no head_dim`,
    );
  const nHeadKv = num("num_key_value_heads", { int: true }) ?? nHead;
  if (nHead % nHeadKv !== 0)
    throw new ConvertError(
      "BAD_CONFIG_KEY",
      `${path}: num_attention_heads ${nHead} is not a multiple of num_key_value_heads ${nHeadKv}`,
    );
  const id = (key: string): number | undefined => {
    const v = raw[key];
    if (typeof v === "number" && Number.isInteger(v) && v >= 0) return v;
    if (Array.isArray(v) && typeof v[0] === "number") return v[0]; // some configs list several eos ids
    return undefined;
  };
  return {
    arch,
    source,
    nEmbd,
    nFf: req("intermediate_size"),
    nLayer: req("num_hidden_layers"),
    nHead,
    nHeadKv,
    headDim,
    rmsEps: num("rms_norm_eps") ?? 1e-6,
    // transformers 5 writes RoPE settings as `rope_parameters` { rope_theta, rope_type, factor, … }.
    ropeTheta: num("rope_theta") ?? ropeParam(path, raw.rope_parameters, "rope_theta") ?? 10000,
    ropeScaling: ropeScaling(path, raw.rope_scaling ?? raw.rope_parameters),
    nCtx: num("max_position_embeddings", { int: true }) ?? DEFAULT_CTX[arch],
    vocabSize: num("vocab_size", { int: true }),
    tied: raw.tie_word_embeddings === true,
    bosId: id("bos_token_id"),
    eosId: id("eos_token_id"),
    raw,
  };
}

/** A number in transformers 5's `rope_parameters`, if there. */
function ropeParam(path: string, v: unknown, key: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  const x = (v as Record<string, unknown>)[key];
  if (x === undefined) return undefined;
  if (typeof x !== "number" || !Number.isFinite(x) || x <= 0)
    throw new ConvertError(
      "BAD_CONFIG_KEY",
      `${path}: rope_parameters.${key} must be a positive number, got ${JSON.stringify(x)}`,
    );
  return x;
}

function ropeScaling(path: string, v: unknown): RopeScalingConfig | undefined {
  if (v === undefined || v === null) return undefined;
  const r = v as Record<string, unknown>;
  const type = String(r.rope_type ?? r.type ?? "");
  if (type === "default") return undefined;
  const factor = typeof r.factor === "number" ? r.factor : undefined;
  const opt = (k: string) => (typeof r[k] === "number" ? (r[k] as number) : undefined);
  if ((type === "linear" || type === "yarn" || type === "llama3") && factor !== undefined) {
    return {
      type,
      factor,
      originalContextLength: opt("original_max_position_embeddings"),
      lowFreqFactor: opt("low_freq_factor"),
      highFreqFactor: opt("high_freq_factor"),
    };
  }
  throw new ConvertError(
    "BAD_CONFIG_KEY",
    `${path}: rope_scaling ${JSON.stringify(v)} is not supported; supported: linear, yarn, llama3 (each with a factor)`,
  );
}

const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
const f32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.FLOAT32, value });
const str = (key: string, value: string): GgufKV => ({ key, type: GgufValueType.STRING, value });

/**
 * The `<arch>.*` keys, as llama.cpp's converter writes them. llama3 RoPE scaling is not a key there
 * (llama.cpp refuses an unknown rope.scaling.type): it travels as the `rope_freqs.weight` tensor
 * (see {@link llama3RopeFactors}).
 */
export function archMetadata(c: HfConfig, nVocab: number): GgufKV[] {
  const a = c.arch;
  const kv: GgufKV[] = [
    u32(`${a}.block_count`, c.nLayer),
    u32(`${a}.context_length`, c.nCtx),
    u32(`${a}.embedding_length`, c.nEmbd),
    u32(`${a}.feed_forward_length`, c.nFf),
    u32(`${a}.attention.head_count`, c.nHead),
    u32(`${a}.attention.head_count_kv`, c.nHeadKv),
    f32(`${a}.rope.freq_base`, c.ropeTheta),
    f32(`${a}.attention.layer_norm_rms_epsilon`, c.rmsEps),
  ];
  if (c.raw.head_dim !== undefined) {
    kv.push(u32(`${a}.attention.key_length`, c.headDim), u32(`${a}.attention.value_length`, c.headDim));
  }
  if (a === "llama") kv.push(u32("llama.vocab_size", nVocab), u32("llama.rope.dimension_count", c.headDim));
  const s = c.ropeScaling;
  if (s && s.type !== "llama3") {
    kv.push(str(`${a}.rope.scaling.type`, s.type), f32(`${a}.rope.scaling.factor`, s.factor));
    if (s.type === "yarn" && s.originalContextLength !== undefined)
      kv.push(u32(`${a}.rope.scaling.original_context_length`, s.originalContextLength));
  }
  return kv;
}

/**
 * Llama 3 RoPE frequency factors (`rope_freqs.weight`, F32 [headDim / 2]), as llama.cpp's
 * converter computes them: wavelengths shorter than original_ctx / high_freq_factor keep their
 * frequency, longer than original_ctx / low_freq_factor are divided by `factor`, and the band
 * between is interpolated smoothly.
 */
export function llama3RopeFactors(c: HfConfig): Float32Array {
  const s = c.ropeScaling!;
  return llama3FreqFactors({
    factor: s.factor,
    lowFreqFactor: s.lowFreqFactor ?? 1,
    highFreqFactor: s.highFreqFactor ?? 4,
    originalContextLength: s.originalContextLength ?? 8192,
    freqBase: c.ropeTheta,
    nRot: c.headDim,
  });
}
