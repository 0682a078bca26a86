#!/usr/bin/env node
// The standalone C++ tests of the kernels (part of this package's `test`): quantization, the native
// weight quantizer (byte for byte against @minfer/gguf's TypeScript) and
// matmul against TypeScript vectors and double precision, every other op against double
// precision (with guard bytes, NaN-filled outputs, batch invariance of attention), and — when
// an AArch64 cross compiler is installed — a NEON build and test under qemu.
import { spawnSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const tests = resolve(dirname(fileURLToPath(import.meta.url)), "../../../native/cpu/tests");

function run(cmd, args) {
  console.log(`$ ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { cwd: tests, stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`native test failed: ${cmd} ${args.join(" ")} (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

run("make", ["-s", "quant", "matmul", "weights"]);
run("bash", ["ops_build.sh"]);
const cross = spawnSync("sh", ["-c", "command -v aarch64-linux-gnu-g++"]).status === 0;
if (cross) run("bash", ["check-arm64.sh"]);
else
  console.log(
    "arm64 check skipped: aarch64-linux-gnu-g++ is not installed (Debian: g++-aarch64-linux-gnu qemu-user)",
  );
