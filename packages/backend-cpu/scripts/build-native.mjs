#!/usr/bin/env node
// Builds the addon (build/Release/minfer_cpu.node, or build/Debug/minfer_cpu.node with
// MINFER_SANITIZE=address) with node-gyp from the sources in the package's native/ (an installed
// package ships them) or the repository's native/ (a checkout), downloading nothing: the
// Node.js headers come from the installation running this script (--nodedir), node-gyp from this
// package's devDependency, else the one npm or pnpm puts on PATH for install scripts, else npm's
// bundled copy. Run by the package's `build` script and, when no prebuilt binary loads, by
// install.mjs.
//
// When the build cannot run here (no headers, no compiler, no Python, a compile error) it writes
// the reason and the fix to build/NATIVE_UNAVAILABLE.txt as one line, prints it and exits 0, so
// installing still succeeds; the backend then loads with score() === 0 and that reason. Pass
// --strict (or set MINFER_NATIVE_STRICT=1) to exit 1 instead. --prebuilt-status=TEXT adds why no
// prebuilt binary was used (install.mjs passes it). --arch=arm64 cross-compiles (with CXX, CC,
// LINK and AR naming the cross toolchain; scripts/release/prebuild.mjs does it): the result is
// not loaded here.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { nativeRoot, packageRoot as pkg } from "./native-sources.mjs";
import { unavailableFile as noteFile, recordUnavailable } from "./unavailable.mjs";

const option = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const buildDir = join(pkg, "build");
const unavailableFile = noteFile(pkg);
const strict = process.argv.includes("--strict") || process.env.MINFER_NATIVE_STRICT === "1";
const sanitize = process.env.MINFER_SANITIZE ?? "";
const prebuiltStatus = option("prebuilt-status");
const arch = option("arch") ?? process.arch;
const log = (line) => console.log(`[backend-cpu] ${line}`);

function unavailable(reason) {
  recordUnavailable(pkg, reason, prebuiltStatus);
  process.exit(strict ? 1 : 0);
}

/** The directory whose include/node holds node_api.h, for --nodedir; undefined when none. */
function findNodeDir() {
  const hasHeaders = (dir) => dir && existsSync(join(dir, "include", "node", "node_api.h"));
  const fromExec = dirname(dirname(process.execPath)); // /usr/bin/node -> /usr
  if (hasHeaders(fromExec)) return fromExec;
  const fromNpm = process.env.npm_config_nodedir;
  if (hasHeaders(fromNpm)) return fromNpm;
  missing.push(
    `no Node.js headers (${join(fromExec, "include/node/node_api.h")} is absent${fromNpm ? `, and so is ${join(fromNpm, "include/node/node_api.h")}` : ""}:` +
      " install this Node.js's headers, e.g. libnode-dev, or set npm_config_nodedir)",
  );
}

/**
 * How to run node-gyp: this package's (dev)dependency, else the `node-gyp` that npm and pnpm put
 * on PATH for install scripts, else npm's copy beside this Node.js; undefined when none.
 */
function findNodeGyp() {
  try {
    return [process.execPath, createRequire(join(pkg, "package.json")).resolve("node-gyp/bin/node-gyp.js")];
  } catch {
    // not a dependency here: look further
  }
  if (spawnSync("sh", ["-c", "command -v node-gyp"], { stdio: "ignore" }).status === 0) return ["node-gyp"];
  const npms = [join(dirname(dirname(process.execPath)), "lib", "node_modules", "npm")];
  if (process.env.npm_execpath) npms.push(join(dirname(process.env.npm_execpath), ".."));
  const bundled = npms
    .map((npm) => join(npm, "node_modules", "node-gyp", "bin", "node-gyp.js"))
    .find(existsSync);
  if (bundled) return [process.execPath, bundled];
  missing.push("no node-gyp (not a dependency here, not on PATH, not bundled with npm)");
}

function hasCommand(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: "ignore" });
  return r.status === 0;
}

function runGyp([cmd, ...pre], args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, [...pre, ...args], { cwd: pkg, stdio: ["ignore", "pipe", "pipe"] });
    let tail = "";
    const keep = (chunk, stream) => {
      stream.write(chunk);
      tail = (tail + chunk.toString()).slice(-4000);
    };
    child.stdout.on("data", (c) => keep(c, process.stdout));
    child.stderr.on("data", (c) => keep(c, process.stderr));
    child.on("error", (e) => resolve({ status: -1, tail: String(e) }));
    child.on("close", (status) => resolve({ status, tail }));
  });
}

if (sanitize !== "" && sanitize !== "address") {
  console.error(`[backend-cpu] MINFER_SANITIZE=${sanitize} is not supported; use MINFER_SANITIZE=address`);
  process.exit(1);
}
// Every missing prerequisite is named in one message.
const missing = [];
const sources = nativeRoot();
if (!sources.dir)
  missing.push(`no sources (neither ${join(pkg, "native", "cpu")} nor the repository's native/cpu)`);
const cxx = process.env.CXX ?? "c++";
if (!hasCommand(cxx, ["--version"]))
  missing.push(`no C++ compiler (\`${cxx} --version\` failed; or set CXX)`);
const python = process.env.PYTHON ?? "python3";
if (!hasCommand(python, ["--version"]))
  missing.push(`no Python 3 for node-gyp (\`${python} --version\` failed)`);
if (process.platform !== "win32" && !hasCommand("make", ["--version"])) missing.push("no make");
const nodedir = findNodeDir();
const gyp = findNodeGyp();
if (missing.length > 0) unavailable(missing.join(", "));

const config = sanitize === "address" ? "Debug" : "Release";
const mode = config === "Debug" ? ["--debug"] : ["--release"];
const cross = arch !== process.arch;
if (prebuiltStatus) log(`no prebuilt binary (${prebuiltStatus}): building from the shipped sources`);
log(
  `node-gyp ${gyp.join(" ")}; sources ${sources.dir}; headers from --nodedir=${nodedir}; ${config}` +
    `${sanitize ? " (address + undefined sanitizers)" : ""}${cross ? `; cross-compiling for ${arch} with ${cxx}` : ""}`,
);

const started = Date.now();
const configure = await runGyp(gyp, ["configure", `--nodedir=${nodedir}`, `--arch=${arch}`, ...mode]);
if (configure.status !== 0)
  unavailable(`node-gyp configure failed (exit ${configure.status}):\n${configure.tail}`);
const jobs = String(Math.max(1, cpus().length));
const build = await runGyp(gyp, ["build", `--nodedir=${nodedir}`, ...mode, "--jobs", jobs]);
if (build.status !== 0) unavailable(`node-gyp build failed (exit ${build.status}):\n${build.tail}`);

const addon = join(buildDir, config, "minfer_cpu.node");
if (!existsSync(addon)) unavailable(`the build finished but ${addon} is missing`);

// Kernels registered from an ISA file would be dropped by the linker (static libraries are
// linked without --whole-archive) and could run AVX-512 code at load time: warn about them.
if (process.platform === "linux" && hasCommand("nm", ["--version"])) {
  for (const lib of ["minfer_cpu_avx2", "minfer_cpu_avx512", "minfer_cpu_neon"]) {
    const archive = join(buildDir, config, "obj.target", `${lib}.a`);
    if (!existsSync(archive)) continue;
    const r = spawnSync("nm", ["-C", "-u", archive], { encoding: "utf8" });
    if (r.stdout?.includes("minfer::cpu::Registrar::Registrar")) {
      log(`WARNING: ${lib} registers kernels; register them from the op's baseline file instead`);
    }
  }
}

// Load it once in a child process: catches undefined symbols before the tests do.
if (config === "Release" && !cross) {
  const check = spawnSync(process.execPath, ["-e", `require(${JSON.stringify(addon)})`], {
    encoding: "utf8",
  });
  if (check.status !== 0) unavailable(`${addon} was built but does not load:\n${check.stderr}`);
}
rmSync(unavailableFile, { force: true });
log(`built ${addon} (${Math.round((Date.now() - started) / 1000)} s)`);
