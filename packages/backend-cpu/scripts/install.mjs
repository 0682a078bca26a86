#!/usr/bin/env node
// The package's `install` script. When this platform's prebuilt package is installed and its
// binary loads in a child process, it prints "using prebuilt …" and compiles nothing. Otherwise
// it builds from the shipped sources (build-native.mjs), which, when it cannot (no compiler, no
// Python), records one line naming what to install in build/NATIVE_UNAVAILABLE.txt and still
// exits 0: the backend then loads with score() 0 and that reason. Nothing is downloaded.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { packageRoot } from "./native-sources.mjs";
import { findPrebuilt, loadsInChild } from "./prebuilt.mjs";

/**
 * The decision: { action: "prebuilt", line } when the prebuilt binary loads, else
 * { action: "build", status } with why no prebuilt binary is used.
 */
export function decide(prebuilt, loads) {
  if (!prebuilt.path) return { action: "build", status: prebuilt.missing };
  const r = loads(prebuilt.path);
  if (r.ok)
    return { action: "prebuilt", line: `[backend-cpu] using prebuilt ${prebuilt.name} (${prebuilt.path})` };
  return { action: "build", status: `${prebuilt.name} does not load here: ${r.error}` };
}

/** Builds from source in a child process; returns its exit status. */
function buildFromSource(pkg, status) {
  const script = join(pkg, "scripts", "build-native.mjs");
  const r = spawnSync(process.execPath, [script, `--prebuilt-status=${status}`], { stdio: "inherit" });
  return r.status ?? 1;
}

/** Runs the install for the package at pkg; the parts are injectable for tests. Returns the exit code. */
export function main({
  pkg = packageRoot,
  prebuilt = findPrebuilt(pkg),
  loads = loadsInChild,
  build = buildFromSource,
} = {}) {
  const d = decide(prebuilt, loads);
  if (d.action === "prebuilt") {
    rmSync(join(pkg, "build", "NATIVE_UNAVAILABLE.txt"), { force: true });
    console.log(d.line);
    return 0;
  }
  return build(pkg, d.status);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main();
