#!/usr/bin/env node
// Packs the CUDA smoke run (scripts/device/cuda-smoke.ts) and the standalone op-conformance run
// (scripts/device/conformance.ts), every workspace dependency inlined, with the CUDA and CPU
// addons, for the GPU machine, in the layout the backends' loaders expect (dist/, build/ and
// build/Release/ under one root):
//   turbo run build && node scripts/device/bundle-cuda.mjs [OUT_DIR]     (default: .device/cuda)
import { copyFileSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleForNode } from "./bundle-node.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const out = resolve(process.argv[2] ?? join(root, ".device", "cuda"));
const addon = join(root, "packages/backend-cuda/build/minfer_cuda.node");
if (!existsSync(addon)) {
  console.error(
    `bundle-cuda: ${addon} is missing; build it first (pnpm --filter @minfer/backend-cuda build)`,
  );
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
await bundleForNode(
  {
    "cuda-smoke": join(root, "scripts/device/cuda-smoke.ts"),
    conformance: join(root, "scripts/device/conformance.ts"),
  },
  join(out, "dist"),
);
mkdirSync(join(out, "build", "Release"), { recursive: true });
copyFileSync(addon, join(out, "build", "minfer_cuda.node"));
const cpuAddon = join(root, "packages/backend-cpu/build/Release/minfer_cpu.node");
if (existsSync(cpuAddon)) copyFileSync(cpuAddon, join(out, "build", "Release", "minfer_cpu.node"));
else
  console.error(
    `bundle-cuda: ${cpuAddon} is missing: conformance.js --with-cpu will report the CPU unusable`,
  );
console.error(`bundle-cuda: ${out}`);
