import type { TokenConstraint } from "./constraint.js";
import { invalidArgument } from "./errors.js";

/**
 * The vocabulary as DRY sees it: the bytes each token decodes to, so that tokens holding a sequence
 * breaker can be found. `@minfer/tokenizer`'s `Tokenizer` fits.
 */
export interface SamplerVocab {
  /** The bytes token `id` decodes to (empty for control tokens). */
  tokenBytes(id: number): Uint8Array;
}

/**
 * Options of a {@link Sampler}. Every field is optional and every stage's default is a no-op;
 * llama.cpp's command-line defaults for temperature, top-k, top-p and min-p are {@link LLAMA_CPP_SAMPLING}.
 */
export interface SamplerOptions {
  /**
   * Softmax temperature, the last stage before the draw. Default 1 (no change). `<= 0` means greedy: the
   * argmax after logit bias, penalties, DRY and the constraint (the truncation stages are skipped),
   * as in llama.cpp. Must be finite.
   */
  temperature?: number;
  /** Keep only the `topK` largest logits (lower id first on ties). Default 0 (off); `<= 0` turns it off. */
  topK?: number;
  /**
   * Nucleus: keep the smallest prefix (most probable first) whose cumulative probability reaches
   * `topP`, always at least one token. In (0, 1]; default 1 (off).
   */
  topP?: number;
  /** Keep the tokens whose probability is ≥ `minP` × the largest probability. In [0, 1]; default 0 (off). */
  minP?: number;
  /**
   * Locally typical sampling: keep the tokens whose surprise is closest to the entropy, up to
   * cumulative probability `typicalP`. In (0, 1]; default 1 (off).
   */
  typicalP?: number;
  /** XTC: the chance, per token, of excluding the top choices. In [0, 1]; default 0 (off). */
  xtcProbability?: number;
  /** XTC: the probability a token needs to count as a top choice. In [0, 1]; default 0.1; > 0.5 is off. */
  xtcThreshold?: number;
  /** top-n-sigma: keep the logits ≥ max − `topNSigma`·σ. Default -1; `<= 0` is off. */
  topNSigma?: number;
  /**
   * Dynamic temperature: with a range > 0, the draw's temperature moves within
   * [max(0, temperature − range), temperature + range] by the candidates' normalized entropy
   * (llama.cpp's `dynatemp_range`). Default 0 (off); must be finite and ≥ 0.
   */
  dynatempRange?: number;
  /** The exponent on the normalized entropy of {@link dynatempRange}. Default 1; finite, ≥ 0. */
  dynatempExponent?: number;
  /** Added to the logit of each token id (the first stage). `-Infinity` bans the token. Default none. */
  logitBias?: Readonly<Record<number, number>> | ReadonlyMap<number, number>;
  /** Repetition penalty over the last `repeatLastN` tokens. Default 1 (off); must be > 0. */
  repeatPenalty?: number;
  /** How many of the last tokens the penalties look at. Default 64; 0 turns them off; -1 means every token since reset. */
  repeatLastN?: number;
  /** Subtracted once from the logit of every token in the window. Default 0 (off). */
  presencePenalty?: number;
  /** Subtracted from a token's logit once per occurrence in the window. Default 0 (off). */
  frequencyPenalty?: number;
  /** DRY ("don't repeat yourself") multiplier. Default 0 (off). */
  dryMultiplier?: number;
  /** DRY base of the exponential penalty, ≥ 1. Default 1.75. */
  dryBase?: number;
  /** Repeated sequences up to this length are not penalized by DRY. Default 2; ≥ 1. */
  dryAllowedLength?: number;
  /** How many of the last tokens DRY looks at. Default -1 (every token since reset); 0 turns DRY off. */
  dryPenaltyLastN?: number;
  /**
   * Strings that end a DRY sequence: a token whose text holds one of them breaks any repetition
   * through it. Default `["\n", ":", "\"", "*"]`. Needs {@link vocab} or {@link tokenText} when DRY is on.
   */
  drySequenceBreakers?: readonly string[];
  /** The vocabulary, for DRY's sequence breakers. */
  vocab?: SamplerVocab;
  /** The text of a token, for DRY's sequence breakers (an alternative to {@link vocab}). */
  tokenText?: (id: number) => string;
  /** Mirostat in place of the truncation stages: 0 off (default), 1 (v1) or 2 (v2). */
  mirostat?: 0 | 1 | 2;
  /** Mirostat's target surprise τ (bits). Default 5. */
  mirostatTau?: number;
  /** Mirostat's learning rate η. Default 0.1. */
  mirostatEta?: number;
  /** Restricts which token may come next (a grammar); see {@link TokenConstraint}. Default none. */
  constraint?: TokenConstraint;
  /** How many top log-probabilities `sampleWithLogprobs` returns by default. Default 0. */
  nProbs?: number;
  /** Seed of the PRNG, an integer in [0, 2^32). Default: a random one (read it back from `options.seed`). */
  seed?: number;
}

/** The options a sampler runs with: every default filled in, the seed chosen. */
export interface ResolvedSamplerOptions {
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  readonly minP: number;
  readonly typicalP: number;
  readonly xtcProbability: number;
  readonly xtcThreshold: number;
  readonly topNSigma: number;
  readonly dynatempRange: number;
  readonly dynatempExponent: number;
  /** The bias as a map from token id to the value added. */
  readonly logitBias: ReadonlyMap<number, number>;
  readonly repeatPenalty: number;
  readonly repeatLastN: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly dryMultiplier: number;
  readonly dryBase: number;
  readonly dryAllowedLength: number;
  readonly dryPenaltyLastN: number;
  readonly drySequenceBreakers: readonly string[];
  readonly vocab: SamplerVocab | undefined;
  readonly tokenText: ((id: number) => string) | undefined;
  readonly mirostat: 0 | 1 | 2;
  readonly mirostatTau: number;
  readonly mirostatEta: number;
  readonly constraint: TokenConstraint | undefined;
  readonly nProbs: number;
  readonly seed: number;
}

/**
 * Default {@link SamplerOptions.temperature}: 1, no change to the distribution. Every stage's
 * default is a no-op, so `new Sampler()` draws from the softmax of the logits as they are; llama.cpp's
 * command-line defaults are {@link LLAMA_CPP_SAMPLING} (what `minfer run` uses).
 */
export const DEFAULT_TEMPERATURE = 1;
/** Default {@link SamplerOptions.topK}: 0 (off). */
export const DEFAULT_TOP_K = 0;
/** Default {@link SamplerOptions.topP}: 1 (off). */
export const DEFAULT_TOP_P = 1;
/** Default {@link SamplerOptions.minP}: 0 (off). */
export const DEFAULT_MIN_P = 0;
/** llama.cpp's command-line sampling defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05. */
export const LLAMA_CPP_SAMPLING = Object.freeze({ temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 });
/** Default {@link SamplerOptions.drySequenceBreakers}. */
export const DEFAULT_DRY_SEQUENCE_BREAKERS: readonly string[] = Object.freeze(["\n", ":", '"', "*"]);

/** Every default but the seed and the objects (bias, breakers, vocab, constraint). */
export const SAMPLER_DEFAULTS = Object.freeze({
  temperature: DEFAULT_TEMPERATURE,
  topK: DEFAULT_TOP_K,
  topP: DEFAULT_TOP_P,
  minP: DEFAULT_MIN_P,
  typicalP: 1,
  xtcProbability: 0,
  xtcThreshold: 0.1,
  topNSigma: -1,
  dynatempRange: 0,
  dynatempExponent: 1,
  repeatPenalty: 1,
  repeatLastN: 64,
  presencePenalty: 0,
  frequencyPenalty: 0,
  dryMultiplier: 0,
  dryBase: 1.75,
  dryAllowedLength: 2,
  dryPenaltyLastN: -1,
  mirostat: 0 as 0 | 1 | 2,
  mirostatTau: 5,
  mirostatEta: 0.1,
  nProbs: 0,
});

type Check = (v: number) => boolean;

/** Validates `options` and fills in the defaults. Throws `INVALID_ARGUMENT` naming the option. */
export function resolveOptions(options: SamplerOptions = {}): ResolvedSamplerOptions {
  if (typeof options !== "object" || options === null) {
    throw invalidArgument("options", `must be an object, got ${String(options)}`);
  }
  const num = (name: keyof typeof SAMPLER_DEFAULTS, ok: Check, what: string): number => {
    const v = (options as Record<string, unknown>)[name] ?? SAMPLER_DEFAULTS[name];
    if (typeof v !== "number" || !ok(v)) throw invalidArgument(name, `must be ${what}, got ${String(v)}`);
    return v;
  };
  const finite: Check = Number.isFinite;
  const int: Check = Number.isSafeInteger;
  const unit: Check = (v) => v >= 0 && v <= 1;
  const r = {
    temperature: num("temperature", finite, "a finite number"),
    topK: num("topK", int, "an integer (<= 0 for off)"),
    topP: num("topP", (v) => v > 0 && v <= 1, "a number in (0, 1]"),
    minP: num("minP", unit, "a number in [0, 1]"),
    typicalP: num("typicalP", (v) => v > 0 && v <= 1, "a number in (0, 1]"),
    xtcProbability: num("xtcProbability", unit, "a number in [0, 1]"),
    xtcThreshold: num("xtcThreshold", unit, "a number in [0, 1]"),
    topNSigma: num("topNSigma", finite, "a finite number (<= 0 for off)"),
    dynatempRange: num("dynatempRange", (v) => finite(v) && v >= 0, "a finite number >= 0"),
    dynatempExponent: num("dynatempExponent", (v) => finite(v) && v >= 0, "a finite number >= 0"),
    repeatPenalty: num("repeatPenalty", (v) => finite(v) && v > 0, "a finite number > 0"),
    repeatLastN: num("repeatLastN", (v) => int(v) && v >= -1, "an integer >= -1"),
    presencePenalty: num("presencePenalty", finite, "a finite number"),
    frequencyPenalty: num("frequencyPenalty", finite, "a finite number"),
    dryMultiplier: num("dryMultiplier", (v) => finite(v) && v >= 0, "a finite number >= 0"),
    dryBase: num("dryBase", (v) => finite(v) && v >= 1, "a finite number >= 1"),
    dryAllowedLength: num("dryAllowedLength", (v) => int(v) && v >= 1, "an integer >= 1"),
    dryPenaltyLastN: num("dryPenaltyLastN", (v) => int(v) && v >= -1, "an integer >= -1"),
    mirostat: num("mirostat", (v) => v === 0 || v === 1 || v === 2, "0, 1 or 2") as 0 | 1 | 2,
    mirostatTau: num("mirostatTau", (v) => finite(v) && v >= 0, "a finite number >= 0"),
    mirostatEta: num("mirostatEta", (v) => finite(v) && v >= 0, "a finite number >= 0"),
    nProbs: num("nProbs", (v) => int(v) && v >= 0, "an integer >= 0"),
  };
  const drySequenceBreakers = options.drySequenceBreakers ?? DEFAULT_DRY_SEQUENCE_BREAKERS;
  if (!Array.isArray(drySequenceBreakers) || drySequenceBreakers.some((s) => typeof s !== "string")) {
    throw invalidArgument("drySequenceBreakers", "must be an array of strings");
  }
  const { vocab, tokenText, constraint } = options;
  if (vocab !== undefined && typeof vocab?.tokenBytes !== "function") {
    throw invalidArgument("vocab", "must have a tokenBytes(id) method");
  }
  if (tokenText !== undefined && typeof tokenText !== "function") {
    throw invalidArgument("tokenText", "must be a function");
  }
  if (r.dryMultiplier > 0 && r.dryPenaltyLastN !== 0 && drySequenceBreakers.some((s) => s !== "")) {
    if (vocab === undefined && tokenText === undefined) {
      throw invalidArgument(
        "dryMultiplier",
        "DRY's sequence breakers need the token texts: pass `vocab` or `tokenText` (or empty drySequenceBreakers)",
      );
    }
  }
  if (constraint !== undefined) {
    for (const m of ["allows", "mask", "accept", "isComplete", "isExhausted", "reset"] as const) {
      if (typeof constraint?.[m] !== "function") {
        throw invalidArgument("constraint", `must implement TokenConstraint (no ${m}() method)`);
      }
    }
  }
  const seed = options.seed === undefined ? randomSeed() : checkSeed(options.seed);
  return Object.freeze({
    ...r,
    logitBias: resolveBias(options.logitBias),
    drySequenceBreakers: Object.freeze([...drySequenceBreakers]),
    vocab,
    tokenText,
    constraint,
    seed,
  });
}

/** The bias as a map, each id a non-negative integer and each value finite or `-Infinity`. */
function resolveBias(bias: SamplerOptions["logitBias"]): ReadonlyMap<number, number> {
  const out = new Map<number, number>();
  if (bias === undefined) return out;
  if (typeof bias !== "object" || bias === null)
    throw invalidArgument("logitBias", "must be an object or a Map");
  const entries: Iterable<[number | string, number]> =
    bias instanceof Map ? bias.entries() : Object.entries(bias as Record<string, number>);
  for (const [k, v] of entries) {
    const id = Number(k);
    if (!Number.isSafeInteger(id) || id < 0) {
      throw invalidArgument("logitBias", `token id must be an integer >= 0, got ${String(k)}`);
    }
    if (typeof v !== "number" || !(Number.isFinite(v) || v === -Infinity)) {
      throw invalidArgument("logitBias", `bias of token ${id} must be finite or -Infinity, got ${String(v)}`);
    }
    if (v !== 0) out.set(id, v);
  }
  return out;
}

/** Throws `INVALID_ARGUMENT` unless `seed` is an integer in [0, 2^32). */
export function checkSeed(seed: unknown): number {
  if (typeof seed !== "number" || !Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw invalidArgument("seed", `must be an integer in [0, 4294967295], got ${String(seed)}`);
  }
  return seed;
}

/** A uint32 from the platform's CSPRNG. */
export function randomSeed(): number {
  return globalThis.crypto.getRandomValues(new Uint32Array(1))[0]!;
}
