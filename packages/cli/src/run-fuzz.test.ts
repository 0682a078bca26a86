// `minfer run` over mutated models through scripts/fuzz/gguf-run.mjs: no abort, hang, uncoded
// failure or peak RSS over 1 GiB. MINFER_FUZZ_SEED and MINFER_FUZZ_COUNT override the defaults.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { bin } from "./test-helpers.js";

const script = fileURLToPath(new URL("../../../scripts/fuzz/gguf-run.mjs", import.meta.url));
const seed = process.env.MINFER_FUZZ_SEED ?? "30";
const count = process.env.MINFER_FUZZ_COUNT ?? "100";

it(`${count} mutated models through minfer run: every one ok or refused with a code`, async () => {
  expect(existsSync(bin), `${bin} is missing: build the package first`).toBe(true);
  const args = [
    script,
    "--count",
    count,
    "--seed",
    seed,
    "--jobs",
    "2",
    "--timeout-ms",
    "10000",
    "--max-rss-mib",
    "1024",
  ];
  let out: { stdout: string; stderr: string; code: number };
  try {
    out = { ...(await promisify(execFile)(process.execPath, args, { maxBuffer: 16 << 20 })), code: 0 };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    out = { stdout: err.stdout, stderr: err.stderr, code: err.code };
  }
  console.log(out.stdout);
  expect(out.stdout).toMatch(new RegExp(`seed ${seed}, ${count} files`));
  expect(out.code, `${out.stdout}\n${out.stderr}`).toBe(0);
}, 240_000);
