/**
 * `allOf`: the conjunction of several schemas written as one schema. Types intersect, bounds tighten,
 * `required` unites, enums intersect, and each property's schema is the conjunction of what every branch
 * says about that key (its `properties` entry, else its `additionalProperties`). What cannot be merged
 * exactly (two tuple layouts, two different formats, two `anyOf`s, draft-4 boolean exclusive bounds) is
 * refused with SCHEMA_UNSUPPORTED.
 */

import { child, invalid, UnsatisfiableSchema, unsupported } from "./errors.js";
import { checkKeywords, constrainingKeys, isObject, without } from "./keywords.js";
import { MAX_MERGED } from "./limits.js";
import { resolveRef } from "./refs.js";
import { declaredTypes, intersectTypes, type JsonType } from "./types.js";

/** A schema and where it is (a JSON pointer, for errors). */
export interface Located {
  readonly schema: unknown;
  readonly path: string;
}

/** How many more schemas merging may expand (shared by the merges of one conversion). */
export interface MergeBudget {
  left: number;
}

/** The conjunction of `schemas` (JSON Schema booleans allowed): true, false, one schema or an allOf. */
export function conjunction(schemas: unknown[]): unknown {
  const kept = schemas.filter((s) => s !== true && s !== undefined);
  if (kept.includes(false)) return false;
  if (kept.length === 0) return true;
  return kept.length === 1 ? kept[0] : { allOf: kept };
}

/**
 * Object schemas with `$ref` and `allOf` expanded, in order (true dropped; false refused as unsatisfiable).
 * `budget.left` counts down the schemas expanded: `$ref`s reached several ways multiply them.
 */
function flatten(root: unknown, part: Located, depth: number, out: Located[], budget: MergeBudget): void {
  const { schema, path } = part;
  if (depth > 64) throw invalid("$ref", path, "nests too deeply (a reference cycle through allOf?)");
  if (--budget.left < 0) {
    throw unsupported(
      "allOf",
      path,
      `expands to more than ${MAX_MERGED} schemas with the other merges of this conversion ($refs reached several ways multiply them)`,
    );
  }
  if (schema === true) return;
  if (schema === false) throw new UnsatisfiableSchema("allOf", path, "a branch is false");
  if (!isObject(schema)) throw invalid("allOf", path, "holds something that is not a schema");
  checkKeywords(schema, path, false);
  const rest = without(schema, "$ref", "allOf");
  if (schema.$ref !== undefined) {
    const ref = schema.$ref as string;
    flatten(root, { schema: resolveRef(root, ref, path), path: ref }, depth + 1, out, budget);
  }
  if (schema.allOf !== undefined) {
    if (!Array.isArray(schema.allOf) || schema.allOf.length === 0) {
      throw invalid("allOf", path, "must be a non-empty array");
    }
    schema.allOf.forEach((s, i) => {
      flatten(root, { schema: s, path: child(path, "allOf", i) }, depth + 1, out, budget);
    });
  }
  if (schema.$ref === undefined && schema.allOf === undefined) out.push({ schema: rest, path });
  else if (Object.keys(rest).length > 0) flatten(root, { schema: rest, path }, depth + 1, out, budget);
}

/** A canonical JSON text for deep equality (object keys sorted). */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The one schema equivalent to the conjunction of `parts` (each expanded through $ref and allOf). */
export function mergeSchemas(
  root: unknown,
  parts: Located[],
  at: string,
  budget: MergeBudget = { left: MAX_MERGED },
): Record<string, unknown> {
  const flat: Located[] = [];
  for (const p of parts) flatten(root, p, 0, flat, budget);
  const schemas = flat.map((p) => p.schema as Record<string, unknown>);
  const out: Record<string, unknown> = {};

  // type (nullable folded in)
  let types: Set<JsonType> | undefined;
  flat.forEach(({ schema, path }) => {
    const s = schema as Record<string, unknown>;
    if (s.nullable === true && s.type === undefined) {
      throw unsupported("nullable", path, "without type is not supported inside allOf");
    }
    const t = declaredTypes(s, path);
    if (t !== undefined) types = types === undefined ? t : intersectTypes(types, t);
  });
  if (types !== undefined) {
    if (types.size === 0) throw new UnsatisfiableSchema("type", at, "the allOf branches share no type");
    out.type = [...types];
  }

  // enum / const
  let values: unknown[] | undefined;
  for (const { schema, path } of flat) {
    const s = schema as Record<string, unknown>;
    for (const key of ["enum", "const"] as const) {
      if (s[key] === undefined) continue;
      if (key === "enum" && (!Array.isArray(s.enum) || s.enum.length === 0)) {
        throw invalid("enum", path, "must be a non-empty array");
      }
      const list = key === "enum" ? (s.enum as unknown[]) : [s.const];
      if (values === undefined) values = list;
      else {
        const keep = new Set(list.map(canonical));
        values = values.filter((v) => keep.has(canonical(v)));
      }
    }
  }
  if (values !== undefined) {
    if (values.length === 0) throw new UnsatisfiableSchema("enum", at, "the allOf branches share no value");
    out.enum = values;
  }

  // bounds
  const tighten = (key: string, pick: (a: number, b: number) => number) => {
    for (const { schema, path } of flat) {
      const v = (schema as Record<string, unknown>)[key];
      if (v === undefined) continue;
      if (typeof v === "boolean")
        throw unsupported(key, path, "as a boolean (draft 4) is not supported inside allOf");
      if (typeof v !== "number" || !Number.isFinite(v)) throw invalid(key, path, "must be a number");
      out[key] = out[key] === undefined ? v : pick(out[key] as number, v);
    }
  };
  for (const key of ["minimum", "exclusiveMinimum", "minLength", "minItems"]) tighten(key, Math.max);
  for (const key of ["maximum", "exclusiveMaximum", "maxLength", "maxItems"]) tighten(key, Math.min);

  // format
  for (const { schema, path } of flat) {
    const f = (schema as Record<string, unknown>).format;
    if (f === undefined) continue;
    if (out.format !== undefined && out.format !== f) {
      throw unsupported("format", path, "differs between allOf branches");
    }
    out.format = f;
  }

  // required
  const required: string[] = [];
  for (const { schema, path } of flat) {
    const r = (schema as Record<string, unknown>).required;
    if (r === undefined) continue;
    if (!Array.isArray(r) || r.some((k) => typeof k !== "string"))
      throw invalid("required", path, "must be an array of strings");
    for (const k of r as string[]) if (!required.includes(k)) required.push(k);
  }
  if (required.length > 0) out.required = required;

  // properties / additionalProperties
  const keys: string[] = [];
  for (const { schema, path } of flat) {
    const p = (schema as Record<string, unknown>).properties;
    if (p === undefined) continue;
    if (!isObject(p)) throw invalid("properties", path, "must be an object");
    for (const k of Object.keys(p)) if (!keys.includes(k)) keys.push(k);
  }
  if (keys.length > 0) {
    const properties: Record<string, unknown> = {};
    for (const k of keys) {
      properties[k] = conjunction(
        schemas.map((s) => {
          const p = s.properties as Record<string, unknown> | undefined;
          return p !== undefined && Object.hasOwn(p, k) ? p[k] : s.additionalProperties;
        }),
      );
    }
    out.properties = properties;
  }
  const additional = schemas
    .filter((s) => s.additionalProperties !== undefined)
    .map((s) => s.additionalProperties);
  if (additional.length > 0) out.additionalProperties = conjunction(additional);

  // items
  const tuples = flat.filter(({ schema }) => {
    const s = schema as Record<string, unknown>;
    return s.prefixItems !== undefined || Array.isArray(s.items) || s.additionalItems !== undefined;
  });
  if (tuples.length > 0) {
    const others = flat.filter(
      (p) => p !== tuples[0] && (p.schema as Record<string, unknown>).items !== undefined,
    );
    if (tuples.length > 1 || others.length > 0) {
      throw unsupported(
        "prefixItems",
        tuples[0]!.path,
        "inside allOf with other item schemas is not supported",
      );
    }
    const t = tuples[0]!.schema as Record<string, unknown>;
    for (const key of ["prefixItems", "items", "additionalItems"])
      if (t[key] !== undefined) out[key] = t[key];
  } else {
    const items = schemas.filter((s) => s.items !== undefined).map((s) => s.items);
    if (items.length > 0) out.items = conjunction(items);
  }

  // anyOf / oneOf
  const unions = flat.filter(({ schema }) =>
    constrainingKeys(schema as Record<string, unknown>).some((k) => k === "anyOf" || k === "oneOf"),
  );
  if (unions.length > 1)
    throw unsupported("anyOf", unions[1]!.path, "in more than one allOf branch is not supported");
  if (unions.length === 1) {
    const u = unions[0]!.schema as Record<string, unknown>;
    if (u.anyOf !== undefined) out.anyOf = u.anyOf;
    if (u.oneOf !== undefined) out.oneOf = u.oneOf;
  }
  return out;
}
