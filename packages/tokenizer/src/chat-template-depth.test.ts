import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ChatTemplate } from "./chat-template.js";
import { astDepth, MAX_TEMPLATE_DEPTH, parseChecked } from "./chat-template-check.js";
import { TokenizerError } from "./errors.js";
import { fixturesDir } from "./test-vectors.js";

/** Templates nested `n` levels deep, each in a different way (chains, unary runs, brackets, blocks). */
const NESTS: [string, (n: number) => string][] = [
  ["a + chain", (n) => `{{ 1${" + 1".repeat(n)} }}`],
  ["a not run", (n) => `{{ ${"not ".repeat(n)}x }}`],
  ["a minus run", (n) => `{{ ${"-".repeat(n)}1 }}`],
  ["a member chain", (n) => `{{ x${".a".repeat(n)} }}`],
  ["parentheses", (n) => `{{ ${"(".repeat(n)}1${")".repeat(n)} }}`],
  ["list brackets", (n) => `{{ ${"[".repeat(n)}${"]".repeat(n)} }}`],
  ["if blocks", (n) => `${"{% if x %}".repeat(n)}y${"{% endif %}".repeat(n)}`],
];

function refusal(source: string): TokenizerError {
  try {
    ChatTemplate.parse(source);
  } catch (e) {
    expect(e).toBeInstanceOf(TokenizerError);
    return e as TokenizerError;
  }
  throw new Error("expected a TokenizerError");
}

describe("a template nested too deeply is refused at parse time, never a stack overflow", () => {
  it.each(NESTS)("%s 3000 and 20000 levels deep", (_, make) => {
    for (const n of [3000, 20000]) {
      const e = refusal(make(n));
      expect(e.code).toBe("TEMPLATE_UNSUPPORTED");
      expect(e.message).toMatch(/nests .* levels deep/);
      expect(e.message).toContain(`at most ${MAX_TEMPLATE_DEPTH}`);
    }
  });

  it.each(NESTS)(
    "%s well inside the bound parses and renders (or fails to render) with a code",
    (_, make) => {
      const t = ChatTemplate.parse(make(MAX_TEMPLATE_DEPTH - 10));
      try {
        expect(typeof t.render({ messages: [], kwargs: { x: { a: 1 } } })).toBe("string");
      } catch (e) {
        expect(e).toBeInstanceOf(TokenizerError);
        expect((e as TokenizerError).code).toBe("TEMPLATE_RENDER");
      }
    },
  );

  it("measures depth without recursion, and real templates sit far below the bound", () => {
    let deep: unknown = { type: "Leaf" };
    for (let i = 0; i < 1e5; i++) deep = { type: "Wrap", inner: [deep] };
    expect(astDepth(deep, 1e6)).toBe(1e5 + 1);
    expect(astDepth(deep, 10)).toBe(11);
    const dir = join(fixturesDir(), "templates");
    const files = readdirSync(dir).filter((f) => f.endsWith(".jinja"));
    expect(files.length).toBeGreaterThan(3);
    for (const f of files)
      expect(astDepth(parseChecked(readFileSync(join(dir, f), "utf8"), f), 1e9)).toBeLessThan(
        MAX_TEMPLATE_DEPTH / 4,
      );
  });
});
