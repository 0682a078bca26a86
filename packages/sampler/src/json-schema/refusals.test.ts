import { describe, expect, it } from "vitest";
import { SamplerError } from "../errors.js";
import { jsonSchemaToGbnf, SchemaError } from "./index.js";

function refusal(schema: unknown): SchemaError {
  try {
    jsonSchemaToGbnf(schema);
  } catch (e) {
    expect(e).toBeInstanceOf(SchemaError);
    expect(e).toBeInstanceOf(SamplerError);
    return e as SchemaError;
  }
  throw new Error(`expected ${JSON.stringify(schema)} to be refused`);
}

describe("jsonSchemaToGbnf: unsupported keywords are refused by name and path", () => {
  it.each([
    [{ type: "string", pattern: "^a" }, "pattern", "#/pattern"],
    [{ type: "number", multipleOf: 2 }, "multipleOf", "#/multipleOf"],
    [{ not: { type: "null" } }, "not", "#/not"],
    [{ if: {}, else: {} }, "if", "#/if"],
    [{ type: "object", patternProperties: { "^x": {} } }, "patternProperties", "#/patternProperties"],
    [{ type: "object", minProperties: 1 }, "minProperties", "#/minProperties"],
    [{ type: "array", contains: { type: "integer" } }, "contains", "#/contains"],
    [{ type: "array", uniqueItems: true }, "uniqueItems", "#/uniqueItems"],
    [{ type: "string", "x-vendor": 1 }, "x-vendor", "#/x-vendor"],
    [{ type: "string", format: "email" }, "format", "#/format"],
    [{ type: "number", minimum: 1e16 }, "minimum", "#/minimum"],
    [{ type: "number", exclusiveMaximum: -1e16 }, "exclusiveMaximum", "#/exclusiveMaximum"],
    [{ oneOf: [{ type: "integer" }, { type: "integer", minimum: 0 }] }, "oneOf", "#/oneOf"],
    [{ $ref: "https://example.com/s.json" }, "$ref", "#/$ref"],
    [{ $ref: "#anchor" }, "$ref", "#/$ref"],
    [{ type: "string", enum: ["a"], minLength: 1 }, "minLength", "#/minLength"],
    [{ type: "string", format: "date", maxLength: 10 }, "maxLength", "#/maxLength"],
    [{ type: "integer", maximum: 2 ** 60 }, "maximum", "#/maximum"],
    [{ type: "string", minLength: 2001 }, "minLength", "#/minLength"],
    [{ type: "array", minItems: 2001 }, "minItems", "#/minItems"],
    [{ anyOf: [{}], oneOf: [{}] }, "oneOf", "#/oneOf"],
    [
      {
        type: "object",
        properties: { a: { type: "object", properties: { "b/c": { type: "string", format: "uri" } } } },
      },
      "format",
      "#/properties/a/properties/b~1c/format",
    ],
    [
      { type: "array", items: { type: "object", dependentRequired: {} } },
      "dependentRequired",
      "#/items/dependentRequired",
    ],
    [{ $defs: { x: { type: "string", pattern: "a" } }, $ref: "#/$defs/x" }, "pattern", "#/$defs/x/pattern"],
    [{ anyOf: [{ type: "string" }, { type: "string", pattern: "a" }] }, "pattern", "#/anyOf/1/pattern"],
    [{ allOf: [{ type: "string" }, { type: "string", pattern: "a" }] }, "pattern", "#/allOf/1/pattern"],
    [{ allOf: [{ type: "string", format: "date" }, { format: "time" }] }, "format", "#/allOf/1/format"],
  ])("%j: %s at %s", (schema, keyword, path) => {
    const e = refusal(schema);
    expect(e.code).toBe("SCHEMA_UNSUPPORTED");
    expect(e.keyword).toBe(keyword);
    expect(e.argument).toBe(keyword);
    expect(e.path).toBe(path);
    expect(e.message).toContain(keyword);
    expect(e.message).toContain(path);
  });
});

describe("jsonSchemaToGbnf: malformed and unsatisfiable schemas are refused", () => {
  it.each([
    [{ $ref: "#/$defs/missing" }, "$ref"],
    [{ $defs: { a: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" }, "$ref"],
    [{ anyOf: [{ $ref: "#" }, { type: "null" }] }, "$ref"],
    [{ type: "strin" }, "type"],
    [{ type: "string", minLength: -1 }, "minLength"],
    [{ type: "array", maxItems: 1.5 }, "maxItems"],
    [{ type: "object", required: "a" }, "required"],
    [{ enum: [] }, "enum"],
    [{ allOf: [{ type: "string" }, { type: "integer" }] }, "type"],
    [{ type: "integer", minimum: 5, maximum: 4 }, "minimum"],
    [{ type: "integer", exclusiveMinimum: 4, exclusiveMaximum: 5 }, "exclusiveMinimum"],
    [{ type: "number", minimum: 2, maximum: 1 }, "minimum"],
    [{ type: "number", minimum: 1, exclusiveMaximum: 1 }, "minimum"],
    [{ type: "string", minLength: 3, maxLength: 2 }, "minLength"],
    [{ type: "array", prefixItems: [{}], minItems: 2 }, "minItems"],
    [{ type: "object", properties: { a: false }, required: ["a"] }, "required"],
    [{ type: "object", required: ["a"], properties: {}, additionalProperties: false }, "required"],
    [
      {
        anyOf: [
          { type: "string", enum: [1] },
          { type: "null", const: 0 },
        ],
      },
      "anyOf",
    ],
    [false, "false"],
    [42, ""],
  ])("%j (%s)", (schema, keyword) => {
    const e = refusal(schema);
    expect(e.code).toBe("SCHEMA_INVALID");
    expect(e.keyword).toBe(keyword);
  });

  it("refuses a bad whitespace option", () => {
    expect(() => jsonSchemaToGbnf({}, { whitespace: "lots" as "none" })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});

describe("jsonSchemaToGbnf: annotations are ignored", () => {
  it("gives the same grammar with or without them", () => {
    const bare = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };
    const annotated = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      $id: "https://example.com/x",
      title: "T",
      description: "D",
      $comment: "c",
      type: "object",
      properties: { a: { type: "integer", default: 1, examples: [1, 2], deprecated: false, readOnly: true } },
      required: ["a"],
    };
    expect(jsonSchemaToGbnf(annotated)).toBe(jsonSchemaToGbnf(bare));
  });
});
