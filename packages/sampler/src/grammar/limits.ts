/**
 * The bounds a grammar must stay within, so that parsing, compiling and matching it take bounded
 * time, memory and stack whatever the text. Past each, GRAMMAR_TOO_LARGE (or GRAMMAR_SYNTAX for a
 * repetition count) with the bound in the message. See docs/LIMITS.md.
 */

/** Largest count in a repetition `{m,n}` (llama.cpp's MAX_REPETITION_THRESHOLD). */
export const MAX_REPETITION = 2000;

/**
 * Deepest nesting of groups and repetition operators (`((x)?)*` is 4 deep). Parsing and compiling
 * recurse once per level, so this keeps them far from the call-stack limit.
 */
export const MAX_NESTING = 256;

/**
 * Most elements (characters, classes, rule references and alternative ends) a grammar may have once
 * its repetitions are unrolled: `x{m,n}` copies `x` n times, so repetitions inside each other
 * multiply (`("a"{2000}){2000}` would be four million). Compiling 500,000 takes about 0.2 s.
 */
export const MAX_ELEMENTS = 500_000;

/**
 * Most parses that reading one character can open, counted over the grammar before any text: every
 * way to reach a character from one position without reading one (each a stack of the matcher).
 * Repetitions of optional items inside each other multiply them: `(("a"?){0,500}){0,500}` would
 * open 250,000 at its first character.
 */
export const MAX_OPEN_PARSES = 65_536;

/**
 * Most ways one rule may be entered at once (each with a different rest of the stack). An optional
 * item repeated n times, `("a"?){0,n}`, can read one "a" as any of its n copies; such a grammar
 * keeps n parses of the same text open at every character, and the matcher's work with them.
 */
export const MAX_ENTRIES = 1024;

/**
 * Most parses one matcher state may hold. An ambiguous grammar can exceed it only through the text
 * (each character doubling the ways to read what came before); matching then stops with
 * GRAMMAR_TOO_LARGE instead of growing without end.
 */
export const MAX_STATE_PARSES = 131_072;
