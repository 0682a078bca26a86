/**
 * `minimum` / `maximum` / `exclusiveMinimum` / `exclusiveMaximum` (numbers, or draft 4's booleans beside
 * minimum and maximum) on integers and numbers.
 */

import { type DecimalBound, decimalRange, scaledRange } from "./decimal-range.js";
import { invalid, UnsatisfiableSchema, unsupported } from "./errors.js";
import { integerRange } from "./integer-range.js";
import { MAX_DIGITS } from "./limits.js";

/** A bound and the keyword that set it. */
interface Bound extends DecimalBound {
  readonly keyword: string;
}

/** The bounds of a schema: the tighter of each side's keywords. */
export interface Bounds {
  readonly min: Bound | undefined;
  readonly max: Bound | undefined;
}

/** Reads the bounds of `schema` at `path`; refuses malformed ones. */
export function readBounds(schema: Record<string, unknown>, path: string): Bounds {
  const read = (k: string): number | boolean | undefined => {
    const v = schema[k];
    if (v === undefined) return undefined;
    if (typeof v === "boolean" && (k === "exclusiveMinimum" || k === "exclusiveMaximum")) return v;
    if (typeof v !== "number" || !Number.isFinite(v)) throw invalid(k, path, "must be a number");
    return v;
  };
  const minimum = read("minimum") as number | undefined;
  const maximum = read("maximum") as number | undefined;
  const exMin = read("exclusiveMinimum");
  const exMax = read("exclusiveMaximum");
  let min: Bound | undefined;
  let max: Bound | undefined;
  if (minimum !== undefined) min = { value: minimum, exclusive: exMin === true, keyword: "minimum" };
  if (maximum !== undefined) max = { value: maximum, exclusive: exMax === true, keyword: "maximum" };
  if (typeof exMin === "number") {
    const b = { value: exMin, exclusive: true, keyword: "exclusiveMinimum" };
    if (min === undefined || exMin >= min.value) min = b;
  }
  if (typeof exMax === "number") {
    const b = { value: exMax, exclusive: true, keyword: "exclusiveMaximum" };
    if (max === undefined || exMax <= max.value) max = b;
  }
  if (
    min &&
    max &&
    (min.value > max.value || (min.value === max.value && (min.exclusive || max.exclusive)))
  ) {
    throw new UnsatisfiableSchema(min.keyword, path, `no number lies between ${min.value} and ${max.value}`);
  }
  return { min, max };
}

/** Whether the schema bounds its numbers at all. */
export function bounded(b: Bounds): boolean {
  return b.min !== undefined || b.max !== undefined;
}

/** A GBNF expression for the integers within `b` (at `path`, for errors). */
export function integerBetween(b: Bounds, path: string): string {
  for (const x of [b.min, b.max]) {
    if (x && Math.abs(x.value) > Number.MAX_SAFE_INTEGER)
      throw unsupported(x.keyword, path, "beyond ±2^53 is not supported");
  }
  let lo = -Infinity;
  let hi = Infinity;
  if (b.min) lo = b.min.exclusive ? Math.floor(b.min.value) + 1 : Math.ceil(b.min.value);
  if (b.max) hi = b.max.exclusive ? Math.ceil(b.max.value) - 1 : Math.floor(b.max.value);
  if (lo > hi) throw new UnsatisfiableSchema(b.min!.keyword, path, `no integer lies in [${lo}, ${hi}]`);
  return integerRange(lo, hi);
}

/** A GBNF expression for the numbers within `b` (written without an exponent; see decimal-range.ts). */
export function numberBetween(b: Bounds, path: string): string {
  const range = scaledRange(b.min, b.max);
  if (range === undefined) {
    throw unsupported(
      (b.min ?? b.max)!.keyword,
      path,
      `leaves no number of at most ${MAX_DIGITS} digits before and after the point (bounded numbers are written without an exponent)`,
    );
  }
  return decimalRange(range[0], range[1]);
}
