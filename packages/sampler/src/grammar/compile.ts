import type { Expr, RuleDef, Sequence } from "./ast.js";
import { CharSet } from "./charset.js";
import { GrammarError } from "./errors.js";
import { checkLeftRecursion } from "./left-recursion.js";
import { checkOpenParses } from "./open-parses.js";
import { checkExpandedSize } from "./size.js";

/** Marks the end of an alternative in {@link Program.code}. */
export const END = -1;

/** The element code of a reference to rule `r` (always <= -2). */
export function refCode(r: number): number {
  return -2 - r;
}

/** The rule a reference code (<= -2) points at. */
export function refRule(code: number): number {
  return -2 - code;
}

/**
 * A grammar lowered to flat code: every alternative of every rule is a run of elements in `code`
 * ended by {@link END}. An element >= 0 is a character set (`charSets[e]`), one <= -2 a rule
 * reference ({@link refRule}). Groups and repetitions have become rules of their own.
 */
export interface Program {
  readonly code: Int32Array;
  readonly charSets: readonly CharSet[];
  /** Rule names: those written, then the generated ones (`name_1`, … after the rule they come from). */
  readonly ruleNames: readonly string[];
  /** How many of {@link ruleNames} were written (the rest were generated). */
  readonly userRuleCount: number;
  /** Where each alternative of each rule starts in `code`. */
  readonly ruleAlts: readonly Int32Array[];
  /** Whether each rule can match the empty string. */
  readonly nullable: readonly boolean[];
  readonly root: number;
}

/**
 * Lowers parsed rules to a {@link Program}. Throws GRAMMAR_UNDEFINED_RULE for a reference to a rule
 * that is not defined or a missing `root`, GRAMMAR_LEFT_RECURSION for a rule that can reach
 * itself again before matching a character, and GRAMMAR_TOO_LARGE past MAX_ELEMENTS,
 * MAX_OPEN_PARSES or MAX_ENTRIES.
 */
export function compile(defs: readonly RuleDef[], root: string): Program {
  checkExpandedSize(defs);
  return new Compiler(defs).finish(root);
}

class Compiler {
  private readonly names: string[] = [];
  private readonly alts: number[][][] = [];
  private readonly index = new Map<string, number>();
  private readonly charSets: CharSet[] = [];
  private readonly charSetIndex = new Map<string, number>();
  private readonly generated = new Map<string, number>();
  private readonly userRuleCount: number;

  constructor(defs: readonly RuleDef[]) {
    this.userRuleCount = defs.length;
    for (const d of defs) this.newRule(d.name);
    for (const d of defs) {
      const r = this.index.get(d.name)!;
      this.alts[r] = d.alternatives.map((seq) => this.sequence(seq, d.name));
    }
  }

  finish(root: string): Program {
    const r = this.index.get(root);
    if (r === undefined) {
      throw new GrammarError(
        "GRAMMAR_UNDEFINED_RULE",
        `the grammar has no root rule '${root}' (write '${root} ::= …')`,
        undefined,
        root,
      );
    }
    const code: number[] = [];
    const ruleAlts = this.alts.map((alts) =>
      Int32Array.from(alts, (seq) => {
        const start = code.length;
        for (const e of seq) code.push(e);
        code.push(END);
        return start;
      }),
    );
    const nullable = nullableRules(this.alts);
    checkLeftRecursion(this.alts, this.names, this.userRuleCount, nullable);
    checkOpenParses(this.alts, this.names, nullable, r);
    return {
      code: Int32Array.from(code),
      charSets: this.charSets,
      ruleNames: this.names,
      userRuleCount: this.userRuleCount,
      ruleAlts,
      nullable,
      root: r,
    };
  }

  private newRule(name: string): number {
    const r = this.names.length;
    this.names.push(name);
    this.alts.push([]);
    if (!this.index.has(name)) this.index.set(name, r);
    return r;
  }

  /** A new rule named after `owner` with the given alternatives. */
  private generatedRule(owner: string, alts: number[][]): number {
    const n = (this.generated.get(owner) ?? 0) + 1;
    this.generated.set(owner, n);
    const r = this.newRule(`${owner}_${n}`);
    this.alts[r] = alts;
    return r;
  }

  private sequence(seq: Sequence, owner: string): number[] {
    const out: number[] = [];
    for (const e of seq) this.expr(e, owner, out);
    return out;
  }

  private expr(e: Expr, owner: string, out: number[]): void {
    switch (e.kind) {
      case "literal":
        for (const c of e.chars) out.push(this.charSet(CharSet.of([{ lo: c, hi: c }])));
        return;
      case "class":
        out.push(this.charSet(CharSet.of(e.ranges, e.negated)));
        return;
      case "ref": {
        const r = this.index.get(e.name);
        if (r === undefined) {
          throw new GrammarError(
            "GRAMMAR_UNDEFINED_RULE",
            `rule '${owner}' references the undefined rule '${e.name}'`,
            e.at,
            e.name,
          );
        }
        out.push(refCode(r));
        return;
      }
      case "group":
        if (e.alternatives.length === 1) {
          for (const x of e.alternatives[0]!) this.expr(x, owner, out);
        } else {
          const alts = e.alternatives.map((seq) => this.sequence(seq, owner));
          out.push(refCode(this.generatedRule(owner, alts)));
        }
        return;
      case "repeat": {
        const body: number[] = [];
        this.expr(e.item, owner, body);
        for (let i = 0; i < e.min; i++) for (const x of body) out.push(x);
        if (e.max === Infinity) {
          // r ::= body r | ε
          const r = this.generatedRule(owner, []);
          this.alts[r] = [[...body, refCode(r)], []];
          out.push(refCode(r));
        } else if (e.max > e.min) {
          // up to k more: r1 ::= body r2 | ε, …, rk ::= body | ε
          let inner = this.generatedRule(owner, [body, []]);
          for (let k = e.max - e.min - 1; k > 0; k--) {
            inner = this.generatedRule(owner, [[...body, refCode(inner)], []]);
          }
          out.push(refCode(inner));
        }
        return;
      }
    }
  }

  private charSet(set: CharSet): number {
    const key = set.bounds.join(",");
    let id = this.charSetIndex.get(key);
    if (id === undefined) {
      id = this.charSets.length;
      this.charSets.push(set);
      this.charSetIndex.set(key, id);
    }
    return id;
  }
}

/** Which rules can match the empty string (a fixed point over the alternatives). */
function nullableRules(alts: readonly (readonly (readonly number[])[])[]): boolean[] {
  const nullable = alts.map(() => false);
  for (let changed = true; changed; ) {
    changed = false;
    alts.forEach((ruleAlts, r) => {
      if (nullable[r]) return;
      const yes = ruleAlts.some((seq) => seq.every((e) => e <= -2 && nullable[refRule(e)]));
      if (yes) {
        nullable[r] = true;
        changed = true;
      }
    });
  }
  return nullable;
}
