#!/usr/bin/env node
// The install test: minfer as a user gets it from npm. Starts a local registry (verdaccio on
// 127.0.0.1), fills the per-platform packages' binaries that this machine can build, packs and
// publishes every public package, checks each tarball, then in empty folders outside the checkout
// installs with npm and runs:
//   a  npm i minfer; npx minfer run -p "The jury said" -n 16 --temp 0   (the prebuilt CPU backend)
//   b  npm i @minfer/gguf alone: no native code, no install script; reads a GGUF
//   c  examples/custom-engine against the installed layer packages (llama.cpp's greedy tokens)
//   d  npm i minfer --omit=optional: the CPU backend builds from its shipped sources
//   e  the same with no compiler on PATH: the install says what is missing; minfer run fails
//      with a coded error that names the fix
// Scenarios run one after another; each prints its time. Any failure exits 1 with what failed.
//
//   node scripts/install-test/run.mjs [--only a,c] [--keep] [--pack-dir DIR] [--prebuilds T,…]
//     --only       run only these scenarios (the registry and the publish always run)
//     --keep       keep the temp folder (registry storage, tarballs, scenario folders, log)
//     --pack-dir   also copy the published tarballs to DIR (to carry them to another machine)
//     --prebuilds  the prebuild targets to build (default: all of cpu-x64, cpu-arm64, cuda-x64);
//                  a platform package not built is published only if its binary is already
//                  there; one this machine cannot build is left out, except this machine's CPU one
//   MINFER_FIXTURES  the fixtures folder (default: ../shared/fixtures beside the repository)
//
// Needs the workspace built (node scripts/setup.mjs; the README's test command runs it first),
// the root devDependency verdaccio, and the npm registry (verdaccio proxies non-minfer packages).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { CheckError, endRunning } from "./exec.mjs";
import { isPlatformPackage, matchesHost, packAndPublish, prebuild, workspacePackages } from "./publish.mjs";
import { startRegistry } from "./registry.mjs";
import { SCENARIOS } from "./scenarios.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values: opts } = parseArgs({
  options: {
    only: { type: "string" },
    keep: { type: "boolean", default: false },
    "pack-dir": { type: "string" },
    prebuilds: { type: "string" },
  },
});
const fixtures = process.env.MINFER_FIXTURES ?? resolve(root, "..", "shared", "fixtures");
const prebuildTargets = opts.prebuilds?.split(",").filter(Boolean) ?? null;
const only = opts.only?.split(",") ?? null;
if (only) {
  const unknown = only.filter((id) => !SCENARIOS.some((s) => s.id === id));
  if (unknown.length) {
    console.error(
      `install-test: unknown scenario ${unknown.join(", ")}; one of ${SCENARIOS.map((s) => s.id).join(", ")}`,
    );
    process.exit(2);
  }
}

const say = (line) => console.log(`install-test: ${line}`);
const tmp = mkdtempSync(join(tmpdir(), "minfer-install-test-"));
if (`${tmp}${sep}`.startsWith(`${root}${sep}`)) {
  console.error(`install-test: the temp folder ${tmp} is inside the checkout; set TMPDIR elsewhere`);
  process.exit(2);
}
const logFile = join(tmp, "install-test.log");
writeFileSync(logFile, "");

let registry = null;
let cleaned = false;
function cleanup() {
  if (cleaned) return;
  cleaned = true;
  endRunning();
  registry?.stop();
  if (opts.keep) say(`kept ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM"])
  process.on(signal, () => {
    console.log(`install-test: stopped by ${signal}; 0 passed, 1 failed`);
    cleanup();
    process.exit(1);
  });

const results = []; // { name, ok, seconds, error }
async function step(name, fn) {
  const started = Date.now();
  say(`── ${name}`);
  try {
    const value = await fn();
    const seconds = (Date.now() - started) / 1000;
    results.push({ name, ok: true, seconds });
    say(`ok ${name} (${seconds.toFixed(1)} s)`);
    return value;
  } catch (e) {
    const seconds = (Date.now() - started) / 1000;
    results.push({ name, ok: false, seconds, error: e });
    say(`FAILED ${name} (${seconds.toFixed(1)} s): ${e.message}`);
    if (e.detail) console.log(e.detail.replace(/^/gm, "    "));
    if (!(e instanceof CheckError)) console.log(e.stack);
    return undefined;
  }
}

function report() {
  say("── summary (seconds)");
  for (const r of results)
    say(
      `${r.ok ? "ok    " : "FAILED"} ${r.seconds.toFixed(1).padStart(7)}  ${r.name}${r.ok ? "" : `: ${r.error.message}`}`,
    );
  const passed = results.filter((r) => r.ok).length;
  say(`log: ${opts.keep ? logFile : "(removed with the temp folder; --keep keeps it)"}`);
  console.log(`install-test: ${passed} passed, ${results.length - passed} failed`);
  return results.length === passed ? 0 : 1;
}

const stories = join(fixtures, "models", "stories260K.gguf");
const packages = workspacePackages(root);
const started = Date.now();

const ready = await step("registry: verdaccio on 127.0.0.1", async () => {
  // The scenarios read this model; a missing fixture fails the test rather than skip a scenario.
  if (!existsSync(stories)) throw new CheckError(`fixture missing: ${stories} (set MINFER_FIXTURES)`);
  const uplink = execFileSync("npm", ["config", "get", "registry"], { encoding: "utf8" }).trim();
  registry = await startRegistry({ root, dir: join(tmp, "registry"), uplink, env: process.env });
  say(`registry ${registry.url} (pid ${registry.pid}), proxying ${uplink}; temp ${tmp}`);
  return true;
});

let built = null;
if (ready)
  await step("prebuild: per-platform binaries", async () => {
    built = await prebuild({ root, packages, targets: prebuildTargets, logFile, say });
    if (built.errors.length)
      throw new CheckError(
        built.errors.map((e) => e.message).join("; "),
        built.errors.map((e) => e.detail).join("\n"),
      );
  });

let publishedList = [];
if (built) {
  await await step("publish: pack, check and publish every public package", async () => {
    const outDir = join(tmp, "tarballs");
    mkdirSync(outDir, { recursive: true });
    const skip = new Set(built.skipped.map((s) => s.name));
    const { results: list, failures } = await packAndPublish({
      root,
      packages,
      skip,
      outDir,
      registry,
      logFile,
      say,
    });
    publishedList = list;
    if (opts["pack-dir"]) {
      mkdirSync(opts["pack-dir"], { recursive: true });
      for (const p of list) copyFileSync(p.tgz, join(opts["pack-dir"], basename(p.tgz)));
      say(`copied ${list.length} tarballs to ${opts["pack-dir"]}`);
    }
    const problems = [
      ...failures.map(
        (f) => `${f.name}: not published: ${f.error.message}${f.error.detail ? `\n${f.error.detail}` : ""}`,
      ),
      ...list.flatMap((p) => p.problems.map((x) => `${p.name}: ${x}`)),
    ];
    for (const s of built.skipped) say(`not published: ${s.name} (${s.reason})`);
    if (problems.length) throw new CheckError(`${problems.length} tarball problem(s)`, problems.join("\n"));
    return list;
  });
}

if (built) {
  // The scenarios run even after a publish problem, on what was published.
  const list = publishedList;
  const byName = new Map(packages.map((p) => [p.name, p]));
  const ctx = {
    root,
    tmp,
    logFile,
    say,
    stories,
    registryUrl: registry.url,
    versions: new Map(list.map((p) => [p.name, p.version])),
    published: list.map((p) => ({
      name: p.name,
      version: p.version,
      platform: isPlatformPackage(byName.get(p.name)),
      host: isPlatformPackage(byName.get(p.name)) && matchesHost(byName.get(p.name)),
    })),
  };
  for (const s of SCENARIOS) {
    if (only && !only.includes(s.id)) continue;
    await step(`${s.id}: ${s.title}`, () => s.run(ctx));
  }
}
say(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
const code = report();
cleanup();
process.exit(code);
