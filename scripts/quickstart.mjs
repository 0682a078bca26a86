#!/usr/bin/env node
// minfer's main job: generate text on the CPU. With no -m, `minfer run` uses the built-in
// demonstration model (a 7M-parameter Qwen3 trained on the Brown corpus, shipped in the minfer
// package; see examples/train-default-model). Called by `npm run quickstart` after setup.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "packages", "cli", "dist", "bin.js");
const args = ["run", "-p", "The jury said", "-n", "64", "--seed", "1"];
console.error(`$ minfer ${args.join(" ")}`);
const r = spawnSync(process.execPath, [bin, ...args], { stdio: "inherit" });
process.stdout.write("\n");
process.exit(r.status ?? 1);
