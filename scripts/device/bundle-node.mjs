// The one tsup configuration of the device bundles: ESM for Node 20 with every dependency
// inlined (the GPU machine has no node_modules), and a require() for bundled CommonJS code.
// Backend packages are the exception: the CLI finds them through the scheduler's registry by
// package name, so each is bundled on its own into OUT/node_modules/<name> (with its addon) and
// every entry imports it from there.
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const banner = {
  js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
};

/** The registry's list of backend packages (the scheduler must be built). */
async function knownBackends() {
  const { KNOWN_BACKEND_PACKAGES } = await import(join(root, "packages/scheduler/dist/index.js"));
  return KNOWN_BACKEND_PACKAGES;
}

/**
 * Imports of a backend's source by path (scripts/device/*.ts do that) become its package name, and
 * imports by package name (packages/cli/bench/*.mjs) stay so (noExternal would inline them).
 */
const backendsAsPackages = {
  name: "backends-as-packages",
  setup(b) {
    b.onResolve({ filter: /packages\/backend-[a-z0-9]+\/src\/index\.js$/ }, (args) => ({
      path: `@minfer/${/packages\/(backend-[a-z0-9]+)\//.exec(args.path)[1]}`,
      external: true,
    }));
    b.onResolve({ filter: /^@minfer\/backend-[a-z0-9]+$/ }, (args) => ({ path: args.path, external: true }));
  },
};

/**
 * Bundles `entry` ({ name: source }) into `outDir` (OUT/dist), and each known backend package
 * into OUT/node_modules/<name> with the native addons its build/ holds; `external` names stay
 * imports. Returns the backends bundled and those skipped (not built: the registry then reports
 * them as not installed there).
 */
export async function bundleForNode(entry, outDir, external = []) {
  const backends = await knownBackends();
  await build({
    entry,
    outDir,
    format: ["esm"],
    target: "node20",
    platform: "node",
    splitting: true,
    bundle: true,
    noExternal: [/.*/],
    external: [...external, ...backends],
    esbuildPlugins: [backendsAsPackages],
    banner,
    silent: true,
    dts: false,
    clean: true,
  });
  const out = dirname(outDir);
  const bundled = [];
  for (const name of backends) {
    const pkg = join(root, "packages", name.replace(/^@minfer\//, ""));
    const addons = ["build", "build/Release"].flatMap((dir) =>
      existsSync(join(pkg, dir))
        ? readdirSync(join(pkg, dir))
            .filter((f) => f.endsWith(".node"))
            .map((f) => join(dir, f))
        : [],
    );
    if (addons.length === 0) continue;
    const dest = join(out, "node_modules", name);
    await build({
      entry: { index: join(pkg, "src/index.ts") },
      outDir: join(dest, "dist"),
      format: ["esm"],
      target: "node20",
      platform: "node",
      bundle: true,
      noExternal: [/.*/],
      banner,
      silent: true,
      dts: false,
      clean: true,
    });
    for (const a of addons) {
      mkdirSync(dirname(join(dest, a)), { recursive: true });
      copyFileSync(join(pkg, a), join(dest, a));
    }
    writeFileSync(
      join(dest, "package.json"),
      `${JSON.stringify({ name, type: "module", main: "./dist/index.js", exports: "./dist/index.js" }, null, 2)}\n`,
    );
    bundled.push(`${name} (${addons.join(", ")})`);
  }
  return bundled;
}
