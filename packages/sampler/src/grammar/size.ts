import type { Expr, RuleDef, Sequence } from "./ast.js";
import { GrammarError } from "./errors.js";
import { MAX_ELEMENTS } from "./limits.js";

/** What an expression costs once compiled: elements written where it stands, and in rules made once for it. */
interface Size {
  /** Elements in place (copied with it when a repetition repeats it). */
  readonly inline: number;
  /** Elements of the rules generated for it (groups, repetitions), made once however often it is copied. */
  readonly once: number;
}

/**
 * How many elements (alternative ends included) `defs` compile to, counted on the parsed rules
 * before anything is built, as compile lowers them: a group of several alternatives becomes one
 * reference and a rule; `x{m,n}` copies x m times in place and adds n − m optional rules of x.
 */
export function expandedSize(defs: readonly RuleDef[]): number {
  let total = 0;
  for (const d of defs) total += ruleSize(d.alternatives);
  return total;
}

/**
 * Throws GRAMMAR_TOO_LARGE, naming the largest rule, when `defs` would compile to more than
 * {@link MAX_ELEMENTS} elements (repetitions inside repetitions multiply).
 */
export function checkExpandedSize(defs: readonly RuleDef[]): void {
  let total = 0;
  let largest: RuleDef | undefined;
  let largestSize = -1;
  for (const d of defs) {
    const n = ruleSize(d.alternatives);
    total += n;
    if (n > largestSize) {
      largestSize = n;
      largest = d;
    }
  }
  if (total > MAX_ELEMENTS) {
    const n = Number.isFinite(total) ? String(total).replace("e+", "e") : "unboundedly many";
    throw new GrammarError(
      "GRAMMAR_TOO_LARGE",
      `the grammar expands to ${n} elements once its repetitions are unrolled (each x{m,n} copies x n times), more than the ${MAX_ELEMENTS} allowed; rule '${largest!.name}' is the largest`,
      largest!.at,
      largest!.name,
    );
  }
}

function ruleSize(alternatives: readonly Sequence[]): number {
  let n = 0;
  for (const seq of alternatives) {
    const s = seqSize(seq);
    n += s.inline + 1 + s.once;
  }
  return n;
}

function seqSize(seq: Sequence): Size {
  let inline = 0;
  let once = 0;
  for (const e of seq) {
    const s = exprSize(e);
    inline += s.inline;
    once += s.once;
  }
  return { inline, once };
}

function exprSize(e: Expr): Size {
  switch (e.kind) {
    case "literal":
      return { inline: e.chars.length, once: 0 };
    case "class":
    case "ref":
      return { inline: 1, once: 0 };
    case "group":
      if (e.alternatives.length === 1) return seqSize(e.alternatives[0]!);
      return { inline: 1, once: ruleSize(e.alternatives) };
    case "repeat": {
      const body = exprSize(e.item);
      const optional = e.max === Infinity ? 1 : e.max - e.min;
      // Each optional copy is a rule `r ::= body next | ε`: the body, a reference, two ends.
      return {
        inline: body.inline * e.min + (optional > 0 ? 1 : 0),
        once: body.once + (optional > 0 ? (body.inline + 3) * optional : 0),
      };
    }
  }
}
