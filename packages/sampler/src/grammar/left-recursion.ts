import { GrammarError } from "./errors.js";

/** A reference a rule can expand without reading a character (in the empty-matching prefix of an alternative). */
export interface Edge {
  readonly to: number;
  /** The reference is the last element of its alternative (expanding it pushes nothing). */
  readonly tail: boolean;
}

/**
 * Refuses left recursion that would expand forever: a rule that can reach itself again before
 * matching any character, through a cycle that grows the stack (some reference on the cycle is not
 * the last of its alternative). A cycle made only of last-element references (such as `("a"?)*`,
 * whose loop rule is `r ::= "a"? r | ε`) expands to the same stacks again and is allowed.
 *
 * @param alts each rule's alternatives, as element codes (<= -2: a rule reference)
 * @param userRuleCount rules below this index were written; the others were generated (named in messages only when no written rule is on the cycle)
 */
export function checkLeftRecursion(
  alts: readonly (readonly (readonly number[])[])[],
  names: readonly string[],
  userRuleCount: number,
  nullable: readonly boolean[],
): void {
  const edges = emptyPrefixEdges(alts, nullable);
  for (const scc of stronglyConnected(edges)) {
    const inside = new Set(scc);
    for (const u of scc) {
      for (const { to, tail } of edges[u]!) {
        if (tail || !inside.has(to)) continue;
        const cycle = [u, ...pathWithin(edges, inside, to, u)];
        const shown = cycle.map((r) => names[r]!);
        const user = names[cycle.find((r) => r < userRuleCount) ?? u]!;
        throw new GrammarError(
          "GRAMMAR_LEFT_RECURSION",
          `rule '${user}' is left-recursive: it can reach itself again before matching any character (${shown.join(" → ")})`,
          undefined,
          user,
        );
      }
    }
  }
}

/** Each rule's references that can be expanded before any character: those in its alternatives' nullable prefixes. */
export function emptyPrefixEdges(
  alts: readonly (readonly (readonly number[])[])[],
  nullable: readonly boolean[],
): Edge[][] {
  return alts.map((ruleAlts) => {
    const out: Edge[] = [];
    for (const seq of ruleAlts) {
      for (let i = 0; i < seq.length; i++) {
        const e = seq[i]!;
        if (e >= 0) break;
        const to = -2 - e;
        out.push({ to, tail: i === seq.length - 1 });
        if (!nullable[to]) break;
      }
    }
    return out;
  });
}

/** The rules on a shortest path from `from` to `to` inside `inside` (both ends included). */
function pathWithin(edges: readonly Edge[][], inside: Set<number>, from: number, to: number): number[] {
  const prev = new Map<number, number>([[from, -1]]);
  const queue = [from];
  for (let qi = 0; qi < queue.length; qi++) {
    const u = queue[qi]!;
    if (u === to) break;
    for (const { to: v } of edges[u]!) {
      if (inside.has(v) && !prev.has(v)) {
        prev.set(v, u);
        queue.push(v);
      }
    }
  }
  const path: number[] = [];
  for (let v = to; v !== -1; v = prev.get(v)!) path.unshift(v);
  return path;
}

/**
 * Tarjan's strongly connected components (iterative), each as a list of rules, in reverse
 * topological order: a component comes after every component it has an edge to.
 */
export function stronglyConnected(edges: readonly Edge[][]): number[][] {
  const n = edges.length;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const out: number[][] = [];
  let next = 0;
  for (let s = 0; s < n; s++) {
    if (index[s] !== -1) continue;
    const work: [number, number][] = [[s, 0]];
    index[s] = low[s] = next++;
    stack.push(s);
    onStack[s] = 1;
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const [u, i] = top;
      const es = edges[u]!;
      if (i < es.length) {
        top[1]++;
        const v = es[i]!.to;
        if (index[v] === -1) {
          index[v] = low[v] = next++;
          stack.push(v);
          onStack[v] = 1;
          work.push([v, 0]);
        } else if (onStack[v]) low[u] = Math.min(low[u]!, index[v]!);
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const p = work[work.length - 1]![0];
        low[p] = Math.min(low[p]!, low[u]!);
      }
      if (low[u] === index[u]) {
        const comp: number[] = [];
        let v: number;
        do {
          v = stack.pop()!;
          onStack[v] = 0;
          comp.push(v);
        } while (v !== u);
        out.push(comp);
      }
    }
  }
  return out;
}
