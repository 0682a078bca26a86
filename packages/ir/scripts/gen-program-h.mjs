#!/usr/bin/env node
// Writes native/common/program_format.h from the built @minfer/ir (run `turbo run build` first).
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { programHeaderSource } from "../dist/index.js";

const out = resolve(dirname(fileURLToPath(import.meta.url)), "../../../native/common/program_format.h");
writeFileSync(out, programHeaderSource());
console.log(`wrote ${out}`);
