/** Limits of the grammars written. */

/**
 * The largest repetition count written (GBNF parsers unroll `{m,n}`; this one's accepts up to 2000).
 * A larger maxLength or maxItems is lowered to it (a subset); a larger minLength or minItems is refused.
 */
export const MAX_COUNT = 2000;

/** `n` lowered to MAX_COUNT (Infinity stays). */
export function capped(n: number): number {
  return n === Infinity ? n : Math.min(n, MAX_COUNT);
}
