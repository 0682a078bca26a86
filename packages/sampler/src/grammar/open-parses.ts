import { GrammarError } from "./errors.js";
import { emptyPrefixEdges, stronglyConnected } from "./left-recursion.js";
import { MAX_ENTRIES, MAX_OPEN_PARSES } from "./limits.js";

type Alts = readonly (readonly (readonly number[])[])[];

/**
 * Refuses a grammar where reading one character could make the matcher do unbounded work: more
 * than {@link MAX_OPEN_PARSES} parses opened at once, or one rule entered more than
 * {@link MAX_ENTRIES} ways at once. After a character, the matcher expands the next position
 * through every rule it can enter without reading one; each way to reach a character class is one
 * stack (one parse). Both are counted from every position at once, before any text.
 *
 * Rules that enter each other only in last position (the loop of `x*`) share one stack bottom, so
 * the matcher expands each of their positions once: such a cycle is counted as one rule. (Any other
 * cycle without a character is left recursion, refused before this runs.) Both counts add where the
 * matcher may find the same stack twice, so they can only overcount: a grammar that passes never
 * does more.
 *
 * @param alts each rule's alternatives, as element codes (<= -2: a rule reference)
 */
export function checkOpenParses(
  alts: Alts,
  names: readonly string[],
  nullable: readonly boolean[],
  root: number,
): void {
  const edges = emptyPrefixEdges(alts, nullable);
  const sccs = stronglyConnected(edges);
  const component = new Int32Array(alts.length);
  sccs.forEach((scc, c) => {
    for (const r of scc) component[r] = c;
  });
  const opens = parsesOpened(alts, sccs, component, nullable);
  const entries = waysEntered(alts, edges, sccs, component, nullable, root);
  const worst = (counts: Float64Array) => counts.reduce((w, n, r) => (n > counts[w]! ? r : w), 0);
  const wo = worst(opens);
  if (opens[wo]! > MAX_OPEN_PARSES) {
    throw tooLarge(
      `reading one character in rule '${names[wo]}' could open ${count(opens[wo]!)} parses, more than the ${MAX_OPEN_PARSES} allowed`,
      names[wo]!,
    );
  }
  const we = worst(entries);
  if (entries[we]! > MAX_ENTRIES) {
    throw tooLarge(
      `rule '${names[we]}' can be entered ${count(entries[we]!)} ways at once (an optional item repeated that many times reads the same text that many ways), more than the ${MAX_ENTRIES} allowed`,
      names[we]!,
    );
  }
}

function tooLarge(message: string, rule: string): GrammarError {
  return new GrammarError("GRAMMAR_TOO_LARGE", message, undefined, rule);
}

function count(n: number): string {
  return Number.isFinite(n) ? String(n).replace("e+", "e") : "unboundedly many";
}

/**
 * Per rule, the most parses one character can open from its positions: a class is one; a
 * reference adds what its rule opens from its start, and what follows it when the rule can match
 * nothing; a rule opens what all its alternatives do. A position is charged to its rule.
 */
function parsesOpened(
  alts: Alts,
  sccs: readonly number[][],
  component: Int32Array,
  nullable: readonly boolean[],
): Float64Array {
  // From a rule's start, components sinks first (every rule referred to outside is counted).
  const fromStart = new Float64Array(alts.length);
  sccs.forEach((scc, c) => {
    let total = 0;
    for (const r of scc) {
      for (const seq of alts[r]!) {
        for (const e of seq) {
          if (e >= 0) {
            total += 1;
            break;
          }
          const to = -2 - e;
          if (component[to] !== c) total += fromStart[to]!;
          if (!nullable[to]) break;
        }
      }
    }
    for (const r of scc) fromStart[r] = total;
  });
  // From any position inside an alternative (where matching goes on after a character).
  const out = Float64Array.from(fromStart);
  alts.forEach((ruleAlts, r) => {
    for (const seq of ruleAlts) {
      let fromHere = 0;
      for (let i = seq.length - 1; i >= 0; i--) {
        const e = seq[i]!;
        fromHere = e >= 0 ? 1 : fromStart[-2 - e]! + (nullable[-2 - e] ? fromHere : 0);
        if (fromHere > out[r]!) out[r] = fromHere;
      }
    }
  });
  return out;
}

/**
 * Per rule, the most ways it can be entered at once (each with a different rest of the stack), so
 * the most stacks any one of its positions can have in one matcher state. Matching starts once at
 * the root, and again after each character inside an alternative, entering the references that
 * follow up to the first that cannot match nothing; a rule entered that way enters those of its
 * alternatives' starts once for every way it was itself entered. Components are taken sources
 * first, so every way into one is known before it passes them on.
 */
function waysEntered(
  alts: Alts,
  edges: ReturnType<typeof emptyPrefixEdges>,
  sccs: readonly number[][],
  component: Int32Array,
  nullable: readonly boolean[],
  root: number,
): Float64Array {
  // The most times one restart enters each rule directly.
  const direct = new Float64Array(alts.length);
  direct[root] = 1;
  const hits = new Map<number, number>();
  for (const ruleAlts of alts) {
    for (const seq of ruleAlts) {
      for (let i = 1; i < seq.length; i++) {
        if (seq[i - 1]! < 0 || seq[i]! >= 0) continue;
        const first = -2 - seq[i]!;
        if (direct[first]! < 1) direct[first] = 1;
        if (!nullable[first] || i + 1 >= seq.length || seq[i + 1]! >= 0) continue;
        // Several references in a row that can match nothing: count each rule's repeats.
        hits.clear();
        for (let j = i; j < seq.length && seq[j]! < 0; j++) {
          const to = -2 - seq[j]!;
          hits.set(to, (hits.get(to) ?? 0) + 1);
          if (!nullable[to]) break;
        }
        for (const [to, n] of hits) if (n > direct[to]!) direct[to] = n;
      }
    }
  }
  const incoming = new Float64Array(sccs.length);
  const out = new Float64Array(alts.length);
  for (let c = sccs.length - 1; c >= 0; c--) {
    const scc = sccs[c]!;
    let ways = incoming[c]!;
    for (const r of scc) ways += direct[r]!;
    for (const r of scc) {
      out[r] = ways;
      for (const { to } of edges[r]!) {
        if (component[to] !== c) incoming[component[to]!]! += ways;
      }
    }
  }
  return out;
}
