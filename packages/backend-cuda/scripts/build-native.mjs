#!/usr/bin/env node
// Builds the CUDA addon (build/minfer_cuda.node) with CMake and nvcc from the sources in the
// package's native/ (an installed package) or the repository's native/ (a checkout),
// downloading nothing: Node's headers come from the installation running this script,
// node-addon-api from this package's dependency.
//
// Architectures: --archs=LIST, else MINFER_CUDA_ARCHS, else "native" (the GPUs of this machine)
// in an installed package and "90-real;90-virtual" in a checkout. --work=DIR and --out=FILE put
// the CMake tree and the addon elsewhere (scripts/release/prebuild.mjs uses them).
//
// Without nvcc or cmake (or when the build fails) it writes the reason to
// build/NATIVE_UNAVAILABLE.txt, prints it and exits 0, so the package still installs and loads
// with score() === 0 and that reason. --strict (or MINFER_NATIVE_STRICT=1) exits 1 instead.
// --prebuilt-status=TEXT adds why no prebuilt binary was used (install.mjs passes it).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { nativeRoot, packageRoot as pkg } from "./native-sources.mjs";
import { MIN_COMPUTE_CAPABILITY } from "./prebuilt.mjs";
import { replaceFile } from "./replace-file.mjs";
import { unavailableFile as noteFile, recordUnavailable, unavailableText } from "./unavailable.mjs";

const option = (name) => {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  return arg?.slice(name.length + 3);
};
const strict = process.argv.includes("--strict") || process.env.MINFER_NATIVE_STRICT === "1";
const buildDir = join(pkg, "build");
const work = resolve(option("work") ?? join(buildDir, "cmake"));
const out = resolve(option("out") ?? join(buildDir, "minfer_cuda.node"));
const ownBuild = out === join(buildDir, "minfer_cuda.node");
const unavailableFile = noteFile(pkg);
const prebuiltStatus = option("prebuilt-status");
const log = (line) => console.log(`[backend-cuda] ${line}`);

function unavailable(reason) {
  if (ownBuild) {
    rmSync(out, { force: true });
    recordUnavailable(pkg, reason, prebuiltStatus);
  } else console.log(unavailableText(reason, prebuiltStatus));
  process.exit(strict ? 1 : 0);
}

const found = (cmd) => spawnSync(cmd, ["--version"], { stdio: "ignore" }).status === 0;

/** nvcc's absolute path (CMake caches the compiler by path). */
function findNvcc() {
  if (process.env.CUDACXX) return process.env.CUDACXX;
  const r = spawnSync("sh", ["-c", "command -v nvcc"], { encoding: "utf8" });
  if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  return existsSync("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : undefined;
}

const sources = nativeRoot();
if (!sources.dir)
  unavailable(
    `no CUDA sources: neither ${join(pkg, "native", "cuda")} nor the repository's native/cuda exists`,
  );
const missing = [];
const nvcc = findNvcc();
if (!nvcc) missing.push("no CUDA toolkit (nvcc is not on PATH, nor /usr/local/cuda/bin/nvcc, nor $CUDACXX)");
else if (!found(nvcc)) missing.push(`no CUDA toolkit (\`${nvcc} --version\` failed)`);
if (!found("cmake")) missing.push("no cmake on PATH");
// Node's headers beside the Node.js running this (/usr/bin/node -> /usr/include/node), else in
// npm_config_nodedir (as the CPU backend's node-gyp build takes them).
const includeDirs = [dirname(dirname(process.execPath)), process.env.npm_config_nodedir]
  .filter(Boolean)
  .map((d) => join(d, "include", "node"));
const nodeInclude = includeDirs.find((d) => existsSync(join(d, "node_api.h")));
if (!nodeInclude)
  missing.push(
    `no Node.js headers (no node_api.h in ${includeDirs.join(" or ")}: install this Node.js's headers,` +
      " e.g. libnode-dev, or set npm_config_nodedir)",
  );
let napiInclude;
try {
  napiInclude = dirname(createRequire(join(pkg, "package.json")).resolve("node-addon-api/napi.h"));
} catch {
  missing.push("node-addon-api is not installed");
}
if (missing.length > 0) unavailable(missing.join(", "));

if (prebuiltStatus) log(`no prebuilt binary (${prebuiltStatus}): building from the shipped sources`);
const archs =
  option("archs") ?? process.env.MINFER_CUDA_ARCHS ?? (sources.shipped ? "native" : "90-real;90-virtual");
if (ownBuild) rmSync(unavailableFile, { force: true });
mkdirSync(work, { recursive: true });
const run = (args) => {
  log(`cmake ${args.join(" ")}`);
  return spawnSync("cmake", args, { stdio: "inherit" }).status === 0;
};
const started = Date.now();
const configured = run([
  "-S",
  join(sources.dir, "cuda"),
  "-B",
  work,
  "-DCMAKE_BUILD_TYPE=Release",
  `-DCMAKE_CUDA_COMPILER=${nvcc}`,
  `-DNODE_INCLUDE_DIR=${nodeInclude}`,
  `-DNAPI_INCLUDE_DIR=${napiInclude}`,
  `-DMINFER_CUDA_ARCHS=${archs}`,
]);
if (!configured) unavailable(`cmake could not configure ${join(sources.dir, "cuda")} (see the output above)`);
if (!run(["--build", work, "--parallel", String(Math.max(1, cpus().length))]))
  unavailable(
    `the build of ${join(sources.dir, "cuda")} for CUDA architectures ${archs} failed (see the output above;` +
      ` the kernels need compute capability ${MIN_COMPUTE_CAPABILITY} or later)`,
  );
mkdirSync(dirname(out), { recursive: true });
// Never written in place: running processes have the old addon loaded (replace-file.mjs).
replaceFile(join(work, "minfer_cuda.node"), out);
const seconds = Math.round((Date.now() - started) / 1000);
log(`built ${out} (CUDA architectures ${archs}; ${seconds} s)`);
