#!/usr/bin/env node
// Fills the platform packages with their prebuilt Node-API binaries (which are never committed):
//
//   node scripts/release/prebuild.mjs [cpu-x64] [cpu-arm64] [cuda-x64]      (none named: all three)
//
//   cpu-x64    the repository's Release build (packages/backend-cpu/build/Release, brought up to
//              date by build-native.mjs --strict: runtime SIMD dispatch, never -march=native)
//   cpu-arm64  a cross-compiled build (aarch64-linux-gnu-g++) of a staging copy of the package laid
//              out as installed (packages/backend-cpu/build/prebuild-arm64)
//   cuda-x64   nvcc for sm_80, sm_86, sm_89, sm_90 and compute_90 PTX, the CUDA runtime linked
//              statically (packages/backend-cuda/build/release-x64; sm_75 does not compile)
//
// Each binary is checked (an ELF shared object for its CPU; the CUDA one holds SASS for every
// real architecture and the PTX in each translation unit; loaded in a child process where it
// can run here) before it is copied to packages/<platform package>/. Exits 1 naming each target
// that could not be built and why.
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { copySources } from "../../packages/backend-cpu/scripts/native-sources.mjs";
import { loadsInChild as cpuLoads } from "../../packages/backend-cpu/scripts/prebuilt.mjs";
import { loadsInChild as cudaLoads, RELEASE_ARCHS } from "../../packages/backend-cuda/scripts/prebuilt.mjs";
import { elfProblem } from "./elf.mjs";
import { fatbinContents, fatbinProblem } from "./fatbin.mjs";
import { TARGETS } from "./targets.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const cpuPkg = join(root, "packages/backend-cpu");
const cudaPkg = join(root, "packages/backend-cuda");
const mib = (path) => statSync(path).size / 2 ** 20;
const log = (line) => console.log(`[prebuild] ${line}`);

/** The environment of a release build: no sanitizer, no flags from the caller's shell. */
function releaseEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  for (const k of ["MINFER_SANITIZE", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CPPFLAGS", "MINFER_CUDA_ARCHS"])
    if (!(k in extra)) delete env[k];
  return env;
}

/** Runs a build script; throws with its exit status when it fails. */
function run(script, args, env) {
  log(`node ${script} ${args.join(" ")}`);
  const r = spawnSync(process.execPath, [script, ...args], { stdio: "inherit", env });
  if (r.status !== 0) throw new Error(`${script} failed (exit ${r.status ?? r.signal}; its output is above)`);
}

const has = (cmd) => spawnSync(cmd, ["--version"], { stdio: "ignore" }).status === 0;

function buildCpuX64() {
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(`cpu-x64 is built on linux x64 (this is ${process.platform} ${process.arch})`);
  run(join(cpuPkg, "scripts/build-native.mjs"), ["--strict"], releaseEnv());
  return join(cpuPkg, "build/Release/minfer_cpu.node");
}

function buildCpuArm64() {
  const cross = {
    CC: "aarch64-linux-gnu-gcc",
    CXX: "aarch64-linux-gnu-g++",
    LINK: "aarch64-linux-gnu-g++",
    AR: "aarch64-linux-gnu-ar",
  };
  const absent = Object.values(cross).filter((c) => !has(c));
  if (absent.length > 0)
    throw new Error(
      `no AArch64 cross toolchain: ${absent.join(", ")} not found (Debian: apt install g++-aarch64-linux-gnu)`,
    );
  // A copy of what the tarball ships (its `files` but dist/ and README.md), beside the package's
  // node_modules, so node-gyp and node-addon-api resolve as they do in an installed package.
  const stage = join(cpuPkg, "build/prebuild-arm64");
  const files = JSON.parse(readFileSync(join(cpuPkg, "package.json"), "utf8")).files;
  for (const f of files.filter((f) => !["dist", "native", "README.md"].includes(f)))
    cpSync(join(cpuPkg, f), join(stage, f), { recursive: true, preserveTimestamps: true });
  copySources(join(root, "native"), join(stage, "native"));
  rmSync(join(stage, "build/NATIVE_UNAVAILABLE.txt"), { force: true });
  run(join(stage, "scripts/build-native.mjs"), ["--strict", "--arch=arm64"], releaseEnv(cross));
  const out = join(stage, "build/Release/minfer_cpu.node");
  if (has("file")) log(spawnSync("file", ["-b", out], { encoding: "utf8" }).stdout.trim());
  return out;
}

function buildCudaX64() {
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(`cuda-x64 is built on linux x64 (this is ${process.platform} ${process.arch})`);
  const work = join(cudaPkg, "build/release-x64");
  const out = join(work, "minfer_cuda.node");
  rmSync(out, { force: true });
  run(
    join(cudaPkg, "scripts/build-native.mjs"),
    ["--strict", `--archs=${RELEASE_ARCHS}`, `--work=${join(work, "cmake")}`, `--out=${out}`],
    releaseEnv(),
  );
  const problem = fatbinProblem(out, RELEASE_ARCHS);
  if (problem) throw new Error(problem);
  const c = fatbinContents(out);
  log(
    `fat binary: ${c.units} translation units, each with SASS ${Object.keys(c.sass).join(", ")} and PTX` +
      ` ${Object.keys(c.ptx).join(", ")}; ${(c.size / 2 ** 20).toFixed(1)} MiB of device code`,
  );
  return out;
}

const BUILDERS = {
  "cpu-x64": { build: buildCpuX64, loads: cpuLoads },
  "cpu-arm64": { build: buildCpuArm64 },
  "cuda-x64": { build: buildCudaX64, loads: cudaLoads },
};

const asked = process.argv.slice(2);
const unknown = asked.filter((t) => !TARGETS[t]);
if (unknown.length > 0) {
  console.error(
    `prebuild: unknown target ${unknown.join(", ")}; targets: ${Object.keys(TARGETS).join(", ")}`,
  );
  process.exit(2);
}
const failed = [];
for (const name of asked.length > 0 ? asked : Object.keys(TARGETS)) {
  const t = TARGETS[name];
  const dest = join(root, t.dir, t.binary);
  const started = Date.now();
  try {
    rmSync(dest, { force: true }); // a failed build must not leave an old binary to be published
    const built = BUILDERS[name].build();
    if (!existsSync(built)) throw new Error(`the build finished but ${built} is missing`);
    const problem = elfProblem(built, t.arch);
    if (problem) throw new Error(problem);
    const loads = t.arch === process.arch ? BUILDERS[name].loads?.(built) : undefined;
    if (loads && !loads.ok) throw new Error(`${built} does not load: ${loads.error}`);
    copyFileSync(built, dest);
    const size = mib(dest);
    const s = Math.round((Date.now() - started) / 1000);
    log(
      `${name}: ${dest} ${size.toFixed(1)} MiB (${s} s${loads ? ", loads" : ", not loadable on this machine"})` +
        (size > 100 ? "; larger than 100 MiB" : ""),
    );
  } catch (e) {
    failed.push(`${name}: ${e.message}`);
    console.error(`[prebuild] ${name} not built: ${e.message}`);
  }
}
if (failed.length > 0) {
  console.error(`[prebuild] ${failed.length} target(s) failed:\n  ${failed.join("\n  ")}`);
  process.exit(1);
}
