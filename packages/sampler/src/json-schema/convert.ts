/**
 * JSON Schema → GBNF. The grammar's language is the set of JSON texts valid under the schema, or a
 * documented subset of it (see README-level notes in index.ts), written compactly: no whitespace except,
 * by default, an optional single space after each `,` and `:`. Unsupported keywords are refused with
 * SCHEMA_UNSUPPORTED naming the keyword and its JSON pointer; nothing is silently ignored except
 * annotations (title, description, default, examples, $schema, $comment, ...).
 */

import { invalidArgument } from "../errors.js";
import { GrammarError } from "../grammar/errors.js";
import { parseRules } from "../grammar/parse.js";
import { checkExpandedSize } from "../grammar/size.js";
import { arrayExpr } from "./array.js";
import { checkDepth } from "./depth.js";
import { child, invalid, SchemaError, UnsatisfiableSchema, unsupported } from "./errors.js";
import { formatBody, SUPPORTED_FORMATS, type SupportedFormat } from "./formats.js";
import { altOf, RuleTable, seq, truncate } from "./gbnf.js";
import { checkKeywords, constrainingKeys, isObject, without } from "./keywords.js";
import { capped, MAX_COUNT, MAX_EXPANSION, MAX_MERGED, MAX_VISITS } from "./limits.js";
import { canonical, type MergeBudget, mergeSchemas } from "./merge.js";
import { bounded, integerBetween, numberBetween, readBounds } from "./numeric.js";
import { objectExpr } from "./object.js";
import { overlap, SHAPE_BUDGET, shapeOf } from "./one-of.js";
import { jsonLiteral, Primitives, type Separators, separators, stringBody } from "./primitives.js";
import { refHint, resolveRef } from "./refs.js";
import { allowedTypes, declaredTypes, type JsonType, typeAllowed, typeOf } from "./types.js";

/** Options of `jsonSchemaToGbnf`. */
export interface JsonSchemaToGbnfOptions {
  /**
   * Whitespace the grammar allows between tokens: `"optional-space"` (the default) an optional single space
   * after each `,` and `:`; `"none"` none at all.
   */
  whitespace?: "optional-space" | "none";
}

/**
 * GBNF text (llama.cpp's dialect; the start rule is `root`) whose language is the JSON documents valid under
 * `schema`, or a documented subset of them. Throws SchemaError (a SamplerError) with code SCHEMA_UNSUPPORTED
 * for a keyword it does not support and SCHEMA_INVALID for a malformed or unsatisfiable schema.
 */
export function jsonSchemaToGbnf(schema: unknown, options: JsonSchemaToGbnfOptions = {}): string {
  const whitespace = options.whitespace ?? "optional-space";
  if (whitespace !== "optional-space" && whitespace !== "none") {
    throw invalidArgument("whitespace", `unknown value ${JSON.stringify(whitespace)}`);
  }
  return new Converter(schema, separators(whitespace)).run();
}

/** Everything a conversion defines (each only grows), and a mark in it to undo a failed branch. */
interface State {
  rules: RuleTable;
  prims: Primitives;
  refs: Map<string, string>;
  formats: Map<SupportedFormat, string>;
}

interface Mark {
  rules: number[];
  prims: number;
  refs: number;
  formats: number;
  leftOpen: Set<string>;
}

class Converter {
  private state: State;
  /** Refs entered since the last character consumed: meeting one again would be left recursion. */
  private leftOpen = new Set<string>();
  /** Subschemas visited so far, and visits open now. */
  private visits = 0;
  private depth = 0;
  /** What is left of this conversion's allowance of schemas expanded by merging. */
  private readonly merged: MergeBudget = { left: MAX_MERGED };

  constructor(
    private readonly root: unknown,
    readonly sep: Separators,
  ) {
    const rules = new RuleTable();
    this.state = { rules, prims: new Primitives(rules, sep), refs: new Map(), formats: new Map() };
  }

  run(): string {
    checkDepth(this.root);
    const name = this.state.rules.reserve("root");
    this.state.refs.set("#", name);
    this.leftOpen.add("#");
    const body = this.visit(this.root, "#", "root");
    this.state.rules.define(name, body);
    const text = this.state.rules.toString(name);
    try {
      checkExpandedSize(parseRules(text));
    } catch (e) {
      if (!(e instanceof GrammarError) || e.code !== "GRAMMAR_TOO_LARGE") throw e;
      throw new SchemaError(
        "SCHEMA_UNSUPPORTED",
        "",
        "#",
        `the grammar for this schema would be too large to enforce: ${e.message}`,
      );
    }
    return text;
  }

  private mark(): Mark {
    const { rules, prims, refs, formats } = this.state;
    return {
      rules: rules.mark(),
      prims: prims.mark(),
      refs: refs.size,
      formats: formats.size,
      leftOpen: new Set(this.leftOpen),
    };
  }

  /** Undoes everything defined since `m` (a branch found unsatisfiable part way). */
  private rollback(m: Mark): void {
    const { rules, prims, refs, formats } = this.state;
    rules.rollback(m.rules);
    prims.rollback(m.prims);
    truncate(refs, m.refs);
    truncate(formats, m.formats);
    this.leftOpen = m.leftOpen;
  }

  /** `f()`, or undefined with everything it defined undone when it finds its schema unsatisfiable. */
  private unlessUnsatisfiable(f: () => string): string | undefined {
    const m = this.mark();
    try {
      return f();
    } catch (e) {
      if (!(e instanceof UnsatisfiableSchema)) throw e;
      this.rollback(m);
      return undefined;
    }
  }

  /**
   * A GBNF expression for `schema` at `path`; rules made for it are named from `hint`. Bounded in depth
   * and in count: a `$ref` beside other keywords or in `allOf` is expanded in place, which can nest
   * without end (a cycle) or multiply.
   */
  readonly visit = (schema: unknown, path: string, hint: string): string => {
    if (++this.visits > MAX_VISITS) {
      throw new SchemaError(
        "SCHEMA_UNSUPPORTED",
        "$ref",
        path,
        `converting the schema visits more than ${MAX_VISITS} subschemas ($refs expanded in place multiply them)`,
      );
    }
    if (this.depth >= MAX_EXPANSION) {
      throw new SchemaError(
        "SCHEMA_UNSUPPORTED",
        "$ref",
        path,
        `converting the schema nests more than ${MAX_EXPANSION} subschemas deep (a $ref that reaches itself beside other keywords or through allOf is not supported)`,
      );
    }
    this.depth++;
    try {
      return this.visitOne(schema, path, hint);
    } finally {
      this.depth--;
    }
  };

  private visitOne(schema: unknown, path: string, hint: string): string {
    if (schema === true) return this.state.prims.name("value");
    if (schema === false) throw new UnsatisfiableSchema("false", path, "the schema is false");
    if (!isObject(schema)) {
      throw new SchemaError("SCHEMA_INVALID", "", path, "a schema must be an object or a boolean");
    }
    checkKeywords(schema, path, path === "#");
    const keys = constrainingKeys(schema);
    if (schema.$ref !== undefined) {
      if (keys.length === 1) return this.ref(schema.$ref, path, hint);
      return this.visit(mergeSchemas(this.root, [{ schema, path }], path, this.merged), path, hint);
    }
    if (schema.allOf !== undefined)
      return this.visit(mergeSchemas(this.root, [{ schema, path }], path, this.merged), path, hint);
    if (schema.anyOf !== undefined || schema.oneOf !== undefined) return this.union(schema, path, hint);
    if (schema.enum !== undefined || schema.const !== undefined) return this.values(schema, path);
    return this.typed(schema, path, hint);
  }

  /** `$ref`: one rule per target, so that recursion works. */
  private ref(ref: unknown, path: string, hint: string): string {
    const target = resolveRef(this.root, ref, path);
    const key = ref as string;
    const existing = this.state.refs.get(key);
    if (existing !== undefined) {
      if (this.leftOpen.has(key)) {
        throw invalid("$ref", path, `"${key}" refers back to itself before any character (left recursion)`);
      }
      return existing;
    }
    const name = this.state.rules.reserve(refHint(key) || hint);
    this.state.refs.set(key, name);
    this.leftOpen.add(key);
    try {
      this.state.rules.define(name, this.visit(target, key, name));
    } finally {
      this.leftOpen.delete(key);
    }
    return name;
  }

  /**
   * `anyOf` / `oneOf`: each branch conjoined with the schema's other keywords. A `oneOf` whose branches
   * could both match one document is refused (see one-of.ts): a grammar cannot require exactly one.
   */
  private union(schema: Record<string, unknown>, path: string, hint: string): string {
    if (schema.anyOf !== undefined && schema.oneOf !== undefined) {
      throw unsupported("oneOf", path, "alongside anyOf is not supported");
    }
    const key = schema.anyOf !== undefined ? "anyOf" : "oneOf";
    const branches = schema[key];
    if (!Array.isArray(branches) || branches.length === 0)
      throw invalid(key, path, "must be a non-empty array");
    const siblings = without(schema, key);
    const alts: string[] = [];
    const kept: { index: number; schema: unknown }[] = [];
    branches.forEach((branch, i) => {
      const at = child(path, key, i);
      let merged: unknown = branch;
      const expr = this.unlessUnsatisfiable(() => {
        if (Object.keys(siblings).length > 0) {
          const parts = [
            { schema: siblings, path },
            { schema: branch, path: at },
          ];
          merged = mergeSchemas(this.root, parts, at, this.merged);
        }
        return this.visit(merged, at, `${hint}-${i}`);
      });
      if (expr === undefined) return;
      alts.push(expr);
      kept.push({ index: i, schema: merged });
    });
    if (alts.length === 0) throw new UnsatisfiableSchema(key, path, "no branch is satisfiable");
    if (key === "oneOf") this.checkDisjoint(kept, path);
    return altOf(alts);
  }

  /** Refuses a `oneOf` two of whose branches (as conjoined with their siblings) may match one document. */
  private checkDisjoint(kept: readonly { index: number; schema: unknown }[], path: string): void {
    const budget = { left: SHAPE_BUDGET };
    const shapes = kept.map((k) => shapeOf(this.root, k.schema, budget));
    for (let i = 0; i < kept.length; i++) {
      for (let j = i + 1; j < kept.length; j++) {
        const why = overlap(shapes[i]!, shapes[j]!);
        if (why === undefined) continue;
        throw unsupported(
          "oneOf",
          path,
          `branches ${kept[i]!.index} and ${kept[j]!.index} overlap (${why}): a grammar cannot enforce that exactly one branch matches, so oneOf is supported only when its branches cannot overlap — different types, disjoint const/enum values, or a property required in every branch with disjoint const/enum values (use anyOf if a document may match several)`,
        );
      }
    }
  }

  /** `enum` / `const`: the values' compact JSON texts, filtered by `type`. */
  private values(schema: Record<string, unknown>, path: string): string {
    for (const k of constrainingKeys(schema)) {
      if (!["enum", "const", "type", "nullable"].includes(k)) {
        throw unsupported(
          k,
          path,
          `alongside ${schema.enum !== undefined ? "enum" : "const"} is not supported`,
        );
      }
    }
    if (schema.enum !== undefined && (!Array.isArray(schema.enum) || schema.enum.length === 0)) {
      throw invalid("enum", path, "must be a non-empty array");
    }
    let values: unknown[] = schema.enum !== undefined ? (schema.enum as unknown[]) : [schema.const];
    if (schema.enum !== undefined && schema.const !== undefined) {
      const c = canonical(schema.const);
      values = values.filter((v) => canonical(v) === c);
    }
    const types = declaredTypes(schema, path);
    values = values.filter((v) => types === undefined || typeAllowed(typeOf(v), types));
    if (values.length === 0) throw new UnsatisfiableSchema("enum", path, "no value has an allowed type");
    return altOf(values.map(jsonLiteral));
  }

  /**
   * A schema of one or more types, each constrained by its own keywords. Of several types, one that no
   * value can satisfy (`{"minLength": 3, "maxLength": 2}` for strings) is left out; if none is left, the
   * schema is unsatisfiable.
   */
  private typed(schema: Record<string, unknown>, path: string, hint: string): string {
    const types = allowedTypes(schema, path);
    const alts: string[] = [];
    const order: JsonType[] = ["object", "array", "string", "number", "integer", "boolean", "null"];
    let unsatisfiable: UnsatisfiableSchema | undefined;
    for (const t of order) {
      if (!types.has(t)) continue;
      if (t === "integer" && types.has("number")) continue;
      const one = () => this.typeExpr(t, schema, path, hint);
      if (types.size === 1) return one();
      const x = this.unlessUnsatisfiable(() => {
        try {
          return one();
        } catch (e) {
          if (e instanceof UnsatisfiableSchema) unsatisfiable ??= e;
          throw e;
        }
      });
      if (x !== undefined) alts.push(x);
    }
    if (alts.length === 0) throw unsatisfiable ?? new UnsatisfiableSchema("type", path, "no type is allowed");
    return altOf(alts);
  }

  /** The expression for the values of type `t` that `schema` allows. */
  private typeExpr(t: JsonType, schema: Record<string, unknown>, path: string, hint: string): string {
    if (t === "object") {
      return this.rule(
        hint,
        this.withFreshLeft(() => objectExpr(this, schema, path, hint)),
      );
    }
    if (t === "array") {
      return this.rule(
        hint,
        this.withFreshLeft(() => arrayExpr(this, schema, path, hint)),
      );
    }
    if (t === "string") return this.string(schema, path, hint);
    if (t === "number") return this.number(schema, path, hint);
    if (t === "integer") return this.integer(schema, path, hint);
    return this.state.prims.name(t);
  }

  rule(hint: string, body: string): string {
    return this.state.rules.rule(hint, body);
  }

  /** Runs `f` (which consumes a character first) with no refs open for left recursion. */
  private withFreshLeft(f: () => string): string {
    const saved = this.leftOpen;
    this.leftOpen = new Set();
    try {
      return f();
    } finally {
      this.leftOpen = saved;
    }
  }

  private string(schema: Record<string, unknown>, path: string, hint: string): string {
    const lengths = ["minLength", "maxLength"].filter((k) => schema[k] !== undefined);
    for (const k of lengths) {
      const v = schema[k];
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0)
        throw invalid(k, path, "must be a non-negative integer");
    }
    if (schema.format !== undefined) {
      const f = schema.format;
      if (typeof f !== "string") throw invalid("format", path, "must be a string");
      if (!(SUPPORTED_FORMATS as readonly string[]).includes(f)) {
        throw unsupported("format", path, `"${f}" is not supported (only ${SUPPORTED_FORMATS.join(", ")})`);
      }
      if (lengths.length > 0) throw unsupported(lengths[0]!, path, "alongside format is not supported");
      return this.rule(`${f}-string`, seq('"\\""', this.format(f as SupportedFormat), '"\\""'));
    }
    const min = (schema.minLength as number | undefined) ?? 0;
    const max = capped((schema.maxLength as number | undefined) ?? Infinity);
    if (min > MAX_COUNT) throw unsupported("minLength", path, `above ${MAX_COUNT} is not supported`);
    if (min > max)
      throw new UnsatisfiableSchema("minLength", path, `minLength ${min} exceeds maxLength ${max}`);
    if (min === 0 && max === Infinity) return this.state.prims.name("string");
    return this.rule(`${hint}-string`, stringBody(this.state.prims.name, min, max));
  }

  private format(f: SupportedFormat): string {
    const existing = this.state.formats.get(f);
    if (existing !== undefined) return existing;
    const name = this.state.rules.reserve(f);
    this.state.formats.set(f, name);
    this.state.rules.define(
      name,
      formatBody(f, (g) => this.format(g)),
    );
    return name;
  }

  private number(schema: Record<string, unknown>, path: string, hint: string): string {
    const b = readBounds(schema, path);
    if (!bounded(b)) return this.state.prims.name("number");
    return this.rule(`${hint}-num`, numberBetween(b, path));
  }

  private integer(schema: Record<string, unknown>, path: string, hint: string): string {
    const b = readBounds(schema, path);
    if (!bounded(b)) return this.state.prims.name("integer");
    return this.rule(`${hint}-int`, integerBetween(b, path));
  }
}
