import { GgufError } from "./errors.js";
import { GgufValueType, type GgufValueTypeId, valueTypeName } from "./value-types.js";

/** The items of a GGUF array: a typed array for numeric items, plain arrays otherwise. */
export type GgufArrayItems =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array
  | boolean[]
  | string[]
  | GgufArray[];

/** A GGUF array value: its item type and the items (arrays may nest). */
export interface GgufArray {
  readonly itemType: GgufValueTypeId;
  readonly items: GgufArrayItems;
}

/** A scalar GGUF value. 64-bit integers are `bigint` so no precision is lost. */
export type GgufScalar = number | bigint | boolean | string;

/** One metadata entry exactly as stored: key, value type and value. */
export interface GgufKV {
  readonly key: string;
  readonly type: GgufValueTypeId;
  readonly value: GgufScalar | GgufArray;
}

/** A plain JavaScript view of a value: arrays become JS arrays (numeric arrays stay typed arrays). */
export type GgufPlainValue = GgufScalar | GgufArrayItems | GgufPlainValue[];

const INTEGER_TYPES = new Set<number>([
  GgufValueType.UINT8,
  GgufValueType.INT8,
  GgufValueType.UINT16,
  GgufValueType.INT16,
  GgufValueType.UINT32,
  GgufValueType.INT32,
  GgufValueType.UINT64,
  GgufValueType.INT64,
]);
const FLOAT_TYPES = new Set<number>([GgufValueType.FLOAT32, GgufValueType.FLOAT64]);

function describe(kv: GgufKV): string {
  if (kv.type === GgufValueType.ARRAY) return `array of ${valueTypeName((kv.value as GgufArray).itemType)}`;
  return valueTypeName(kv.type);
}

/**
 * The key/value metadata of a GGUF file, in file order, with typed accessors. Every accessor
 * throws a {@link GgufError} naming the key: `MISSING_KEY` when it is absent, `WRONG_KEY_TYPE`
 * (with the stored type) when it holds something else. `opt*` accessors return `undefined` for
 * an absent key but still refuse a mistyped one.
 */
export class GgufMetadata {
  readonly #map: Map<string, GgufKV>;

  constructor(entries: Iterable<GgufKV>) {
    this.#map = new Map();
    for (const kv of entries) {
      if (this.#map.has(kv.key)) throw new GgufError("DUPLICATE_KEY", `duplicate metadata key "${kv.key}"`);
      this.#map.set(kv.key, kv);
    }
  }

  /** Number of entries. */
  get size(): number {
    return this.#map.size;
  }

  /** Entries in file order. */
  entries(): IterableIterator<GgufKV> {
    return this.#map.values();
  }

  /** Keys in file order. */
  keys(): IterableIterator<string> {
    return this.#map.keys();
  }

  has(key: string): boolean {
    return this.#map.has(key);
  }

  /** The raw entry, or `undefined`. */
  get(key: string): GgufKV | undefined {
    return this.#map.get(key);
  }

  /** The value as plain JavaScript (see {@link GgufPlainValue}), or `undefined`. */
  value(key: string): GgufPlainValue | undefined {
    const kv = this.#map.get(key);
    return kv === undefined ? undefined : plainValue(kv.value);
  }

  #need(key: string): GgufKV {
    const kv = this.#map.get(key);
    if (!kv) throw new GgufError("MISSING_KEY", `metadata key "${key}" is missing`, { key });
    return kv;
  }

  #wrong(kv: GgufKV, expected: string): never {
    throw new GgufError(
      "WRONG_KEY_TYPE",
      `metadata key "${kv.key}" holds ${describe(kv)}, expected ${expected}`,
      { key: kv.key },
    );
  }

  /** A string value. */
  string(key: string): string {
    const kv = this.#need(key);
    if (kv.type !== GgufValueType.STRING) this.#wrong(kv, "string");
    return kv.value as string;
  }

  optString(key: string): string | undefined {
    return this.has(key) ? this.string(key) : undefined;
  }

  /** A boolean value. */
  bool(key: string): boolean {
    const kv = this.#need(key);
    if (kv.type !== GgufValueType.BOOL) this.#wrong(kv, "bool");
    return kv.value as boolean;
  }

  optBool(key: string): boolean | undefined {
    return this.has(key) ? this.bool(key) : undefined;
  }

  /** An integer of any width as a `number`; a 64-bit value beyond 2^53 is refused rather than rounded. */
  integer(key: string): number {
    const kv = this.#need(key);
    if (!INTEGER_TYPES.has(kv.type)) this.#wrong(kv, "an integer");
    if (typeof kv.value === "bigint") {
      const n = Number(kv.value);
      if (!Number.isSafeInteger(n)) this.#wrong(kv, "an integer below 2^53 (use get() for the bigint)");
      return n;
    }
    return kv.value as number;
  }

  optInteger(key: string): number | undefined {
    return this.has(key) ? this.integer(key) : undefined;
  }

  /** Any numeric scalar (integer or float) as a `number`. */
  number(key: string): number {
    const kv = this.#need(key);
    if (FLOAT_TYPES.has(kv.type)) return kv.value as number;
    if (INTEGER_TYPES.has(kv.type)) return this.integer(key);
    return this.#wrong(kv, "a number");
  }

  optNumber(key: string): number | undefined {
    return this.has(key) ? this.number(key) : undefined;
  }

  /** An array of strings. */
  stringArray(key: string): string[] {
    const kv = this.#need(key);
    if (kv.type !== GgufValueType.ARRAY || (kv.value as GgufArray).itemType !== GgufValueType.STRING) {
      this.#wrong(kv, "array of string");
    }
    return (kv.value as GgufArray).items as string[];
  }

  optStringArray(key: string): string[] | undefined {
    return this.has(key) ? this.stringArray(key) : undefined;
  }

  /** An array of numbers (any integer up to 32 bits, or float) as a typed array. */
  numberArray(key: string): ArrayLike<number> {
    const kv = this.#need(key);
    const arr = kv.value as GgufArray;
    if (
      kv.type !== GgufValueType.ARRAY ||
      arr.itemType === GgufValueType.STRING ||
      arr.itemType === GgufValueType.ARRAY ||
      arr.itemType === GgufValueType.BOOL ||
      arr.itemType === GgufValueType.UINT64 ||
      arr.itemType === GgufValueType.INT64
    ) {
      this.#wrong(kv, "array of numbers");
    }
    return arr.items as ArrayLike<number>;
  }

  optNumberArray(key: string): ArrayLike<number> | undefined {
    return this.has(key) ? this.numberArray(key) : undefined;
  }

  /** `general.architecture`, e.g. `"llama"`. */
  get architecture(): string {
    return this.string("general.architecture");
  }

  /** An architecture-scoped integer such as `<arch>.context_length`: `archInteger("context_length")`. */
  archInteger(suffix: string): number {
    return this.integer(`${this.architecture}.${suffix}`);
  }

  /** An architecture-scoped number such as `<arch>.rope.freq_base`; `undefined` when absent. */
  optArchNumber(suffix: string): number | undefined {
    return this.optNumber(`${this.architecture}.${suffix}`);
  }

  /** `general.alignment`, or the format's default of 32 when absent. */
  get alignment(): number {
    return this.optInteger("general.alignment") ?? 32;
  }
}

/** Converts a stored value to plain JavaScript. */
export function plainValue(value: GgufScalar | GgufArray): GgufPlainValue {
  if (typeof value !== "object") return value;
  if (value.itemType === GgufValueType.ARRAY) return (value.items as GgufArray[]).map(plainValue);
  return value.items;
}
