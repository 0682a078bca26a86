// This platform's prebuilt binary: the per-platform package named in this package's
// optionalDependencies (@minfer/backend-cuda-linux-x64-gnu), resolved from this package and
// never downloaded. Used by install.mjs and, through src/binary.ts, by the loader.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, parse } from "node:path";

/** The addon's file name, at the root of a platform package. */
export const BINARY = "minfer_cuda.node";

/** The platforms with a prebuilt package, as platformKey() spells them. */
export const PREBUILT_PLATFORMS = ["linux-x64-gnu"];

/** The oldest compute capability the kernels build for (tensor-core mma m16n8k16, cp.async). */
export const MIN_COMPUTE_CAPABILITY = "8.0";

/** The CUDA architectures of the prebuilt binary (CMake's CUDA_ARCHITECTURES syntax). */
export const RELEASE_ARCHS = "80-real;86-real;89-real;90-real;90-virtual";

/** What to do when there is neither a prebuilt binary nor a build from source. */
export const FIX =
  "install the CUDA toolkit (12.x or later) and cmake 3.24 or later, then reinstall, or use a platform" +
  ` with a prebuilt package: linux x64 glibc (GPUs of compute capability ${MIN_COMPUTE_CAPABILITY} or later)`;

/** "glibc" or "musl" on Linux (from /usr/bin/ldd, else Node's own report); undefined elsewhere. */
export function detectLibc(platform = process.platform) {
  if (platform !== "linux") return undefined;
  try {
    const ldd = readFileSync("/usr/bin/ldd", "latin1");
    if (ldd.includes("musl")) return "musl";
    if (ldd.includes("GNU C Library") || ldd.includes("GLIBC")) return "glibc";
  } catch {
    // no ldd script: ask the process report below
  }
  return process.report?.getReport().header?.glibcVersionRuntime ? "glibc" : "musl";
}

/** "linux-x64-gnu", "linux-arm64-musl", "darwin-arm64", "win32-x64": a platform package's suffix. */
export function platformKey(platform = process.platform, arch = process.arch, libc = detectLibc(platform)) {
  if (platform !== "linux") return `${platform}-${arch}`;
  return `${platform}-${arch}-${libc === "musl" ? "musl" : "gnu"}`;
}

/** The platform package's name for a key (@minfer/backend-cuda-linux-x64-gnu). */
export const prebuiltPackage = (key) => `@minfer/backend-cuda-${key}`;

/**
 * The folder of package `name` as a package manager installs a dependency of the package at
 * pkgRoot: the nearest node_modules/<name> in pkgRoot or a folder above it (npm's flat tree,
 * pnpm's sibling links). NODE_PATH and global folders are not looked at: a binary is taken only
 * from this package's own install.
 */
export function installedBeside(pkgRoot, name) {
  for (let dir = pkgRoot; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === parse(dir).root || dirname(dir) === dir) return undefined;
  }
}

/**
 * This platform's prebuilt binary as seen from the package at pkgRoot: { name, path } when the
 * platform package is installed and holds the binary, else { missing } saying why not.
 */
export function findPrebuilt(pkgRoot, key = platformKey()) {
  if (!PREBUILT_PLATFORMS.includes(key))
    return { missing: `no prebuilt package for ${key} (prebuilt: ${PREBUILT_PLATFORMS.join(", ")})` };
  const name = prebuiltPackage(key);
  const dir = installedBeside(pkgRoot, name);
  if (dir === undefined)
    return { name, missing: `${name} is not installed (were optional dependencies omitted?)` };
  const path = join(dir, BINARY);
  if (!existsSync(path)) return { name, missing: `${name} (${dir}) holds no ${BINARY}` };
  return { name, path };
}

/** Whether the binary loads and answers in a fresh Node.js process: { ok } or { ok: false, error }. */
export function loadsInChild(path) {
  const probe = `const a = require(${JSON.stringify(path)}); if (typeof a.probe !== "function") throw new Error("not the CUDA addon: no probe()"); a.probe();`;
  const r = spawnSync(process.execPath, ["-e", probe], { encoding: "utf8" });
  if (r.status === 0) return { ok: true };
  const lines = `${r.stderr ?? ""}${r.error ? String(r.error) : ""}`.trim().split("\n");
  const error = lines.find((l) => /Error|error:/.test(l)) ?? lines[0] ?? `exit ${r.status ?? r.signal}`;
  return { ok: false, error: error.trim() };
}
