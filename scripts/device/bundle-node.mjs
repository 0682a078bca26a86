// The one tsup configuration of the device bundles: ESM for Node 20 with every dependency
// inlined (the GPU machine has no node_modules), and a require() for bundled CommonJS code.
import { build } from "tsup";

/** Bundles `entry` ({ name: source }) into `outDir`; `external` names stay imports. */
export async function bundleForNode(entry, outDir, external = []) {
  await build({
    entry,
    outDir,
    format: ["esm"],
    target: "node20",
    platform: "node",
    splitting: true,
    bundle: true,
    noExternal: [/.*/],
    external,
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    silent: true,
    dts: false,
    clean: true,
  });
}
