#!/usr/bin/env node
// `prepack` of every platform package (packages/backend-*-linux-*): fails, naming the command to
// run, unless the package's binary is there and is an ELF shared object for the package's `cpu`,
// so an empty platform package is never packed or published. Run in the package's directory.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { elfProblem } from "./elf.mjs";
import { TARGETS } from "./targets.mjs";

const dir = process.cwd();
const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const target = Object.entries(TARGETS).find(([, t]) => t.package === pkg.name);
if (!target) {
  console.error(
    `check-binary: ${pkg.name} is not a platform package (known: ${Object.values(TARGETS)
      .map((t) => t.package)
      .join(", ")})`,
  );
  process.exit(1);
}
const [name, t] = target;
const binary = join(dir, t.binary);
const problem = elfProblem(binary, pkg.cpu?.[0]);
if (problem) {
  console.error(
    `check-binary: ${pkg.name} cannot be packed: ${problem}. Fill it first with` +
      ` \`node scripts/release/prebuild.mjs ${name}\` at the repository root (nothing empty is published).`,
  );
  process.exit(1);
}
console.log(
  `check-binary: ${pkg.name}: ${t.binary} ${(statSync(binary).size / 2 ** 20).toFixed(1)} MiB, ${pkg.cpu[0]}`,
);
