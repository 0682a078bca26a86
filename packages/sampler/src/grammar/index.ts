export type { CodeRange, Expr, RuleDef, Sequence, SourcePos } from "./ast.js";
export type { Program } from "./compile.js";
export { GrammarConstraint } from "./constraint.js";
export { GrammarError } from "./errors.js";
export { Grammar } from "./grammar.js";
