#!/usr/bin/env node
// Packs the built `minfer` CLI for a machine without npm (the GPU machine, see
// ../shared/device/README.md): the CLI and its quantize worker bundled with every workspace
// dependency inlined, and each built backend in node_modules/ with its native addon, where the
// registry finds it.
//
//   turbo run build && node scripts/device/bundle.mjs [OUT_DIR]      (default: .device/minfer)
//   node OUT_DIR/dist/bin.js run -m model.gguf -p "Once upon a time"  (on the other machine)
import { existsSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleForNode } from "./bundle-node.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const out = resolve(process.argv[2] ?? join(root, ".device", "minfer"));
const addon = join(root, "packages/backend-cpu/build/Release/minfer_cpu.node");
if (!existsSync(addon)) {
  console.error(`bundle: ${addon} is missing; build first (turbo run build)`);
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
const backends = await bundleForNode(
  {
    bin: join(root, "packages/cli/src/bin.ts"),
    "quantize-worker": join(root, "packages/cli/src/quantize-worker.ts"),
  },
  join(out, "dist"),
);
writeFileSync(
  join(out, "package.json"),
  `${JSON.stringify({ name: "minfer", version: (await import(join(root, "packages/cli/package.json"), { with: { type: "json" } })).default.version, type: "module", private: true }, null, 2)}\n`,
);
const mib = (p) => (statSync(p).size / 1048576).toFixed(1);
console.error(
  `bundle: ${out} (dist/bin.js ${mib(join(out, "dist", "bin.js"))} MiB; backends: ${backends.join("; ")})`,
);
