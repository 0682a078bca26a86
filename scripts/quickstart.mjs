#!/usr/bin/env node
// minfer's main job: generate text from a GGUF model on the CPU. Uses stories260K (a real,
// trained 260K-parameter Llama from ../shared/fixtures or $MINFER_FIXTURES) when it is there;
// otherwise writes a tiny Llama-shaped model with random weights (minfer's own GGUF writer) and
// generates from that (the text is noise: the weights are random). Called by `npm run quickstart`
// after setup.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "packages", "cli", "dist", "bin.js");
const fixtures = process.env.MINFER_FIXTURES ?? resolve(root, "..", "shared", "fixtures");
const stories = join(fixtures, "models", "stories260K.gguf");

function minfer(...args) {
  console.error(`$ minfer ${args.join(" ")}`);
  const r = spawnSync(process.execPath, [bin, ...args], { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

let model = stories;
if (!existsSync(stories)) {
  model = join(root, ".quickstart", "tiny-llama-q8_0.gguf");
  mkdirSync(dirname(model), { recursive: true });
  console.error(`(${stories} not found: using a tiny model with random weights)`);
  minfer("gguf", "synth", "--arch", "llama", "--preset", "tiny", "--type", "q8_0", "-o", model);
}
minfer("run", "-m", model, "-p", "Once upon a time", "-n", "128", "--temp", "0");
process.stdout.write("\n");
