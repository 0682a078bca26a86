import { describe, expect, it } from "vitest";
import { SamplerError } from "../errors.js";
import { Grammar } from "../grammar/index.js";
import { MAX_ELEMENTS, MAX_NESTING } from "../grammar/limits.js";
import { jsonSchemaToGbnf, SchemaError } from "./index.js";
import { MAX_DEPTH, MAX_EXPANSION, MAX_MERGED, MAX_VISITS } from "./limits.js";
import { validator } from "./test-support.js";

// A small schema must not make a grammar past the grammar bounds, nor make the converter recurse or
// work without bound: each is refused with a SchemaError, or written so that it fits.

function refusal(schema: unknown): SchemaError {
  try {
    jsonSchemaToGbnf(schema);
  } catch (e) {
    expect(e).toBeInstanceOf(SchemaError);
    expect(e).toBeInstanceOf(SamplerError);
    return e as SchemaError;
  }
  throw new Error("expected the schema to be refused");
}

/** `schema` converts, and the grammar parses and matches `doc` (which ajv accepts). */
function fits(schema: unknown, doc: string): Grammar {
  const g = Grammar.parse(jsonSchemaToGbnf(schema));
  expect(validator(schema)(JSON.parse(doc))).toBe(true);
  expect(g.matches(doc)).toBe(true);
  return g;
}

describe("jsonSchemaToGbnf: repeated counts", () => {
  it("refuses minItems 5000 (past the largest count written, 2000)", () => {
    const e = refusal({ type: "array", minItems: 5000, maxItems: 5000, items: { type: "integer" } });
    expect(e.code).toBe("SCHEMA_UNSUPPORTED");
    expect(e.keyword).toBe("minItems");
    expect(e.message).toContain("2000");
  });

  it("repeats a long const item as one rule: 2000 items of 1000 characters fit", () => {
    // Copied in place, the item would be 2000 × 1002 elements.
    const item = "x".repeat(1000);
    const g = Grammar.parse(jsonSchemaToGbnf({ type: "array", minItems: 2000, items: { const: item } }));
    expect(g.program.code.length).toBeLessThan(20_000);
    expect(g.matchesPrefix(`[${JSON.stringify(item)},${JSON.stringify(item)},`)).toBe(true);
    const three = fits(
      { type: "array", minItems: 3, items: { const: item } },
      JSON.stringify([item, item, item]),
    );
    expect(three.matches(JSON.stringify([item, item]))).toBe(false);
  });

  it("refuses a schema whose grammar would pass the element bound, naming it", () => {
    // 70 strings of different maximum lengths near 2000: about 4 elements per character each.
    const properties = Object.fromEntries(
      Array.from({ length: 70 }, (_, i) => [`p${i}`, { type: "string", maxLength: 2000 - i }]),
    );
    const e = refusal({ type: "object", properties });
    expect(e.code).toBe("SCHEMA_UNSUPPORTED");
    expect(e.path).toBe("#");
    expect(e.message).toContain("too large");
    expect(e.message).toContain(`${MAX_ELEMENTS} allowed`);
  });

  it("refuses an enum of 150,000 values as too large (no call spreads them as arguments)", () => {
    const e = refusal({ enum: Array.from({ length: 150_000 }, (_, i) => i) });
    expect(e.message).toContain("too large");
  });
});

describe("jsonSchemaToGbnf: nesting written into the grammar", () => {
  it(`writes a tuple of 1000 positions nesting less than ${MAX_NESTING} deep`, () => {
    const prefixItems = Array.from({ length: 1000 }, () => ({ type: "integer" }));
    const doc = JSON.stringify(Array.from({ length: 1000 }, (_, i) => i));
    const g = fits({ type: "array", prefixItems }, doc);
    expect(g.matches(JSON.stringify(Array.from({ length: 999 }, (_, i) => i)))).toBe(true);
    expect(g.matches(JSON.stringify(Array.from({ length: 1001 }, (_, i) => i)))).toBe(false);
  });

  it("writes the complement of a 2000-character property name nesting less than the bound", () => {
    const name = "k".repeat(2000);
    const schema = {
      type: "object",
      properties: { [name]: { type: "integer" } },
      additionalProperties: { type: "string" },
    };
    const g = fits(schema, JSON.stringify({ [name]: 1, [name.slice(1)]: "x", [`${name}k`]: "y" }));
    // The declared name with a string value is not an extra member.
    expect(g.matches(JSON.stringify({ [name]: "x" }))).toBe(false);
  });
});

describe("jsonSchemaToGbnf: depth and work", () => {
  const nested = (n: number) => {
    let s: unknown = { type: "string" };
    for (let i = 0; i < n; i++) s = { type: "array", items: s };
    return s;
  };

  it(`converts a schema nested ${MAX_DEPTH} objects deep and refuses deeper ones, naming the place`, () => {
    // n array schemas inside one another and the string: n + 1 objects deep.
    fits(nested(MAX_DEPTH - 1), `${"[".repeat(MAX_DEPTH - 1)}"x"${"]".repeat(MAX_DEPTH - 1)}`);
    const e = refusal(nested(MAX_DEPTH));
    expect(e.code).toBe("SCHEMA_UNSUPPORTED");
    expect(e.path).toBe(`#${"/items".repeat(MAX_DEPTH)}`);
    expect(e.message).toContain(`more than ${MAX_DEPTH} deep`);
  });

  it("refuses 10,000 levels with the error, not a stack overflow", () => {
    expect(refusal(nested(10_000)).code).toBe("SCHEMA_UNSUPPORTED");
  });

  it("refuses an enum value nested 10,000 deep", () => {
    let v: unknown = 1;
    for (let i = 0; i < 10_000; i++) v = [v];
    expect(refusal({ enum: [v] }).code).toBe("SCHEMA_UNSUPPORTED");
  });

  it("refuses a schema that contains itself (only a JavaScript object can)", () => {
    const s: Record<string, unknown> = { type: "array" };
    s.items = s;
    expect(refusal(s).code).toBe("SCHEMA_INVALID");
  });

  it("refuses a $ref that reaches itself beside other keywords (expanded in place without end)", () => {
    const e = refusal({
      $defs: { a: { type: "object", properties: { x: { $ref: "#/$defs/a", type: "object" } } } },
      $ref: "#/$defs/a",
    });
    expect(e.code).toBe("SCHEMA_UNSUPPORTED");
    expect(e.keyword).toBe("$ref");
    expect(e.message).toContain(`more than ${MAX_EXPANSION} subschemas deep`);
  });

  it("refuses $refs expanded in place that double at each of 30 levels", () => {
    const $defs: Record<string, unknown> = { d30: { type: "object" } };
    for (let i = 0; i < 30; i++) {
      const next = { $ref: `#/$defs/d${i + 1}`, type: "object" };
      $defs[`d${i}`] = { type: "object", properties: { x: next, y: next } };
    }
    const t0 = Date.now();
    const e = refusal({ $defs, $ref: "#/$defs/d0" });
    expect(e.message).toContain(`more than ${MAX_VISITS} subschemas`);
    expect(Date.now() - t0).toBeLessThan(20_000);
  });

  it("refuses allOf of $refs that double at each of 30 levels", () => {
    const $defs: Record<string, unknown> = { d30: { type: "string" } };
    for (let i = 0; i < 30; i++) {
      $defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    }
    const e = refusal({ $defs, $ref: "#/$defs/d0", minLength: 1 });
    expect(e.keyword).toBe("allOf");
    expect(e.message).toContain(`more than ${MAX_MERGED} schemas`);
  });
});
