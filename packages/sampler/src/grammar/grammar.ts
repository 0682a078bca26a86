import type { ConstraintVocab, TokenConstraint } from "../constraint.js";
import { compile, type Program } from "./compile.js";
import { GrammarConstraint } from "./constraint.js";
import { parseRules } from "./parse.js";
import { DEAD, Matcher } from "./stacks.js";
import { NO_PARTIAL } from "./utf8.js";

/**
 * A GBNF grammar (llama.cpp's format), parsed and checked: every referenced rule is defined, the
 * root exists, and no rule is left-recursive. Use {@link constraint} to keep generated tokens
 * inside it, or {@link matches} to test a text.
 *
 * ```ts
 * const g = Grammar.parse('root ::= "yes" | "no"');
 * g.matches("yes"); // true
 * const c = g.constraint(tokenizer); // a TokenConstraint for the sampler
 * ```
 */
export class Grammar {
  /** The grammar lowered to flat code (for inspection and tests). */
  readonly program: Program;
  /** The rule matching starts from. */
  readonly root: string;
  #matcher: Matcher | undefined;

  private constructor(program: Program, root: string) {
    this.program = program;
    this.root = root;
  }

  /**
   * Parses GBNF `text` with `root` as the start rule. Throws a {@link GrammarError}
   * (a SamplerError) GRAMMAR_SYNTAX, GRAMMAR_UNDEFINED_RULE, GRAMMAR_LEFT_RECURSION or
   * GRAMMAR_TOO_LARGE (past a bound of limits.ts: matching could take unbounded work).
   */
  static parse(text: string, root = "root"): Grammar {
    return new Grammar(compile(parseRules(text), root), root);
  }

  /** The names of the rules as written, in order. */
  get ruleNames(): string[] {
    return this.program.ruleNames.slice(0, this.program.userRuleCount);
  }

  /** A fresh {@link TokenConstraint} over `vocab`, at the start of the grammar. */
  constraint(vocab: ConstraintVocab): TokenConstraint & { clearMaskCache(): void } {
    return new GrammarConstraint(new Matcher(this.program), vocab);
  }

  /**
   * Whether the whole of `text` matches the root rule. Throws SamplerError GRAMMAR_TOO_LARGE when an
   * ambiguous grammar would hold more than MAX_STATE_PARSES parses open at once (so do a constraint's
   * methods).
   */
  matches(text: string): boolean {
    const s = this.#run(text);
    return s !== DEAD && this.#m().isComplete(s);
  }

  /**
   * Whether `text` is the start of some match. As bytes, it may end inside a UTF-8 character that
   * can still complete to one the grammar accepts there.
   */
  matchesPrefix(text: string | Uint8Array): boolean {
    if (typeof text === "string") return this.#run(text) !== DEAD;
    const m = this.#m();
    return m.feed(m.initial, NO_PARTIAL, text, new Int32Array(1)) !== DEAD;
  }

  #run(text: string): number {
    const m = this.#m();
    let s = m.initial;
    for (const ch of text) {
      s = m.next(s, ch.codePointAt(0)!);
      if (s === DEAD) return DEAD;
    }
    return s;
  }

  #m(): Matcher {
    this.#matcher ??= new Matcher(this.program);
    return this.#matcher;
  }
}
