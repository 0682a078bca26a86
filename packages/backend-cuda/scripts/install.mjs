#!/usr/bin/env node
// The package's `install` script. When this platform's prebuilt package is installed and its
// binary loads in a child process, it prints "using prebuilt …" and compiles nothing. Otherwise
// it builds from the shipped sources with nvcc (build-native.mjs, for the GPUs of this machine),
// but only on Linux with an NVIDIA driver present: without one the addon could not run here, so
// the minutes of compiling are skipped (MINFER_CUDA_BUILD=1 builds anyway). Whatever stops the
// build is recorded as one line in build/NATIVE_UNAVAILABLE.txt, the script exits 0 and the
// backend loads with score() 0 and that reason. Nothing is downloaded.
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { packageRoot } from "./native-sources.mjs";
import { findPrebuilt, loadsInChild } from "./prebuilt.mjs";
import { recordUnavailable, unavailableFile } from "./unavailable.mjs";

const DRIVER_FILES = ["/proc/driver/nvidia/version", "/usr/lib/wsl/lib/libcuda.so.1"];

/** Whether this machine has an NVIDIA driver (its kernel module, or WSL's libcuda). */
export const hasDriver = () => DRIVER_FILES.some((f) => existsSync(f));

/**
 * The decision: { action: "prebuilt", line } when the prebuilt binary loads; else why no
 * prebuilt (status) with { action: "build" } or { action: "skip", reason }.
 */
export function decide(
  prebuilt,
  loads,
  { platform = process.platform, driver = hasDriver, force = false } = {},
) {
  let status = prebuilt.missing;
  if (prebuilt.path) {
    const r = loads(prebuilt.path);
    if (r.ok)
      return {
        action: "prebuilt",
        line: `[backend-cuda] using prebuilt ${prebuilt.name} (${prebuilt.path})`,
      };
    status = `${prebuilt.name} does not load here: ${r.error}`;
  }
  if (platform !== "linux")
    return { action: "skip", status, reason: `the CUDA backend builds on Linux only (this is ${platform})` };
  if (!force && !driver())
    return {
      action: "skip",
      status,
      reason:
        `no NVIDIA driver on this machine (none of ${DRIVER_FILES.join(", ")} exists), so a CUDA build` +
        " could not run here and was skipped (MINFER_CUDA_BUILD=1 builds anyway)",
    };
  return { action: "build", status };
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
  driver = hasDriver,
  force = process.env.MINFER_CUDA_BUILD === "1",
  platform = process.platform,
} = {}) {
  const d = decide(prebuilt, loads, { platform, driver, force });
  if (d.action === "prebuilt") {
    rmSync(unavailableFile(pkg), { force: true });
    console.log(d.line);
    return 0;
  }
  if (d.action === "build") return build(pkg, d.status);
  // A build made earlier (a checkout's `npm run build`) stays the one loaded: say so, record nothing.
  if (existsSync(join(pkg, "build", "minfer_cuda.node")))
    console.log(`[backend-cuda] not rebuilt: ${d.reason}; keeping ${join(pkg, "build", "minfer_cuda.node")}`);
  else recordUnavailable(pkg, d.reason, d.status);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main();
