#!/usr/bin/env node
// Packs the CUDA smoke run (scripts/device/cuda-smoke.ts, @minfer/backend-cuda and @minfer/ir
// inlined) and the CUDA addon for the GPU machine, in the layout the backend's loader expects
// (dist/ and build/ under one root):
//   turbo run build && node scripts/device/bundle-cuda.mjs [OUT_DIR]     (default: .device/cuda)
import { copyFileSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";

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
await build({
  entry: { "cuda-smoke": join(root, "scripts/device/cuda-smoke.ts") },
  outDir: join(out, "dist"),
  format: ["esm"],
  target: "node20",
  platform: "node",
  bundle: true,
  noExternal: [/.*/],
  banner: {
    js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  },
  silent: true,
  dts: false,
  clean: true,
});
mkdirSync(join(out, "build"), { recursive: true });
copyFileSync(addon, join(out, "build", "minfer_cuda.node"));
console.error(`bundle-cuda: ${out}`);
