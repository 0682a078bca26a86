/** Where something is in the grammar text (1-based line and column, counted in code points). */
export interface SourcePos {
  readonly line: number;
  readonly column: number;
}

/** An inclusive range of Unicode code points. */
export interface CodeRange {
  readonly lo: number;
  readonly hi: number;
}

/** One item of a sequence, as written. */
export type Expr =
  /** `"…"`: the code points in order. */
  | { readonly kind: "literal"; readonly chars: readonly number[]; readonly at: SourcePos }
  /** `[…]` or `[^…]`; `.` is a class of every code point. */
  | {
      readonly kind: "class";
      readonly ranges: readonly CodeRange[];
      readonly negated: boolean;
      readonly at: SourcePos;
    }
  /** A reference to the rule `name`. */
  | { readonly kind: "ref"; readonly name: string; readonly at: SourcePos }
  /** `( a | b )`. */
  | { readonly kind: "group"; readonly alternatives: readonly Sequence[]; readonly at: SourcePos }
  /** `x*`, `x+`, `x?`, `x{m}`, `x{m,}`, `x{m,n}`: `max` is Infinity when unbounded. */
  | {
      readonly kind: "repeat";
      readonly item: Expr;
      readonly min: number;
      readonly max: number;
      readonly at: SourcePos;
    };

/** Items matched one after the other (empty: matches the empty string). */
export type Sequence = readonly Expr[];

/** `name ::= alt | alt | …`. */
export interface RuleDef {
  readonly name: string;
  readonly alternatives: readonly Sequence[];
  readonly at: SourcePos;
}
