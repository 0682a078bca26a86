// Where this package's C++ sources are. An installed package ships them in native/ (copied
// there by `prepack`, see pack-sources.mjs); a repository checkout has them at the root
// (../../native). native/cpu includes ../common, so both directories keep that layout.
import { cpSync, existsSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The package root (scripts/ sits one level below it). */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The source directories shipped in the tarball, under native/. */
export const SOURCE_DIRS = ["cpu", "common"];

/** native/ of the package when it holds the sources, else the repository's; shipped says which. */
export function nativeRoot(pkg = packageRoot) {
  const own = join(pkg, "native");
  if (existsSync(join(own, "cpu", "addon.cpp"))) return { dir: own, shipped: true };
  const repo = resolve(pkg, "..", "..", "native");
  if (existsSync(join(repo, "cpu", "addon.cpp"))) return { dir: repo, shipped: false };
  return { dir: undefined, shipped: false };
}

/** The repository's native/ when this package sits in a checkout, else undefined. */
export function repoNative(pkg = packageRoot) {
  const repo = resolve(pkg, "..", "..", "native");
  return existsSync(join(repo, "cpu", "addon.cpp")) ? repo : undefined;
}

/** Copies (with their timestamps) the repository's sources into dest/{cpu,common}, without tests/ directories. */
export function copySources(from, dest) {
  rmSync(dest, { recursive: true, force: true });
  for (const d of SOURCE_DIRS) {
    cpSync(join(from, d), join(dest, d), {
      recursive: true,
      preserveTimestamps: true, // a build of the copy stays incremental
      filter: (src) => !/[\\/]tests$/.test(src),
    });
  }
}
