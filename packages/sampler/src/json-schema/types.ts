/** JSON Schema's `type` keyword: reading it, inferring it and intersecting type sets. */

import { invalid } from "./errors.js";

export type JsonType = "object" | "array" | "string" | "number" | "integer" | "boolean" | "null";

export const ALL: readonly JsonType[] = ["object", "array", "string", "number", "boolean", "null"];
const NAMES = new Set<string>([...ALL, "integer"]);

/** The types `schema.type` names (plus null when `nullable: true`), or undefined if it has no `type`. */
export function declaredTypes(schema: Record<string, unknown>, path: string): Set<JsonType> | undefined {
  const t = schema.type;
  let out: Set<JsonType> | undefined;
  if (t !== undefined) {
    const list = Array.isArray(t) ? t : [t];
    if (list.length === 0) throw invalid("type", path, "must name at least one type");
    for (const name of list) {
      if (typeof name !== "string" || !NAMES.has(name))
        throw invalid("type", path, `has an unknown type ${JSON.stringify(name)}`);
    }
    out = new Set(list as JsonType[]);
  }
  if (schema.nullable !== undefined && typeof schema.nullable !== "boolean") {
    throw invalid("nullable", path, "must be a boolean");
  }
  if (schema.nullable === true && out !== undefined) out.add("null");
  return out;
}

/**
 * The types a schema allows: its declared types, or else every type. A keyword constrains only values of
 * its own type (`minimum` numbers, `properties` objects, ...), so `{"minimum": 3}` still allows strings.
 */
export function allowedTypes(schema: Record<string, unknown>, path: string): Set<JsonType> {
  return declaredTypes(schema, path) ?? new Set(ALL);
}

/** The types in both `a` and `b` (integer ∩ number = integer). */
export function intersectTypes(a: Set<JsonType>, b: Set<JsonType>): Set<JsonType> {
  const out = new Set<JsonType>();
  for (const t of a) {
    if (b.has(t)) out.add(t);
    else if (t === "integer" && b.has("number")) out.add("integer");
    else if (t === "number" && b.has("integer")) out.add("integer");
  }
  return out;
}

/** The JSON type of a JSON value (integers as "integer"). */
export function typeOf(value: unknown): JsonType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value as JsonType;
}

/** Whether a value of type `t` is allowed by `types`. */
export function typeAllowed(t: JsonType, types: Set<JsonType>): boolean {
  return types.has(t) || (t === "integer" && types.has("number"));
}
