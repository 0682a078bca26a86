import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// Every package spells an error code one way (docs/ERRORS.md). This scans the non-test TypeScript
// of every package and the native sources of every backend for the spellings retired in favour of
// the shared ones, and fails naming each file:line where one is still written.

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** A retired spelling, the pattern that finds it, and the code that replaced it. */
const RETIRED: readonly { spelling: string; pattern: RegExp; use: string }[] = [
  { spelling: "BAD_ARGUMENT", pattern: /\bBAD_ARGUMENT\b/, use: "INVALID_ARGUMENT" },
  { spelling: "BAD_OPTION", pattern: /\bBAD_OPTION\b/, use: "INVALID_ARGUMENT" },
  {
    spelling: "BAD_VALUE",
    pattern: /\bBAD_VALUE\b/,
    use: "INVALID_ARGUMENT (or gguf's MALFORMED_VALUE for a file's value)",
  },
  { spelling: "UNKNOWN_ARCHITECTURE", pattern: /\bUNKNOWN_ARCHITECTURE\b/, use: "UNKNOWN_ARCH" },
  // The code "IO" as a string literal (IO_ERROR, and words such as "IOCTL", do not match).
  { spelling: '"IO"', pattern: /(["'`])IO\1/, use: "IO_ERROR" },
  { spelling: "UNSUPPORTED_TYPE", pattern: /\bUNSUPPORTED_TYPE\b/, use: "UNSUPPORTED_DTYPE" },
  { spelling: "STATE_BAD_VERSION", pattern: /\bSTATE_BAD_VERSION\b/, use: "STATE_UNSUPPORTED_VERSION" },
  { spelling: "BAD_PARAM", pattern: /\bBAD_PARAM\b/, use: "INVALID_ARGUMENT" },
  { spelling: "BAD_INPUT", pattern: /\bBAD_INPUT\b/, use: "INVALID_ARGUMENT" },
  { spelling: '"UNSUPPORTED"', pattern: /(["'`])UNSUPPORTED\1/, use: "UNSUPPORTED_OP" },
];

const SKIP_DIRS = new Set(["node_modules", "dist", "build", ".turbo"]);

/** Files under `dir` (recursively) whose name `keep` accepts; none if `dir` is absent. */
function walk(dir: string, keep: (name: string) => boolean): string[] {
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return SKIP_DIRS.has(e.name) ? [] : walk(path, keep);
    return e.isFile() && keep(e.name) ? [path] : [];
  });
}

/** The non-test TypeScript of packages/<name>/src and every native source. */
function sources(): string[] {
  const packages = readdirSync(join(ROOT, "packages"), { withFileTypes: true }).filter((e) =>
    e.isDirectory(),
  );
  const ts = packages.flatMap((p) =>
    walk(join(ROOT, "packages", p.name, "src"), (n) => n.endsWith(".ts") && !n.endsWith(".test.ts")),
  );
  const native = walk(join(ROOT, "native"), (n) => /\.(cpp|h|cu|cuh)$/.test(n));
  return [...ts, ...native];
}

/** `file:line: text (retired X; use Y)` for each retired spelling in `files`. */
function findRetired(files: readonly string[], read: (path: string) => string): string[] {
  const hits: string[] = [];
  for (const file of files) {
    read(file)
      .split("\n")
      .forEach((line, i) => {
        for (const r of RETIRED)
          if (r.pattern.test(line))
            hits.push(
              `${relative(ROOT, file)}:${i + 1}: ${line.trim()}  (retired ${r.spelling}; use ${r.use})`,
            );
      });
  }
  return hits;
}

describe("error codes are spelled one way across packages", () => {
  it("finds the sources it is meant to scan", () => {
    const files = sources().map((f) => relative(ROOT, f));
    expect(files).toContain("packages/gguf/src/errors.ts");
    expect(files).toContain("packages/server/src/server-error.ts");
    expect(files.some((f) => f.startsWith("native/cpu/") && f.endsWith(".cpp"))).toBe(true);
    expect(files.some((f) => f.endsWith(".test.ts"))).toBe(false);
  });

  it("recognizes each retired spelling, and neither its replacement nor a longer word", () => {
    const text: Record<string, string> = {
      "a.ts": [
        '  | "BAD_OPTION"',
        'throw new E("IO", "x")',
        "code: 'IO'",
        "// UNKNOWN_ARCHITECTURE here",
      ].join("\n"),
      "b.cpp": 'case Code::BadArgument: return "BAD_ARGUMENT";',
      "c.ts": [
        '"IO_ERROR"',
        '"IOCTL"',
        '"INVALID_ARGUMENT"',
        '"UNKNOWN_ARCH"',
        '"MALFORMED_VALUE"',
        "IO",
      ].join("\n"),
    };
    const hits = findRetired(
      Object.keys(text).map((f) => join(ROOT, f)),
      (p) => text[relative(ROOT, p)]!,
    );
    expect(hits.map((h) => h.split(": ")[0])).toEqual(["a.ts:1", "a.ts:2", "a.ts:3", "a.ts:4", "b.cpp:1"]);
    expect(hits[0]).toContain("use INVALID_ARGUMENT");
  });

  it("no package source and no native source writes a retired spelling", () => {
    const hits = findRetired(sources(), (p) => readFileSync(p, "utf8"));
    expect(hits, `retired error codes still written:\n${hits.join("\n")}`).toEqual([]);
  });
});
