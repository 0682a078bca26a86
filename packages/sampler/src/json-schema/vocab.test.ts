import { describe, expect, it } from "vitest";
import { Grammar } from "../grammar/index.js";
import { vocab } from "../grammar/test-fixtures.js";
import { lcg } from "../test-helpers.js";
import { CORPUS } from "./corpus.js";
import { jsonSchemaToGbnf } from "./index.js";
import { validator } from "./test-support.js";

const NAMES = [
  "nested objects",
  "a recursive tree through $defs",
  "formats",
  "integer bounds",
  "anyOf of different types",
  "oneOf with a discriminator",
  "additionalProperties as a schema",
  "string lengths",
];

/** Tokens that close something: favoured so that walks end. */
function closers(tok: ReturnType<typeof vocab>): Uint8Array {
  const out = new Uint8Array(tok.size);
  for (let id = 0; id < tok.size; id++) {
    const b = tok.tokenBytes(id);
    if (b.includes(0x22) || b.includes(0x7d) || b.includes(0x5d)) out[id] = 1;
  }
  return out;
}

describe("jsonSchemaToGbnf: generation over a real vocabulary (qwen2, multi-byte tokens)", () => {
  const tok = vocab("qwen2");
  const favoured = closers(tok);
  const eog = [...Array(tok.size).keys()].find((id) => tok.isEog(id))!;

  it.each(NAMES)(
    "%s: every finished generation parses and ajv accepts it",
    (name) => {
      const entry = CORPUS.find((e) => e.name === name)!;
      const g = Grammar.parse(jsonSchemaToGbnf(entry.schema));
      const validate = validator(entry.schema, entry.draft);
      const rand = lcg(2024);
      const logits = new Float32Array(tok.size);
      let finished = 0;
      for (let walk = 0; walk < 8; walk++) {
        const c = g.constraint(tok);
        const bytes: number[] = [];
        for (let step = 0; step < 400; step++) {
          if (c.isComplete() && (c.isExhausted() || rand() < 0.5)) {
            expect(c.allows(eog)).toBe(true);
            finished++;
            const text = new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
            let value: unknown;
            expect(() => {
              value = JSON.parse(text);
            }, text).not.toThrow();
            expect(validate(value), `ajv rejects ${text}`).toBe(true);
            expect(g.matches(text)).toBe(true);
            if (process.env.SHOW_DOCS) console.log(text);
            break;
          }
          // Random logits favouring closers; the sampler's fast path: the best token first, the mask only
          // when it is refused.
          for (let i = 0; i < tok.size; i++) logits[i] = rand() * 10 + (favoured[i] ? 6 : 0);
          logits[eog] = -Infinity;
          let best = argmax(logits);
          if (!c.allows(best)) {
            c.mask(logits);
            best = argmax(logits);
          }
          expect(logits[best]).toBeGreaterThan(-Infinity);
          c.accept(best);
          bytes.push(...tok.tokenBytes(best));
        }
      }
      expect(finished).toBeGreaterThan(4);
    },
    60_000,
  );
});

function argmax(a: Float32Array): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[best]!) best = i;
  return best;
}
