import { GgufError, type GgufMetadata } from "@minfer/gguf";
import { ModelError } from "./errors.js";

/** Re-throws @minfer/gguf's key errors as ModelErrors naming the key. */
export function guard<T>(key: string, read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof GgufError && e.code === "MISSING_KEY")
      throw new ModelError("MISSING_KEY", `metadata key "${key}" is required and missing`, { key });
    if (e instanceof GgufError) throw new ModelError("BAD_KEY", e.message, { key });
    throw e;
  }
}

/** `n` when it is a positive finite number, else BAD_KEY naming `key`. */
export function positive(key: string, n: number): number {
  if (!(n > 0) || !Number.isFinite(n))
    throw new ModelError("BAD_KEY", `metadata key "${key}" is ${n}; expected a positive number`, { key });
  return n;
}

/**
 * Typed reads of an architecture's own `<arch>.*` keys, each checked: a value of the wrong type is
 * BAD_KEY naming the key, a missing required one MISSING_KEY, a non-finite or non-positive one
 * where a positive number is expected BAD_KEY.
 */
export class ArchKeys {
  constructor(
    readonly meta: GgufMetadata,
    readonly arch: string,
  ) {}

  /** The full key name of `suffix`. */
  key(suffix: string): string {
    return `${this.arch}.${suffix}`;
  }

  #read<T>(suffix: string, read: (key: string) => T): T {
    const key = this.key(suffix);
    try {
      return read(key);
    } catch (e) {
      if (e instanceof GgufError && e.code === "MISSING_KEY")
        throw new ModelError("MISSING_KEY", `metadata key "${key}" is required and missing`, { key });
      if (e instanceof GgufError) throw new ModelError("BAD_KEY", e.message, { key });
      throw e;
    }
  }

  #positive(suffix: string, n: number): number {
    if (!(n > 0) || !Number.isFinite(n))
      throw new ModelError(
        "BAD_KEY",
        `metadata key "${this.key(suffix)}" is ${n}; expected a positive number`,
        {
          key: this.key(suffix),
        },
      );
    return n;
  }

  /** A positive number, or undefined when absent. */
  optPositive(suffix: string): number | undefined {
    const v = this.#read(suffix, (k) => this.meta.optNumber(k));
    return v === undefined ? undefined : this.#positive(suffix, v);
  }

  /** A finite number (any sign), or undefined when absent. */
  optFinite(suffix: string): number | undefined {
    const v = this.#read(suffix, (k) => this.meta.optNumber(k));
    if (v !== undefined && !Number.isFinite(v))
      throw new ModelError(
        "BAD_KEY",
        `metadata key "${this.key(suffix)}" is ${v}; expected a finite number`,
        {
          key: this.key(suffix),
        },
      );
    return v;
  }

  /** A non-negative integer (0 allowed: "none"), or undefined when absent. */
  optCountOrZero(suffix: string): number | undefined {
    const v = this.#read(suffix, (k) => this.meta.optInteger(k));
    if (v !== undefined && !(v >= 0))
      throw new ModelError("BAD_KEY", `metadata key "${this.key(suffix)}" is ${v}; expected 0 or more`, {
        key: this.key(suffix),
      });
    return v;
  }

  /** A boolean, or undefined when absent. */
  optBool(suffix: string): boolean | undefined {
    return this.#read(suffix, (k) => this.meta.optBool(k));
  }

  /** A required positive number. */
  positive(suffix: string): number {
    return this.#positive(
      suffix,
      this.#read(suffix, (k) => this.meta.number(k)),
    );
  }

  /** A positive integer, or undefined when absent. */
  optCount(suffix: string): number | undefined {
    const v = this.#read(suffix, (k) => this.meta.optInteger(k));
    return v === undefined ? undefined : this.#positive(suffix, v);
  }

  /** A required positive integer. */
  count(suffix: string): number {
    return this.#positive(
      suffix,
      this.#read(suffix, (k) => this.meta.integer(k)),
    );
  }
}
