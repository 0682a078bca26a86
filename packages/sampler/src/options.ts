import { invalidArgument } from "./errors.js";

/** Options of a {@link Sampler}. Every field is optional; see each for its default. */
export interface SamplerOptions {
  /**
   * Softmax temperature applied after the top-k and top-p cuts. Default 0.8. `<= 0` means greedy
   * (the argmax; no random draw), as in llama.cpp. Must be finite.
   */
  temperature?: number;
  /** Keep only the `topK` largest logits (lower id first on ties). Default 40. `<= 0` turns it off. */
  topK?: number;
  /**
   * Nucleus: keep the smallest prefix (most probable first) whose cumulative probability reaches
   * `topP`, always at least one token. In (0, 1]; default 0.95; 1 turns it off.
   */
  topP?: number;
  /** Seed of the PRNG, an integer in [0, 2^32). Default: a random one (read it back from `options.seed`). */
  seed?: number;
}

/** The options a sampler runs with: every default filled in, the seed chosen. */
export type ResolvedSamplerOptions = Readonly<Required<SamplerOptions>>;

/** Default {@link SamplerOptions.temperature}. */
export const DEFAULT_TEMPERATURE = 0.8;
/** Default {@link SamplerOptions.topK}. */
export const DEFAULT_TOP_K = 40;
/** Default {@link SamplerOptions.topP}. */
export const DEFAULT_TOP_P = 0.95;

/** Validates `options` and fills in the defaults. Throws `INVALID_ARGUMENT` naming the option. */
export function resolveOptions(options: SamplerOptions = {}): ResolvedSamplerOptions {
  if (typeof options !== "object" || options === null) {
    throw invalidArgument("options", `must be an object, got ${String(options)}`);
  }
  const { temperature = DEFAULT_TEMPERATURE, topK = DEFAULT_TOP_K, topP = DEFAULT_TOP_P } = options;
  if (typeof temperature !== "number" || !Number.isFinite(temperature)) {
    throw invalidArgument("temperature", `must be a finite number, got ${String(temperature)}`);
  }
  if (typeof topK !== "number" || !Number.isSafeInteger(topK)) {
    throw invalidArgument("topK", `must be an integer (<= 0 for off), got ${String(topK)}`);
  }
  if (typeof topP !== "number" || !(topP > 0 && topP <= 1)) {
    throw invalidArgument("topP", `must be a number in (0, 1], got ${String(topP)}`);
  }
  const seed = options.seed === undefined ? randomSeed() : checkSeed(options.seed);
  return Object.freeze({ temperature, topK, topP, seed });
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
