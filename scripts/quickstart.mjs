#!/usr/bin/env node
// minfer's main job, for now: write a small Llama-shaped GGUF with minfer's own writer and
// inspect it. (Later issues make this run a model.) Called by `npm run quickstart` after setup.
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "packages", "cli", "dist", "bin.js");
const out = join(root, ".quickstart", "tiny-llama-q8_0.gguf");
mkdirSync(dirname(out), { recursive: true });

function minfer(...args) {
  console.error(`$ minfer ${args.join(" ")}`);
  const r = spawnSync(process.execPath, [bin, ...args], { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

minfer("gguf", "synth", "--arch", "llama", "--preset", "tiny", "--type", "q8_0", "-o", out);
minfer("gguf", "inspect", out);
