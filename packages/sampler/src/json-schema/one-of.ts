/**
 * `oneOf`: a grammar can only say "one branch or another", not "exactly one", so `oneOf` is converted
 * exactly when no document can match two of its branches, and refused otherwise. Branches are told apart
 * by what a schema says for sure about the values it allows (its {@link Shape}):
 * - their types (`type`, or the types of `const` / `enum` values), integer counted inside number;
 * - their `const` / `enum` values;
 * - for objects, a discriminator: a property required by both whose shapes cannot overlap.
 * Anything else (bounds, lengths, formats) is not looked at, so branches told apart only by those are
 * refused too.
 */

import { isObject, without } from "./keywords.js";
import { canonical, mergeSchemas } from "./merge.js";
import { ALL, declaredTypes, type JsonType, typeAllowed, typeOf } from "./types.js";

/** What a schema allows, over-approximated: every value it allows is allowed by its shape. */
export interface Shape {
  /** The types of allowed values ("integer": integers only; "number" includes integers). */
  readonly types: ReadonlySet<JsonType>;
  /** When the values are a known finite set: them, by canonical JSON text. */
  readonly values?: ReadonlyMap<string, unknown>;
  /** Members an allowed object must have, with the shapes of their values. */
  readonly required: ReadonlyMap<string, Shape>;
}

const ANY: Shape = { types: new Set(ALL), required: new Map() };
const NOTHING: Shape = { types: new Set(), required: new Map() };

/** How deep shapes follow properties, `$ref`s and nested unions, and how many schemas they read in all (past either: anything). */
const SHAPE_DEPTH = 16;
export const SHAPE_BUDGET = 10_000;

/** What is left of one {@link shapeOf}'s allowance of schemas read. */
export interface ShapeBudget {
  left: number;
}

/** The shape of `schema` (a JSON Schema within `root`), found without converting it. */
export function shapeOf(
  root: unknown,
  schema: unknown,
  budget: ShapeBudget = { left: SHAPE_BUDGET },
  depth = 0,
): Shape {
  if (schema === false) return NOTHING;
  if (!isObject(schema) || depth > SHAPE_DEPTH || --budget.left < 0) return ANY;
  try {
    const s =
      schema.$ref !== undefined || schema.allOf !== undefined
        ? mergeSchemas(root, [{ schema, path: "#" }], "#", budget)
        : schema;
    return shapeOfFlat(root, s, budget, depth);
  } catch {
    // A schema this cannot read is converted (and refused) elsewhere; here it may be anything.
    return ANY;
  }
}

function shapeOfFlat(root: unknown, s: Record<string, unknown>, budget: ShapeBudget, depth: number): Shape {
  const branches = (s.anyOf ?? s.oneOf) as unknown;
  if (Array.isArray(branches)) {
    const siblings = without(s, "anyOf", "oneOf");
    const shapes = branches.map((b) =>
      Object.keys(siblings).length === 0
        ? shapeOf(root, b, budget, depth + 1)
        : shapeOf(root, { allOf: [siblings, b] }, budget, depth + 1),
    );
    return join(shapes);
  }
  let types: Set<JsonType> = new Set(declaredTypes(s, "#") ?? ALL);
  let values: Map<string, unknown> | undefined;
  if (s.enum !== undefined || s.const !== undefined) {
    let list: unknown[] = Array.isArray(s.enum) ? s.enum : [];
    if (s.const !== undefined) {
      const c = canonical(s.const);
      list = s.enum === undefined ? [s.const] : list.filter((v) => canonical(v) === c);
    }
    values = new Map();
    for (const v of list) if (typeAllowed(typeOf(v), types)) values.set(canonical(v), v);
    types = new Set([...values.values()].map(typeOf));
  }
  const required = new Map<string, Shape>();
  if (types.has("object") && Array.isArray(s.required)) {
    const props = isObject(s.properties) ? s.properties : {};
    for (const name of s.required) {
      if (typeof name !== "string" || required.has(name)) continue;
      const sub = Object.hasOwn(props, name) ? props[name] : (s.additionalProperties ?? true);
      required.set(name, shapeOf(root, sub, budget, depth + 1));
    }
  }
  return values === undefined ? { types, required } : { types, values, required };
}

/** The shape of a value allowed by any of `shapes`. */
function join(shapes: readonly Shape[]): Shape {
  const types = new Set<JsonType>();
  for (const s of shapes) for (const t of s.types) types.add(t);
  let values: Map<string, unknown> | undefined;
  if (shapes.every((s) => s.values !== undefined)) {
    values = new Map();
    for (const s of shapes) for (const [k, v] of s.values!) values.set(k, v);
  }
  // A member is surely required only if every shape that allows objects requires it.
  const objects = shapes.filter((s) => s.types.has("object"));
  const required = new Map<string, Shape>();
  if (objects.length > 0) {
    for (const name of objects[0]!.required.keys()) {
      if (objects.every((s) => s.required.has(name))) {
        required.set(name, join(objects.map((s) => s.required.get(name)!)));
      }
    }
  }
  return values === undefined ? { types, required } : { types, values, required };
}

/** Whether a value of shape `s` may be `v`. */
function admits(s: Shape, v: unknown): boolean {
  if (!typeAllowed(typeOf(v), s.types as Set<JsonType>)) return false;
  if (s.values !== undefined && !s.values.has(canonical(v))) return false;
  if (isObject(v)) {
    for (const [name, sub] of s.required) if (!Object.hasOwn(v, name) || !admits(sub, v[name])) return false;
  }
  return true;
}

/** A kind of value both shapes may allow, in words, or undefined when none can be in both. */
export function overlap(a: Shape, b: Shape): string | undefined {
  if (a.values !== undefined || b.values !== undefined) {
    const [finite, other] = a.values !== undefined ? [a, b] : [b, a];
    for (const v of finite.values!.values()) if (admits(other, v)) return `both allow ${JSON.stringify(v)}`;
    return undefined;
  }
  for (const t of a.types) {
    const common = commonType(t, b.types);
    if (common === undefined) continue;
    if (common !== "object") return `both allow ${common === "integer" ? "integers" : `${common}s`}`;
    const told = [...a.required].some(
      ([name, sa]) => b.required.has(name) && overlap(sa, b.required.get(name)!) === undefined,
    );
    if (!told) return "both allow objects, and no property they both require tells them apart";
  }
  return undefined;
}

/** The type values of type `t` and of one of `types` can share, if any. */
function commonType(t: JsonType, types: ReadonlySet<JsonType>): JsonType | undefined {
  if (types.has(t)) return t;
  if (t === "integer" && types.has("number")) return "integer";
  if (t === "number" && types.has("integer")) return "integer";
  return undefined;
}
