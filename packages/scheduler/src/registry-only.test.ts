// Backends meet the product through the registry alone: no package's source (tests and their
// helpers aside) imports a backend package, so adding a backend touches its own package and
// KNOWN_BACKEND_PACKAGES — nothing in the CLI, the server or the engine.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { KNOWN_BACKEND_PACKAGES } from "./registry.js";

const packages = fileURLToPath(new URL("../../", import.meta.url));

/** Non-test TypeScript sources under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts|js|mjs)$/.test(e.name))
    .filter((e) => !/\.test\.[mc]?[tj]s$/.test(e.name) && !/^test-helpers\.[tj]s$/.test(e.name))
    .map((e) => join(e.parentPath, e.name))
    .filter((p) => !p.split(/[\\/]/).includes("test-fixtures"));
}

/** `file:line: text` of every import of a backend package in `files`. */
export function backendImports(files: readonly string[], names: readonly string[]): string[] {
  const pattern = new RegExp(
    `(from\\s+|import\\s*\\(\\s*|require\\s*\\(\\s*)["'](${names.map((n) => n.replace(/[/.]/g, "\\$&")).join("|")})(/[^"']*)?["']`,
  );
  const found: string[] = [];
  for (const file of files) {
    const lines = readFileSync(file, "utf8").split("\n");
    lines.forEach((line, i) => {
      if (pattern.test(line)) found.push(`${relative(packages, file)}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

describe("the registry is the only way to a backend", () => {
  it("no package outside the backends imports one", () => {
    const dirs = readdirSync(packages).filter((d) => !d.startsWith("backend-"));
    expect(dirs).toEqual(expect.arrayContaining(["cli", "engine", "server", "scheduler"]));
    const files = dirs.flatMap((d) => {
      try {
        return sources(join(packages, d, "src"));
      } catch {
        return [];
      }
    });
    expect(files.length).toBeGreaterThan(50);
    expect(backendImports(files, KNOWN_BACKEND_PACKAGES)).toEqual([]);
  });

  it("finds the ways an import is written", () => {
    const probe = fileURLToPath(new URL("./test-fixtures/imports-probe.txt", import.meta.url));
    const hits = backendImports([probe], KNOWN_BACKEND_PACKAGES).map((h) => h.replace(/^.*?:(\d+):.*/, "$1"));
    expect(hits).toEqual(["1", "2", "3", "4", "5"]);
  });
});
