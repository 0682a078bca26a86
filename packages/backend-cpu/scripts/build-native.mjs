#!/usr/bin/env node
// Builds the addon (build/Release/minfer_cpu.node, or build/Debug/minfer_cpu.node with
// MINFER_SANITIZE=address) with node-gyp, downloading nothing: the Node.js headers come from
// the installation running this script (--nodedir), node-gyp from this package's devDependency
// or npm's bundled copy. Run by the package's `install` and `build` scripts.
//
// When the build cannot run here (no headers, no compiler, no Python, a compile error) it writes
// the reason to build/NATIVE_UNAVAILABLE.txt, prints it and exits 0, so installing the workspace
// still succeeds; the backend then loads with score() === 0 and that reason. Pass --strict (or
// set MINFER_NATIVE_STRICT=1) to exit 1 instead.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const buildDir = join(pkg, "build");
const unavailableFile = join(buildDir, "NATIVE_UNAVAILABLE.txt");
const strict = process.argv.includes("--strict") || process.env.MINFER_NATIVE_STRICT === "1";
const sanitize = process.env.MINFER_SANITIZE ?? "";
const log = (line) => console.log(`[backend-cpu] ${line}`);

function unavailable(reason) {
  mkdirSync(buildDir, { recursive: true });
  const text = `The CPU backend's native addon was not built: ${reason}\n`;
  writeFileSync(unavailableFile, text);
  log(text.trim());
  log(`(recorded in ${unavailableFile}; the package still loads and reports score() === 0)`);
  process.exit(strict ? 1 : 0);
}

/** The directory whose include/node holds node_api.h, for --nodedir. */
function findNodeDir() {
  const hasHeaders = (dir) => dir && existsSync(join(dir, "include", "node", "node_api.h"));
  const fromExec = dirname(dirname(process.execPath)); // /usr/bin/node -> /usr
  if (hasHeaders(fromExec)) return fromExec;
  const fromNpm = process.env.npm_config_nodedir;
  if (hasHeaders(fromNpm)) return fromNpm;
  unavailable(
    `no Node.js headers: neither ${join(fromExec, "include/node/node_api.h")} (from process.execPath)` +
      (fromNpm ? ` nor ${join(fromNpm, "include/node/node_api.h")} (npm_config_nodedir)` : "") +
      " exists. Install the headers of this Node.js (e.g. the distribution's nodejs-dev / libnode-dev," +
      " or the official tarball's include/) or set npm_config_nodedir to a directory with include/node.",
  );
}

/** node-gyp's entry script: this package's devDependency, else npm's bundled copy. */
function findNodeGyp() {
  try {
    return createRequire(join(pkg, "package.json")).resolve("node-gyp/bin/node-gyp.js");
  } catch {
    // not installed as a dependency: try npm's own
  }
  const candidates = [
    join(
      dirname(dirname(process.execPath)),
      "lib",
      "node_modules",
      "npm",
      "node_modules",
      "node-gyp",
      "bin",
      "node-gyp.js",
    ),
  ];
  const npmExec = process.env.npm_execpath;
  if (npmExec)
    candidates.push(join(dirname(npmExec), "..", "node_modules", "node-gyp", "bin", "node-gyp.js"));
  const found = candidates.find((c) => existsSync(c));
  if (found) return found;
  unavailable(
    `node-gyp not found (devDependency not installed; none bundled with npm at ${candidates.join(", ")})`,
  );
}

function hasCommand(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: "ignore" });
  return r.status === 0;
}

function runGyp(gyp, args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [gyp, ...args], { cwd: pkg, stdio: ["ignore", "pipe", "pipe"] });
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
const nodedir = findNodeDir();
const gyp = findNodeGyp();
const cxx = process.env.CXX ?? "c++";
if (!hasCommand(cxx, ["--version"]))
  unavailable(`no C++ compiler (\`${cxx} --version\` failed); install g++ or clang++, or set CXX`);
const python = process.env.PYTHON ?? "python3";
if (!hasCommand(python, ["--version"]))
  unavailable(`no Python 3 for node-gyp (\`${python} --version\` failed)`);

const config = sanitize === "address" ? "Debug" : "Release";
const mode = config === "Debug" ? ["--debug"] : ["--release"];
log(
  `node-gyp ${gyp}; headers from --nodedir=${nodedir}; ${config}${sanitize ? " (address + undefined sanitizers)" : ""}`,
);

const configure = await runGyp(gyp, ["configure", `--nodedir=${nodedir}`, ...mode]);
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
if (config === "Release") {
  const check = spawnSync(process.execPath, ["-e", `require(${JSON.stringify(addon)})`], {
    encoding: "utf8",
  });
  if (check.status !== 0) unavailable(`${addon} was built but does not load:\n${check.stderr}`);
}
rmSync(unavailableFile, { force: true });
log(`built ${addon}`);
