import type { GgufMetadata } from "@minfer/gguf";
import { guard, positive } from "./arch-keys.js";
import { ModelError } from "./errors.js";
import { type Pooling, readPooling } from "./pooling.js";

/** RoPE context scaling, from `<arch>.rope.scaling.*`. */
export interface RopeScaling {
  /**
   * `none` (default), `linear` (positions / factor), `yarn`, `llama3` (per-frequency factors from
   * the keys) or `longrope` (Phi-3's per-frequency factors from the file's tensors).
   */
  readonly type: "none" | "linear" | "yarn" | "llama3" | "longrope";
  /** `rope.scaling.factor`. Default: 1. */
  readonly factor: number;
  /** `rope.scaling.original_context_length`. Default: the training context length. */
  readonly originalContextLength: number;
  /** llama3: `rope.scaling.low_freq_factor`. Default: 1. */
  readonly lowFreqFactor: number;
  /** llama3: `rope.scaling.high_freq_factor`. Default: 4. */
  readonly highFreqFactor: number;
  /** YaRN and LongRoPE: `rope.scaling.attn_factor` (LongRoPE: the magnitude of cos and sin). Default: 1. */
  readonly attnFactor: number;
}

/** Hyperparameters shared by the dense decoder architectures (llama, qwen2, qwen3). */
export interface Hparams {
  readonly arch: string;
  /** `block_count`. */
  readonly nLayer: number;
  /** `embedding_length`. */
  readonly nEmbd: number;
  /** `feed_forward_length`. */
  readonly nFf: number;
  /** `attention.head_count`. */
  readonly nHead: number;
  /** `attention.head_count_kv`. Default: nHead. */
  readonly nHeadKv: number;
  /** `attention.key_length`. Default: nEmbd / nHead. */
  readonly headDimK: number;
  /** `attention.value_length`. Default: nEmbd / nHead. */
  readonly headDimV: number;
  /** `attention.layer_norm_rms_epsilon`. Default: per architecture. */
  readonly rmsEps: number;
  /** `rope.freq_base`. Default: per architecture. */
  readonly ropeFreqBase: number;
  /** `rope.dimension_count`. Default: headDimK. */
  readonly nRot: number;
  /** `context_length`. */
  readonly nCtxTrain: number;
  /** `vocab_size`, else the length of `tokenizer.ggml.tokens`. */
  readonly nVocab: number;
  readonly ropeScaling: RopeScaling;
  /** `pooling_type`: how the model's embeddings are pooled; undefined when the file names none. */
  readonly pooling?: Pooling;
  /** `attention.causal`: whether a token sees only earlier positions. Default: per architecture (true for decoders). */
  readonly causal?: boolean;
  /** `classifier.output_labels`' count: the rows of a classifier head `cls.output.weight` (a reranker's); default 1. */
  readonly nClsOut?: number;
}

/** An architecture's documented defaults for keys that may be absent. */
export interface ArchDefaults {
  readonly rmsEps: number;
  readonly ropeFreqBase: number;
  /** RoPE scaling types the architecture runs. Default: none, linear, yarn, llama3 (LongRoPE only where its factors are read). */
  readonly scalings?: readonly RopeScaling["type"][];
  /** `attention.causal` when absent. Default: true. */
  readonly causal?: boolean;
}

/**
 * Upper bounds of sizes no tensor shape checks (or checks only later): far above any real
 * model's, low enough that nothing proportional to them can exhaust memory on the way.
 */
export const HPARAM_LIMITS = {
  /** `context_length`, `rope.scaling.original_context_length`: 2^24 tokens (real: ≤ 10M). */
  contextLength: 1 << 24,
  /** `attention.head_count`, `attention.head_count_kv`. */
  heads: 1 << 16,
} as const;

function atMost(key: string, n: number, limit: number): number {
  if (n > limit)
    throw new ModelError("BAD_KEY", `metadata key "${key}" is ${n}; expected at most ${limit}`, { key });
  return n;
}

const SCALING_TYPES: readonly RopeScaling["type"][] = ["none", "linear", "yarn", "llama3"];

/**
 * Reads `<arch>.*` hyperparameters; a missing required key is MISSING_KEY naming it, an
 * optional one takes `defaults` (or the derived default documented on {@link Hparams}). A value
 * out of bounds (not positive, not finite, past {@link HPARAM_LIMITS}, a `rope.dimension_count`
 * that is odd or larger than the head, KV heads that do not divide the heads) is BAD_KEY naming it;
 * `block_count` and the sizes are checked against the tensor table by `loadTensors`.
 */
export function readHparams(meta: GgufMetadata, arch: string, defaults: ArchDefaults): Hparams {
  const k = (suffix: string) => `${arch}.${suffix}`;
  const int = (suffix: string) =>
    positive(
      k(suffix),
      guard(k(suffix), () => meta.integer(k(suffix))),
    );
  const optInt = (suffix: string) => {
    const v = guard(k(suffix), () => meta.optInteger(k(suffix)));
    return v === undefined ? undefined : positive(k(suffix), v);
  };
  const optNum = (suffix: string) => guard(k(suffix), () => meta.optNumber(k(suffix)));
  /** An optional float that must be finite and positive (a NaN eps or base is refused, not run). */
  const optPositive = (suffix: string) => {
    const v = optNum(suffix);
    return v === undefined ? undefined : positive(k(suffix), v);
  };

  const nEmbd = int("embedding_length");
  const nHead = atMost(k("attention.head_count"), int("attention.head_count"), HPARAM_LIMITS.heads);
  const nHeadKv = atMost(
    k("attention.head_count_kv"),
    optInt("attention.head_count_kv") ?? nHead,
    HPARAM_LIMITS.heads,
  );
  if (nHead % nHeadKv !== 0)
    throw new ModelError(
      "BAD_KEY",
      `${k("attention.head_count_kv")} ${nHeadKv} does not divide ${k("attention.head_count")} ${nHead}`,
      { key: k("attention.head_count_kv") },
    );
  const headDimK = optInt("attention.key_length") ?? nEmbd / nHead;
  const headDimV = optInt("attention.value_length") ?? nEmbd / nHead;
  if (!Number.isInteger(headDimK) || !Number.isInteger(headDimV))
    throw new ModelError(
      "BAD_KEY",
      `${k("embedding_length")} ${nEmbd} is not a multiple of ${k("attention.head_count")} ${nHead}; give ${k("attention.key_length")}`,
      { key: k("attention.key_length") },
    );
  const nRot = optInt("rope.dimension_count") ?? headDimK;
  if (nRot % 2 !== 0 || nRot > headDimK)
    throw new ModelError(
      "BAD_KEY",
      `${k("rope.dimension_count")} is ${nRot}; it must be even and at most the head size ${headDimK}`,
      { key: k("rope.dimension_count") },
    );
  const nCtxTrain = atMost(k("context_length"), int("context_length"), HPARAM_LIMITS.contextLength);
  const nVocab =
    optInt("vocab_size") ??
    guard("tokenizer.ggml.tokens", () => meta.stringArray("tokenizer.ggml.tokens")).length;

  const typeKey = k("rope.scaling.type");
  const type = guard(typeKey, () => meta.optString(typeKey)) ?? "none";
  const scalings = defaults.scalings ?? SCALING_TYPES;
  if (!(scalings as readonly string[]).includes(type))
    throw new ModelError(
      "BAD_KEY",
      `${typeKey} "${type}" is not supported for ${arch}; supported: ${scalings.join(", ")}`,
      { key: typeKey },
    );
  const ropeScaling: RopeScaling = {
    type: type as RopeScaling["type"],
    factor: optPositive("rope.scaling.factor") ?? 1,
    originalContextLength: atMost(
      k("rope.scaling.original_context_length"),
      optInt("rope.scaling.original_context_length") ?? nCtxTrain,
      HPARAM_LIMITS.contextLength,
    ),
    lowFreqFactor: optPositive("rope.scaling.low_freq_factor") ?? 1,
    highFreqFactor: optPositive("rope.scaling.high_freq_factor") ?? 4,
    attnFactor: optPositive("rope.scaling.attn_factor") ?? 1,
  };
  if (ropeScaling.type === "llama3" && !(ropeScaling.highFreqFactor > ropeScaling.lowFreqFactor))
    throw new ModelError(
      "BAD_KEY",
      `${k("rope.scaling.high_freq_factor")} ${ropeScaling.highFreqFactor} must exceed ${k("rope.scaling.low_freq_factor")} ${ropeScaling.lowFreqFactor}`,
      { key: k("rope.scaling.high_freq_factor") },
    );

  return {
    arch,
    nLayer: int("block_count"),
    nEmbd,
    nFf: int("feed_forward_length"),
    nHead,
    nHeadKv,
    headDimK,
    headDimV,
    rmsEps: optPositive("attention.layer_norm_rms_epsilon") ?? defaults.rmsEps,
    ropeFreqBase: optPositive("rope.freq_base") ?? defaults.ropeFreqBase,
    nRot,
    nCtxTrain,
    nVocab,
    ropeScaling,
    ...optional("pooling", readPooling(meta, arch)),
    causal:
      guard(k("attention.causal"), () => meta.optBool(k("attention.causal"))) ?? defaults.causal ?? true,
    nClsOut: classifierOutputs(meta, k("classifier.output_labels")),
  };
}

/** The count of `key`'s labels (at least 1): llama.cpp sizes a classifier head by it. */
function classifierOutputs(meta: GgufMetadata, key: string): number {
  const labels = guard(key, () => (meta.has(key) ? meta.stringArray(key) : undefined));
  if (labels !== undefined && labels.length > 1 << 16)
    throw new ModelError(
      "BAD_KEY",
      `metadata key "${key}" has ${labels.length} labels; expected at most 65536`,
      { key },
    );
  return labels && labels.length > 0 ? labels.length : 1;
}

/** `{ [name]: value }`, or nothing when the value is undefined (for optional fields). */
function optional<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}
