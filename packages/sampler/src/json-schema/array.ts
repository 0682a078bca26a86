/**
 * Arrays: the tuple positions (`prefixItems`, or `items` as an array in drafts before 2020-12) first, then
 * the rest (`items` after `prefixItems`, `additionalItems` after an `items` array, `items` alone), within
 * minItems..maxItems. After a tuple, leaving the rest's schema out allows no further elements (a documented
 * subset: JSON Schema would allow any); `items` alone left out allows any values.
 */

import { child, invalid, UnsatisfiableSchema, unsupported } from "./errors.js";
import { repeat, seq } from "./gbnf.js";
import { capped, MAX_COUNT } from "./limits.js";
import type { ObjectContext } from "./object.js";

/** Tuple positions written inside one another before the rest goes into a rule of its own. */
const POSITIONS_PER_RULE = 32;

/** Whether `expr` is a rule name. */
function isName(expr: string): boolean {
  return /^[a-zA-Z0-9-]+$/.test(expr);
}

function count(s: Record<string, unknown>, key: string, path: string, fallback: number): number {
  const v = s[key];
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0)
    throw invalid(key, path, "must be a non-negative integer");
  return v;
}

/** The GBNF expression for an array schema `s` at `path`. */
export function arrayExpr(
  ctx: ObjectContext,
  s: Record<string, unknown>,
  path: string,
  hint: string,
): string {
  let prefix: unknown[] = [];
  let prefixKey = "prefixItems";
  let rest: unknown;
  let restKey: string;
  if (s.prefixItems !== undefined) {
    if (!Array.isArray(s.prefixItems)) throw invalid("prefixItems", path, "must be an array");
    prefix = s.prefixItems;
    rest = s.items ?? false;
    restKey = "items";
  } else if (Array.isArray(s.items)) {
    prefix = s.items;
    prefixKey = "items";
    rest = s.additionalItems ?? false;
    restKey = "additionalItems";
  } else {
    rest = s.items ?? true;
    restKey = "items";
  }
  const min = count(s, "minItems", path, 0);
  let max = capped(count(s, "maxItems", path, Infinity));
  if (min > MAX_COUNT) throw unsupported("minItems", path, `above ${MAX_COUNT} is not supported`);
  // A false tuple position ends the array before it; a false rest ends it after the tuple.
  const falseAt = prefix.indexOf(false);
  if (falseAt >= 0) max = Math.min(max, falseAt);
  else if (rest === false) max = Math.min(max, prefix.length);
  if (min > max)
    throw new UnsatisfiableSchema("minItems", path, `minItems ${min} exceeds the ${max} items allowed`);
  if (max === 0) return '"[" "]"';

  const k = Math.min(prefix.length, max);
  const element = prefix.slice(0, k).map((p, i) => ctx.visit(p, child(path, prefixKey, i), `${hint}-${i}`));
  let restExpr = max > k ? ctx.visit(rest, child(path, restKey), `${hint}-item`) : "";
  // A repeated element is a rule, so that a repetition copies one reference, not the element's text.
  if (max - k > 1 && !isName(restExpr)) restExpr = ctx.rule(`${hint}-item`, restExpr);
  const comma = ctx.sep.comma;
  // The elements after the first i: tuple positions one by one, then the rest repeated. Built from the
  // end (a loop: a tuple may be long); each position nests inside the one before, so every
  // POSITIONS_PER_RULE positions the rest becomes a rule of its own.
  const from = Math.max(k, 1);
  let tail = max > from ? repeat(seq(comma, restExpr), Math.max(0, min - from), max - from) : "";
  for (let i = k - 1; i >= 1; i--) {
    const next = seq(comma, element[i]!, tail);
    tail = i < min ? next : repeat(next, 0, 1);
    if (i % POSITIONS_PER_RULE === 0) tail = ctx.rule(`${hint}-from-${i}`, tail);
  }
  const body = seq(k > 0 ? element[0]! : restExpr, tail);
  return seq('"["', min === 0 ? repeat(body, 0, 1) : body, '"]"');
}
