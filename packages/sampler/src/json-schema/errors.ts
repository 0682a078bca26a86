/** The errors the JSON Schema → GBNF converter throws: SamplerErrors that also name the keyword and its path. */

import { SamplerError, type SamplerErrorCode } from "../errors.js";

/** A SamplerError about one place in a schema: `keyword` (e.g. `"pattern"`) at JSON pointer `path`. */
export class SchemaError extends SamplerError {
  /** The keyword at fault (`"pattern"`, `"$ref"`, `"format"`, ...). */
  readonly keyword: string;
  /** A JSON pointer (`#/properties/name/pattern`) to the keyword in the schema as written. */
  readonly path: string;

  constructor(code: SamplerErrorCode, keyword: string, path: string, message: string) {
    super(code, `${path}: ${message}`, keyword);
    this.keyword = keyword;
    this.path = path;
  }
}

/** No document satisfies the schema (or one branch of it); `anyOf` branches that throw this are dropped. */
export class UnsatisfiableSchema extends SchemaError {
  constructor(keyword: string, path: string, message: string) {
    super("SCHEMA_INVALID", keyword, path, `no JSON document satisfies the schema (${message})`);
  }
}

/** SCHEMA_UNSUPPORTED for `keyword` at `path` (`path` is the pointer of the schema holding it). */
export function unsupported(keyword: string, path: string, why = "is not supported"): SchemaError {
  return new SchemaError(
    "SCHEMA_UNSUPPORTED",
    keyword,
    `${path}/${escapePointer(keyword)}`,
    `"${keyword}" ${why}`,
  );
}

/** SCHEMA_INVALID for `keyword` at `path` (`path` is the pointer of the schema holding it). */
export function invalid(keyword: string, path: string, why: string): SchemaError {
  return new SchemaError(
    "SCHEMA_INVALID",
    keyword,
    `${path}/${escapePointer(keyword)}`,
    `"${keyword}" ${why}`,
  );
}

/** One JSON pointer segment with `~` and `/` escaped (RFC 6901). */
export function escapePointer(segment: string): string {
  return segment.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** `path` extended by `segments`. */
export function child(path: string, ...segments: (string | number)[]): string {
  return segments.reduce<string>((p, s) => `${p}/${escapePointer(String(s))}`, path);
}
