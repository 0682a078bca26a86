/** Which schema keywords the converter understands, ignores (annotations) or refuses. */

import { unsupported } from "./errors.js";

/** Keywords that do not constrain a document: ignored. */
export const ANNOTATIONS = new Set([
  "title",
  "description",
  "default",
  "examples",
  "example",
  "$schema",
  "$comment",
  "deprecated",
  "readOnly",
  "writeOnly",
]);

/** Keywords that only hold schemas for `$ref` to reach: ignored where they are. */
export const CONTAINERS = new Set(["$defs", "definitions"]);

/** Keywords by the JSON type whose values they constrain (values of other types pass them). */
export const FAMILY_KEYWORDS = {
  object: ["properties", "required", "additionalProperties"],
  array: ["items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"],
  string: ["minLength", "maxLength", "format"],
  number: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
} as const;

/** Keywords that say which types or values are allowed, or combine schemas. */
const GENERAL = ["type", "nullable", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"];

/** Every keyword that constrains and is supported. */
export const SUPPORTED = new Set<string>([...GENERAL, ...Object.values(FAMILY_KEYWORDS).flat()]);

/** Throws SCHEMA_UNSUPPORTED for the first keyword of `schema` (at `path`) that is neither supported nor ignored. */
export function checkKeywords(schema: Record<string, unknown>, path: string, isRoot: boolean): void {
  for (const key of Object.keys(schema)) {
    if (SUPPORTED.has(key) || ANNOTATIONS.has(key) || CONTAINERS.has(key)) continue;
    if (key === "$id" && isRoot) continue;
    throw unsupported(
      key,
      path,
      KNOWN_UNSUPPORTED.has(key) ? "is not supported" : "is not a supported keyword",
    );
  }
  if (schema.uniqueItems !== undefined && schema.uniqueItems !== false) {
    throw unsupported("uniqueItems", path, "is only supported as false");
  }
}

/** Standard keywords refused by name (for the message only: any other keyword is refused too). */
const KNOWN_UNSUPPORTED = new Set([
  "pattern",
  "patternProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "dependentRequired",
  "dependentSchemas",
  "dependencies",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contains",
  "minContains",
  "maxContains",
  "multipleOf",
  "not",
  "if",
  "then",
  "else",
  "$anchor",
  "$dynamicRef",
  "$dynamicAnchor",
  "$recursiveRef",
  "$recursiveAnchor",
  "$id",
  "contentEncoding",
  "contentMediaType",
  "contentSchema",
]);

/** The keys of `schema` that constrain (neither annotations nor containers). */
export function constrainingKeys(schema: Record<string, unknown>): string[] {
  return Object.keys(schema).filter((k) => !ANNOTATIONS.has(k) && !CONTAINERS.has(k) && k !== "$id");
}

/** `schema` without `keys` (and without annotations and containers). */
export function without(schema: Record<string, unknown>, ...keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of constrainingKeys(schema)) if (!keys.includes(k)) out[k] = schema[k];
  return out;
}

/** Whether `value` is a plain object (a schema object). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
