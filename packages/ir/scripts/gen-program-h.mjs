#!/usr/bin/env node
// Writes native/common/program_format.h and op_info.h from the built @minfer/ir (run `turbo run build` first).
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { opInfoHeaderSource, programHeaderSource } from "../dist/index.js";

const common = resolve(dirname(fileURLToPath(import.meta.url)), "../../../native/common");
for (const [name, text] of [
  ["program_format.h", programHeaderSource()],
  ["op_info.h", opInfoHeaderSource()],
]) {
  const out = resolve(common, name);
  writeFileSync(out, text);
  console.log(`wrote ${out}`);
}
