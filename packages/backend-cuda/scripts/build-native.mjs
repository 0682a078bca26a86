#!/usr/bin/env node
// Builds the CUDA addon (build/minfer_cuda.node) from native/cuda with CMake and nvcc, for sm_90
// plus compute_90 PTX (MINFER_CUDA_ARCHS overrides), downloading nothing: Node's headers come
// from the installation running this script, node-addon-api from this package's dependency.
//
// Without nvcc or cmake (or when the build fails) it writes the reason to
// build/NATIVE_UNAVAILABLE.txt, prints it and exits 0, so the package still installs and loads
// with score() === 0 and that reason. --strict (or MINFER_NATIVE_STRICT=1) exits 1 instead.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const source = resolve(pkg, "../../native/cuda");
const buildDir = join(pkg, "build");
const work = join(buildDir, "cmake");
const unavailableFile = join(buildDir, "NATIVE_UNAVAILABLE.txt");
const strict = process.argv.includes("--strict") || process.env.MINFER_NATIVE_STRICT === "1";
const log = (line) => console.log(`[backend-cuda] ${line}`);

function unavailable(reason) {
  mkdirSync(buildDir, { recursive: true });
  rmSync(join(buildDir, "minfer_cuda.node"), { force: true });
  writeFileSync(unavailableFile, `The CUDA backend's native addon was not built: ${reason}\n`);
  log(`not built: ${reason}`);
  log(`(recorded in ${unavailableFile}; the package still loads and reports score() === 0)`);
  process.exit(strict ? 1 : 0);
}

function found(cmd) {
  return spawnSync(cmd, ["--version"], { stdio: "ignore" }).status === 0;
}

const nvcc =
  process.env.CUDACXX ??
  (found("nvcc") ? "nvcc" : existsSync("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : undefined);
if (!nvcc) unavailable("no CUDA toolkit: nvcc is not on PATH (nor /usr/local/cuda/bin/nvcc, nor $CUDACXX)");
if (!found("cmake")) unavailable("cmake is not on PATH");
const nodeInclude = join(dirname(dirname(process.execPath)), "include", "node");
if (!existsSync(join(nodeInclude, "node_api.h")))
  unavailable(`no Node.js headers at ${nodeInclude} (install this Node.js's headers, e.g. libnode-dev)`);
let napiInclude;
try {
  napiInclude = dirname(createRequire(join(pkg, "package.json")).resolve("node-addon-api/napi.h"));
} catch {
  unavailable("node-addon-api is not installed");
}

const archs = process.env.MINFER_CUDA_ARCHS ?? "90-real;90-virtual";
rmSync(unavailableFile, { force: true });
mkdirSync(work, { recursive: true });
const run = (args) => {
  log(`cmake ${args.join(" ")}`);
  const r = spawnSync("cmake", args, { stdio: "inherit" });
  return r.status === 0;
};
const configured = run([
  "-S",
  source,
  "-B",
  work,
  "-DCMAKE_BUILD_TYPE=Release",
  `-DCMAKE_CUDA_COMPILER=${nvcc}`,
  `-DNODE_INCLUDE_DIR=${nodeInclude}`,
  `-DNAPI_INCLUDE_DIR=${napiInclude}`,
  `-DMINFER_CUDA_ARCHS=${archs}`,
]);
if (!configured) unavailable("cmake could not configure native/cuda (see the output above)");
if (!run(["--build", work, "--parallel", String(Math.max(1, cpus().length))]))
  unavailable("the build of native/cuda failed (see the output above)");
copyFileSync(join(work, "minfer_cuda.node"), join(buildDir, "minfer_cuda.node"));
log(`built ${join(buildDir, "minfer_cuda.node")} (CUDA architectures ${archs})`);
