#!/usr/bin/env node
// Lists native/cpu sources of one group for binding.gyp (gyp has no glob), relative to this
// package, so a new kernel file is built without editing binding.gyp:
//   base    every native/cpu/*.cpp that is not an ISA file (compiled for baseline x86-64 / arm64)
//   avx2    *_avx2.cpp     avx512    *_avx512.cpp     neon    *_neon.cpp
//   include the directory itself (the addon's include path)
// The sources are the package's own native/cpu when it ships them (an installed package), else
// the repository's (../../native/cpu). An empty group lists native-stub/empty.cpp so its static
// library still has an object.
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { nativeRoot, packageRoot as pkg } from "./native-sources.mjs";

const groups = ["base", "avx2", "avx512", "neon", "include"];
const group = process.argv[2] ?? "base";
if (!groups.includes(group)) {
  console.error(`list-sources: unknown group "${group}"; one of ${groups.join(", ")}`);
  process.exit(1);
}
const root = nativeRoot().dir;
if (!root) {
  console.error(`list-sources: no native/cpu in ${pkg} nor in the repository above it`);
  process.exit(1);
}
const dir = join(root, "cpu");
const rel = (path) => relative(pkg, path).split("\\").join("/");
if (group === "include") {
  process.stdout.write(rel(dir));
  process.exit(0);
}
const isa = /_(avx2|avx512|neon)\.cpp$/;
const files = readdirSync(dir, { withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".cpp"))
  .map((e) => e.name)
  .filter((name) => (group === "base" ? !isa.test(name) : name.endsWith(`_${group}.cpp`)))
  .sort()
  .map((name) => rel(join(dir, name)));

if (files.length === 0 && group !== "base") files.push("native-stub/empty.cpp");
process.stdout.write(files.join(" "));
