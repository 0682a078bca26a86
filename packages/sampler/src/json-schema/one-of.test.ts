import { describe, expect, it } from "vitest";
import { Grammar } from "../grammar/index.js";
import { jsonSchemaToGbnf, type SchemaError } from "./index.js";
import { validator } from "./test-support.js";

// oneOf means "exactly one branch": converted when no document can match two branches (then it is
// anyOf), refused otherwise. Each expected verdict below is checked against ajv too.

function refusal(schema: unknown): SchemaError {
  try {
    jsonSchemaToGbnf(schema);
  } catch (e) {
    return e as SchemaError;
  }
  throw new Error(`expected ${JSON.stringify(schema)} to be refused`);
}

describe("jsonSchemaToGbnf: oneOf whose branches cannot overlap", () => {
  it.each([
    [
      "distinct types",
      { oneOf: [{ type: "string" }, { type: "integer" }, { type: "array" }] },
      ['"a"', "1", "[]"],
      ["1.5", "null", "{}"],
    ],
    [
      "integer and a non-integer const",
      { oneOf: [{ type: "integer" }, { const: 1.5 }] },
      ["2", "1.5"],
      ["2.5"],
    ],
    [
      "disjoint enums",
      { oneOf: [{ enum: ["a", "b"] }, { enum: ["c", 1] }] },
      ['"a"', '"c"', "1"],
      ['"d"', "2"],
    ],
    [
      "a discriminator through $ref",
      {
        $defs: {
          cat: {
            type: "object",
            properties: { pet: { const: "cat" }, lives: { type: "integer" } },
            required: ["pet"],
          },
          dog: { type: "object", properties: { pet: { enum: ["dog", "wolf"] } }, required: ["pet"] },
        },
        oneOf: [{ $ref: "#/$defs/cat" }, { $ref: "#/$defs/dog" }],
      },
      ['{"pet":"cat"}', '{"pet":"cat","lives":9}', '{"pet":"wolf"}'],
      ['{"pet":"cow"}', "{}", '"cat"'],
    ],
    [
      "a discriminator of different types",
      {
        oneOf: [
          {
            type: "object",
            properties: { v: { type: "string" } },
            required: ["v"],
            additionalProperties: false,
          },
          {
            type: "object",
            properties: { v: { type: "integer" } },
            required: ["v"],
            additionalProperties: false,
          },
        ],
      },
      ['{"v":"x"}', '{"v":3}'],
      ['{"v":null}', "{}"],
    ],
  ])("%s: converted exactly", (_what, schema, valid, invalid) => {
    const g = Grammar.parse(jsonSchemaToGbnf(schema));
    const validate = validator(schema);
    for (const doc of valid) {
      expect(validate(JSON.parse(doc)), `ajv: ${doc}`).toBe(true);
      expect(g.matches(doc), doc).toBe(true);
    }
    for (const doc of invalid) {
      expect(validate(JSON.parse(doc)), `ajv: ${doc}`).toBe(false);
      expect(g.matches(doc), doc).toBe(false);
    }
  });

  it("drops an unsatisfiable branch before comparing", () => {
    const schema = { oneOf: [{ type: "string" }, { type: "string", minLength: 3, maxLength: 2 }] };
    expect(Grammar.parse(jsonSchemaToGbnf(schema)).matches('"x"')).toBe(true);
  });
});

describe("jsonSchemaToGbnf: oneOf whose branches may overlap is refused", () => {
  it.each([
    // 1 matches both: oneOf rejects it, anyOf would not.
    [
      "an integer range inside integers",
      { oneOf: [{ type: "integer" }, { type: "integer", minimum: 0 }] },
      1,
      "integers",
    ],
    ["number and integer", { oneOf: [{ type: "number" }, { type: "integer" }] }, 2, "integers"],
    ["anything and null", { oneOf: [{}, { type: "null" }] }, null, "null"],
    ["enums sharing a value", { oneOf: [{ enum: [1, 2] }, { enum: [2, 3] }] }, 2, "2"],
    ["a const inside a type", { oneOf: [{ const: "a" }, { type: "string" }] }, "a", '"a"'],
    [
      "objects with no required discriminator",
      {
        oneOf: [
          { type: "object", properties: { kind: { const: "a" } } },
          { type: "object", properties: { kind: { const: "b" } } },
        ],
      },
      {},
      "objects",
    ],
    [
      "a discriminator without type (arrays match both)",
      {
        oneOf: [
          { properties: { kind: { const: "a" } }, required: ["kind"] },
          { properties: { kind: { const: "b" } }, required: ["kind"] },
        ],
      },
      [],
      "arrays",
    ],
  ])("%s", (_what, schema, both, why) => {
    // The document both branches accept: invalid under oneOf (ajv agrees), so no grammar of the
    // union could be exact.
    expect(validator(schema)(both)).toBe(false);
    const e = refusal(schema);
    expect(e.code).toBe("SCHEMA_UNSUPPORTED");
    expect(e.keyword).toBe("oneOf");
    expect(e.path).toBe("#/oneOf");
    expect(e.message).toContain("branches 0 and 1 overlap");
    expect(e.message).toContain(why);
    expect(e.message).toContain("a grammar cannot enforce");
  });

  it("names where a nested oneOf is", () => {
    const e = refusal({
      type: "object",
      properties: { a: { oneOf: [{ type: "string" }, { type: "string", maxLength: 3 }] } },
    });
    expect(e.path).toBe("#/properties/a/oneOf");
  });
});
