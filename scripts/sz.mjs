#!/usr/bin/env node
// Lines per source file and per package (tests counted apart), so large files are seen early.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const rows = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (/\.(ts|mts|mjs|cpp|h|cu|metal)$/.test(name))
      rows.push([relative(root, p), readFileSync(p, "utf8").split("\n").length]);
  }
}
for (const d of ["packages", "native", "examples", "scripts"]) walk(join(root, d));
const byPkg = new Map();
for (const [file, lines] of rows) {
  const pkg = file.split("/").slice(0, 2).join("/");
  const kind = /\.test\.ts$/.test(file) ? "test" : "src";
  const e = byPkg.get(pkg) ?? { src: 0, test: 0 };
  e[kind] += lines;
  byPkg.set(pkg, e);
}
for (const [file, lines] of rows.sort((a, b) => b[1] - a[1]).slice(0, 15))
  console.log(`${String(lines).padStart(6)}  ${file}`);
console.log("");
for (const [pkg, e] of [...byPkg].sort())
  console.log(`${pkg.padEnd(30)} src ${String(e.src).padStart(6)}  test ${String(e.test).padStart(6)}`);
