/**
 * JSON Schema → GBNF. The grammar's language is the set of JSON texts valid under the schema, or a
 * documented subset of it (see README-level notes in index.ts), written compactly: no whitespace except,
 * by default, an optional single space after each `,` and `:`. Unsupported keywords are refused with
 * SCHEMA_UNSUPPORTED naming the keyword and its JSON pointer; nothing is silently ignored except
 * annotations (title, description, default, examples, $schema, $comment, ...).
 */

import { invalidArgument } from "../errors.js";
import { arrayExpr } from "./array.js";
import { child, invalid, SchemaError, UnsatisfiableSchema, unsupported } from "./errors.js";
import { formatBody, SUPPORTED_FORMATS, type SupportedFormat } from "./formats.js";
import { alt, RuleTable, seq } from "./gbnf.js";
import { integerRange } from "./integer-range.js";
import { checkKeywords, constrainingKeys, isObject, without } from "./keywords.js";
import { capped, MAX_COUNT } from "./limits.js";
import { canonical, mergeSchemas } from "./merge.js";
import { objectExpr } from "./object.js";
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

/** Everything a conversion defines, to undo a failed `anyOf` branch. */
interface State {
  rules: RuleTable;
  prims: Primitives;
  refs: Map<string, string>;
  formats: Map<SupportedFormat, string>;
}

class Converter {
  private state: State;
  /** Refs entered since the last character consumed: meeting one again would be left recursion. */
  private leftOpen = new Set<string>();

  constructor(
    private readonly root: unknown,
    readonly sep: Separators,
  ) {
    const rules = new RuleTable();
    this.state = { rules, prims: new Primitives(rules, sep), refs: new Map(), formats: new Map() };
  }

  run(): string {
    const name = this.state.rules.reserve("root");
    this.state.refs.set("#", name);
    this.leftOpen.add("#");
    const body = this.visit(this.root, "#", "root");
    this.state.rules.define(name, body);
    return this.state.rules.toString(name);
  }

  private snapshot(): State {
    const { rules, refs, formats } = this.state;
    const copy = rules.clone();
    return {
      rules: copy,
      prims: this.state.prims.clone(copy),
      refs: new Map(refs),
      formats: new Map(formats),
    };
  }

  /** A GBNF expression for `schema` at `path`; rules made for it are named from `hint`. */
  readonly visit = (schema: unknown, path: string, hint: string): string => {
    if (schema === true) return this.state.prims.name("value");
    if (schema === false) throw new UnsatisfiableSchema("false", path, "the schema is false");
    if (!isObject(schema)) {
      throw new SchemaError("SCHEMA_INVALID", "", path, "a schema must be an object or a boolean");
    }
    checkKeywords(schema, path, path === "#");
    const keys = constrainingKeys(schema);
    if (schema.$ref !== undefined) {
      if (keys.length === 1) return this.ref(schema.$ref, path, hint);
      return this.visit(mergeSchemas(this.root, [{ schema, path }], path), path, hint);
    }
    if (schema.allOf !== undefined)
      return this.visit(mergeSchemas(this.root, [{ schema, path }], path), path, hint);
    if (schema.anyOf !== undefined || schema.oneOf !== undefined) return this.union(schema, path, hint);
    if (schema.enum !== undefined || schema.const !== undefined) return this.values(schema, path);
    return this.typed(schema, path, hint);
  };

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

  /** `anyOf` / `oneOf` (oneOf is treated as anyOf): each branch conjoined with the schema's other keywords. */
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
    branches.forEach((branch, i) => {
      const at = child(path, key, i);
      const saved = this.snapshot();
      const savedLeft = new Set(this.leftOpen);
      try {
        const merged =
          Object.keys(siblings).length === 0
            ? branch
            : mergeSchemas(
                this.root,
                [
                  { schema: siblings, path },
                  { schema: branch, path: at },
                ],
                at,
              );
        alts.push(this.visit(merged, at, `${hint}-${i}`));
      } catch (e) {
        if (!(e instanceof UnsatisfiableSchema)) throw e;
        this.state = saved;
        this.leftOpen = savedLeft;
      }
    });
    if (alts.length === 0) throw new UnsatisfiableSchema(key, path, "no branch is satisfiable");
    return alt(...alts);
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
    return alt(...values.map(jsonLiteral));
  }

  /** A schema of one or more types, each constrained by its own keywords. */
  private typed(schema: Record<string, unknown>, path: string, hint: string): string {
    const types = allowedTypes(schema, path);
    const prims = this.state.prims;
    const alts: string[] = [];
    const order: JsonType[] = ["object", "array", "string", "number", "integer", "boolean", "null"];
    for (const t of order) {
      if (!types.has(t)) continue;
      if (t === "integer" && types.has("number")) continue;
      if (t === "object")
        alts.push(
          this.rule(
            hint,
            this.withFreshLeft(() => objectExpr(this, schema, path, hint)),
          ),
        );
      else if (t === "array")
        alts.push(
          this.rule(
            hint,
            this.withFreshLeft(() => arrayExpr(this, schema, path, hint)),
          ),
        );
      else if (t === "string") alts.push(this.string(schema, path, hint));
      else if (t === "number") alts.push(this.number(schema, path));
      else if (t === "integer") alts.push(this.integer(schema, path, hint));
      else alts.push(prims.name(t));
    }
    return alt(...alts);
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

  private number(schema: Record<string, unknown>, path: string): string {
    for (const k of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
      if (schema[k] !== undefined) throw unsupported(k, path, 'is only supported with type "integer"');
    }
    return this.state.prims.name("number");
  }

  private integer(schema: Record<string, unknown>, path: string, hint: string): string {
    let lo = -Infinity;
    let hi = Infinity;
    const bound = (k: string): number | boolean | undefined => {
      const v = schema[k];
      if (v === undefined || typeof v === "boolean") return v;
      if (typeof v !== "number" || !Number.isFinite(v)) throw invalid(k, path, "must be a number");
      if (Math.abs(v) > Number.MAX_SAFE_INTEGER) throw unsupported(k, path, "beyond ±2^53 is not supported");
      return v;
    };
    const minimum = bound("minimum");
    const maximum = bound("maximum");
    const exMin = bound("exclusiveMinimum");
    const exMax = bound("exclusiveMaximum");
    if (typeof minimum === "number") lo = exMin === true ? Math.floor(minimum) + 1 : Math.ceil(minimum);
    if (typeof maximum === "number") hi = exMax === true ? Math.ceil(maximum) - 1 : Math.floor(maximum);
    if (typeof exMin === "number") lo = Math.max(lo, Math.floor(exMin) + 1);
    if (typeof exMax === "number") hi = Math.min(hi, Math.ceil(exMax) - 1);
    if (typeof minimum === "boolean") throw invalid("minimum", path, "must be a number");
    if (typeof maximum === "boolean") throw invalid("maximum", path, "must be a number");
    if (lo > hi) throw new UnsatisfiableSchema("minimum", path, `no integer lies in [${lo}, ${hi}]`);
    if (lo === -Infinity && hi === Infinity) return this.state.prims.name("integer");
    return this.rule(`${hint}-int`, integerRange(lo, hi));
  }
}
