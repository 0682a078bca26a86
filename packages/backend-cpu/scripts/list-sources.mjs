#!/usr/bin/env node
// Lists native/cpu sources of one group for binding.gyp (gyp has no glob), relative to this
// package, so a new kernel file is built without editing binding.gyp:
//   base    every native/cpu/*.cpp that is not an ISA file (compiled for baseline x86-64 / arm64)
//   avx2    *_avx2.cpp     avx512    *_avx512.cpp     neon    *_neon.cpp
// An empty group lists native-stub/empty.cpp so its static library still has an object.
import { readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = join(pkg, "..", "..", "native", "cpu");
const group = process.argv[2] ?? "base";
const isa = /_(avx2|avx512|neon)\.cpp$/;

const files = readdirSync(dir, { withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".cpp"))
  .map((e) => e.name)
  .filter((name) => (group === "base" ? !isa.test(name) : name.endsWith(`_${group}.cpp`)))
  .sort()
  .map((name) => relative(pkg, join(dir, name)).split("\\").join("/"));

if (files.length === 0 && group !== "base") files.push("native-stub/empty.cpp");
process.stdout.write(files.join(" "));
