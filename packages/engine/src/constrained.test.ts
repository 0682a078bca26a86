import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Grammar, jsonSchemaToGbnf, Sampler } from "@minfer/sampler";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { generate } from "./generate.js";
import type { Model } from "./model.js";
import { FIXTURES, haveStories, loadStories, loadSynthetic } from "./test-helpers.js";

// Constrained generation end to end: real models sample under a grammar through the engine, and
// what comes out is checked by something independent of the grammar code (ajv, JSON.parse) or by
// the grammar's own parser in a separate pass over the finished text.

const SCHEMAS: Record<string, object> = {
  person: {
    type: "object",
    properties: {
      name: { type: "string", minLength: 1, maxLength: 12 },
      age: { type: "integer", minimum: 0, maximum: 120 },
      email: { type: ["string", "null"], maxLength: 20 },
    },
    required: ["name", "age"],
    additionalProperties: false,
  },
  order: {
    type: "object",
    properties: {
      id: { type: "string", format: "uuid" },
      date: { type: "string", format: "date" },
      items: {
        type: "array",
        minItems: 1,
        maxItems: 3,
        items: {
          type: "object",
          properties: { sku: { enum: ["a1", "b2", "c3"] }, qty: { type: "integer", minimum: 1, maximum: 9 } },
          required: ["sku", "qty"],
          additionalProperties: false,
        },
      },
    },
    required: ["id", "date", "items"],
    additionalProperties: false,
  },
  shape: {
    anyOf: [
      {
        type: "object",
        properties: { kind: { const: "circle" }, r: { type: "integer", minimum: 1, maximum: 50 } },
        required: ["kind", "r"],
        additionalProperties: false,
      },
      {
        type: "object",
        properties: { kind: { const: "square" }, side: { type: "integer", minimum: 1, maximum: 50 } },
        required: ["kind", "side"],
        additionalProperties: false,
      },
    ],
  },
  tree: {
    $defs: {
      node: {
        type: "object",
        properties: {
          v: { type: "integer", minimum: 0, maximum: 9 },
          kids: { type: "array", maxItems: 2, items: { $ref: "#/$defs/leaf" } },
        },
        required: ["v", "kids"],
        additionalProperties: false,
      },
      leaf: {
        type: "object",
        properties: { v: { type: "boolean" } },
        required: ["v"],
        additionalProperties: false,
      },
    },
    $ref: "#/$defs/node",
  },
  tuple: {
    type: "array",
    prefixItems: [{ type: "boolean" }, { enum: [1, 2, 3] }, { type: "null" }],
    items: false,
  },
};

function validator() {
  const ajv = new Ajv2020({ strict: false });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  return ajv;
}

/** Generates under a GBNF grammar; the text and why it ended. */
async function constrained(ctx: Context, gbnf: string, seed: number, maxTokens: number) {
  const constraint = Grammar.parse(gbnf).constraint(ctx.model.tokenizer);
  const sampler = new Sampler({ seed, temperature: 1, constraint });
  const g = generate(ctx, "Once upon a time", { sampler, maxTokens, reusePrefix: false });
  await g.complete();
  return { text: g.text, reason: g.finishReason };
}

describe.skipIf(!haveStories)("constrained generation on stories260K", () => {
  let model: Model;
  let dispose: (() => void) | undefined;
  let ctx: Context;
  beforeAll(async () => {
    ({ model, dispose } = await loadStories());
    ctx = new Context(model, { nCtx: 512 });
  });
  afterAll(() => {
    ctx?.dispose();
    dispose?.();
  });

  it("JSON Schemas: every seed's output parses and ajv accepts it", async () => {
    const ajv = validator();
    for (const [name, schema] of Object.entries(SCHEMAS)) {
      const validate = ajv.compile(schema);
      const gbnf = jsonSchemaToGbnf(schema);
      for (let seed = 1; seed <= 8; seed++) {
        const { text, reason } = await constrained(ctx, gbnf, seed, 400);
        expect(reason, `${name} seed ${seed}: ${text}`).not.toBe("length");
        const doc = JSON.parse(text);
        expect(validate(doc), `${name} seed ${seed}: ${text} ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    }
  });

  it("llama.cpp's example grammars: the output stays inside each (re-parsed in a separate pass)", async () => {
    for (const file of ["json", "arithmetic", "list", "chess", "c", "english", "japanese", "json_arr"]) {
      const gbnf = readFileSync(join(FIXTURES, "grammars", `${file}.gbnf`), "utf8");
      const check = Grammar.parse(gbnf);
      for (const seed of [1, 2]) {
        const { text, reason } = await constrained(ctx, gbnf, seed, 48);
        expect(text.length, `${file} seed ${seed}`).toBeGreaterThan(0);
        if (reason === "length")
          expect(check.matchesPrefix(text), `${file}: ${JSON.stringify(text)}`).toBe(true);
        else expect(check.matches(text), `${file} (${reason}): ${JSON.stringify(text)}`).toBe(true);
        if (file === "json" && reason !== "length") expect(() => JSON.parse(text)).not.toThrow();
      }
    }
  });
});

describe("constrained generation on a synthetic model (random weights, byte vocabulary)", () => {
  let model: Model;
  let dispose: (() => void) | undefined;
  let ctx: Context;
  beforeAll(async () => {
    ({ model, dispose } = await loadSynthetic({ preset: "tiny", arch: "qwen2", type: "q8_0", seed: 9 }));
    ctx = new Context(model, { nCtx: 1024 });
  });
  afterAll(() => {
    ctx?.dispose();
    dispose?.();
  });

  it("JSON Schemas: every seed's output parses and ajv accepts it", async () => {
    const ajv = validator();
    for (const [name, schema] of Object.entries(SCHEMAS)) {
      const validate = ajv.compile(schema);
      const gbnf = jsonSchemaToGbnf(schema);
      for (let seed = 1; seed <= 8; seed++) {
        const { text, reason } = await constrained(ctx, gbnf, seed, 900);
        expect(reason, `${name} seed ${seed}: ${text}`).not.toBe("length");
        expect(validate(JSON.parse(text)), `${name} seed ${seed}: ${text}`).toBe(true);
      }
    }
  });
});
