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

/**
 * Most digits written in a number's integral part and in its fraction (llama.cpp's bound), so that a
 * model cannot spend its whole budget inside one number. Integers have at most this many digits too.
 */
export const MAX_DIGITS = 16;

/** How deeply a schema's objects and arrays may nest (JSON values in `enum` / `const` included). */
export const MAX_DEPTH = 128;

/**
 * How deeply converting a schema may nest subschemas: about two per level of the schema (an `allOf` is
 * merged, then visited), more where a `$ref` beside other keywords or inside `allOf` is expanded in place.
 */
export const MAX_EXPANSION = 2 * MAX_DEPTH;

/** Most subschemas one conversion may visit (a `$ref` expanded in place can multiply them). */
export const MAX_VISITS = 50_000;

/** Most schemas the `allOf`s (and `$ref`s beside other keywords) of one conversion may expand to in all. */
export const MAX_MERGED = 100_000;
