import { SamplerError, type SamplerErrorCode } from "../errors.js";
import type { SourcePos } from "./ast.js";

/**
 * A {@link SamplerError} about a grammar: GRAMMAR_SYNTAX (with the line and column),
 * GRAMMAR_UNDEFINED_RULE or GRAMMAR_LEFT_RECURSION (with the rule at fault), or GRAMMAR_TOO_LARGE
 * (with the bound passed; see limits.ts).
 */
export class GrammarError extends SamplerError {
  /** 1-based line of the fault in the grammar text, when it has one. */
  readonly line: number | undefined;
  /** 1-based column (in code points) of the fault, when it has one. */
  readonly column: number | undefined;
  /** The rule at fault (an undefined or left-recursive rule), when there is one. */
  readonly rule: string | undefined;

  constructor(code: SamplerErrorCode, message: string, at?: SourcePos, rule?: string) {
    super(code, at ? `line ${at.line}, column ${at.column}: ${message}` : message, "grammar");
    this.line = at?.line;
    this.column = at?.column;
    this.rule = rule;
  }
}
