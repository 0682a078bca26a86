import { describe, expect, it } from "vitest";
import { Grammar } from "../grammar/index.js";
import { lcg } from "../test-helpers.js";
import { CORPUS } from "./corpus.js";
import { jsonSchemaToGbnf } from "./index.js";
import { byteWalk, constraintAccepts, RandomTexts, validator } from "./test-support.js";

function parsesAs(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

describe.each(CORPUS)("jsonSchemaToGbnf: $name", ({ schema, valid, invalid, draft }) => {
  const gbnf = jsonSchemaToGbnf(schema);
  const validate = validator(schema, draft);

  it("writes a grammar the GBNF parser accepts", () => {
    expect(() => Grammar.parse(gbnf)).not.toThrow();
  });

  it("accepts the valid documents (which ajv accepts)", () => {
    const g = Grammar.parse(gbnf);
    for (const doc of valid) {
      expect(validate(JSON.parse(doc)), `ajv: ${doc}`).toBe(true);
      expect(g.matches(doc), `grammar: ${doc}\n${gbnf}`).toBe(true);
    }
  });

  it("rejects the invalid documents (which ajv rejects)", () => {
    const g = Grammar.parse(gbnf);
    for (const doc of invalid) {
      const value = parsesAs(doc);
      if (value !== undefined) expect(validate(value), `ajv: ${doc}`).toBe(false);
      expect(g.matches(doc), `grammar: ${doc}\n${gbnf}`).toBe(false);
    }
  });

  it("generates only documents that parse and that ajv accepts (random derivations)", () => {
    const texts = new RandomTexts(gbnf);
    const rand = lcg(12345);
    const g = Grammar.parse(gbnf);
    for (let i = 0; i < 300; i++) {
      const doc = texts.draw(rand);
      const value = parsesAs(doc);
      expect(value, `not JSON: ${doc}`).not.toBeUndefined();
      expect(validate(value), `ajv rejects ${doc}`).toBe(true);
      expect(g.matches(doc), `matcher rejects its own language: ${doc}`).toBe(true);
    }
  });

  it("generates only documents that ajv accepts (byte-level walks through the TokenConstraint)", () => {
    const g = Grammar.parse(gbnf);
    const rand = lcg(777);
    let finished = 0;
    for (let i = 0; i < 60; i++) {
      const doc = byteWalk(g, rand);
      if (doc === undefined) continue;
      finished++;
      const value = parsesAs(doc);
      expect(value, `not JSON: ${doc}`).not.toBeUndefined();
      expect(validate(value), `ajv rejects ${doc}`).toBe(true);
      expect(constraintAccepts(g, doc)).toBe(true);
    }
    expect(finished).toBeGreaterThan(30);
  });
});

describe("jsonSchemaToGbnf: whitespace", () => {
  const schema = {
    type: "object",
    properties: { a: { type: "array", items: { type: "integer" } } },
    required: ["a"],
  };
  it("allows one optional space after , and : by default, and nothing else", () => {
    const g = Grammar.parse(jsonSchemaToGbnf(schema));
    for (const doc of ['{"a":[1,2]}', '{"a": [1, 2]}']) expect(g.matches(doc), doc).toBe(true);
    for (const doc of ['{ "a":[1]}', '{"a" :[1]}', '{"a":  [1]}', '{"a":[1 ]}', '{"a":[1]}\n']) {
      expect(g.matches(doc), doc).toBe(false);
    }
  });
  it('allows none with whitespace: "none"', () => {
    const g = Grammar.parse(jsonSchemaToGbnf(schema, { whitespace: "none" }));
    expect(g.matches('{"a":[1,2]}')).toBe(true);
    expect(g.matches('{"a": [1,2]}')).toBe(false);
    expect(g.matches('{"a":[1, 2]}')).toBe(false);
  });
});

describe("jsonSchemaToGbnf: the documented subset", () => {
  it.each([
    [
      "members in the schema's order",
      { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } } },
      '{"b":1,"a":2}',
    ],
    ["no extra members unless additionalProperties says so", { type: "object", properties: {} }, '{"x":1}'],
    ["integers without fraction or exponent", { type: "integer" }, "1.0"],
    ["no surrogate escapes", { type: "string" }, '"\\ud83d\\ude00"'],
    ["extra keys without escapes", { type: "object", additionalProperties: true }, '{"\\u0061":1}'],
    ["integral parts of at most 16 digits", { type: "number" }, "12345678901234567"],
    ["fractions of at most 16 digits", { type: "number" }, "0.12345678901234567"],
    ["exponents without leading zeros", { type: "number" }, "1e05"],
    ["bounded numbers without an exponent", { type: "number", minimum: 0 }, "1e3"],
  ])("%s", (_what, schema, doc) => {
    const g = Grammar.parse(jsonSchemaToGbnf(schema));
    const validate = validator(schema);
    expect(validate(JSON.parse(doc))).toBe(true);
    expect(g.matches(doc)).toBe(false);
  });
});

describe("jsonSchemaToGbnf: large bounds", () => {
  it("lowers maxLength and maxItems above 2000 to 2000 (a subset)", () => {
    const g = Grammar.parse(
      jsonSchemaToGbnf({ type: "array", items: { type: "string", maxLength: 5000 }, maxItems: 9999 }),
    );
    expect(g.matches(`["${"a".repeat(2000)}"]`)).toBe(true);
    expect(g.matches(`["${"a".repeat(2001)}"]`)).toBe(false);
    expect(g.matches(`[${Array(2000).fill('""').join(",")}]`)).toBe(true);
    expect(g.matches(`[${Array(2001).fill('""').join(",")}]`)).toBe(false);
  });
});

describe("@minfer/sampler exports", () => {
  it("exports jsonSchemaToGbnf and SchemaError", async () => {
    const pkg = await import("../index.js");
    expect(pkg.jsonSchemaToGbnf).toBe(jsonSchemaToGbnf);
    expect(typeof pkg.SchemaError).toBe("function");
  });
});

describe("jsonSchemaToGbnf: size", () => {
  it("grows linearly with an object's optional properties", () => {
    const size = (n: number) =>
      jsonSchemaToGbnf({
        type: "object",
        properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "integer" }])),
      }).length;
    // Twice the properties, about twice the grammar (written out flat it was four times).
    expect(size(400) / size(200)).toBeLessThan(2.2);
  });
});
