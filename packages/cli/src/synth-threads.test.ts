import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bin, fixtures, minfer } from "./test-helpers.js";

const tmp = mkdtempSync(join(tmpdir(), "minfer-synth-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the package first (turbo run build)`);
});

/** Synthesizes with `threads` threads (1: in this thread, no workers) and returns the file's bytes. */
async function synth(name: string, threads: number, ...args: string[]): Promise<Buffer> {
  const out = join(tmp, `${name}-t${threads}.gguf`);
  const r = await minfer("gguf", "synth", "--arch", "qwen2", "-o", out, "-t", String(threads), ...args);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toContain(`with ${threads} thread`);
  return readFileSync(out);
}

describe("minfer gguf synth --threads", () => {
  it("writes the same Q4_K file with worker threads as in one thread", async () => {
    const args = ["--preset", "small", "--type", "q4_k", "--seed", "11"];
    const serial = await synth("q4k", 1, ...args);
    const parallel = await synth("q4k", 3, ...args);
    expect(serial.length).toBeGreaterThan(100_000);
    expect(parallel.equals(serial)).toBe(true);
  });

  it("writes the same F16 file when a tensor spans many chunks (the Qwen2 vocabulary)", async () => {
    // token_embd is 256 × 151936: 38 chunks made on different workers from one random stream.
    const args = [
      "--preset",
      "small",
      "--type",
      "f16",
      "--vocab",
      join(fixtures, "vocab/ggml-vocab-qwen2.gguf"),
    ];
    const serial = await synth("f16", 1, ...args);
    const parallel = await synth("f16", 3, ...args);
    expect(serial.length).toBeGreaterThan(256 * 151936 * 2);
    expect(parallel.equals(serial)).toBe(true);
  });

  it("refuses a thread count below one", async () => {
    const r = await minfer(
      "gguf",
      "synth",
      "--preset",
      "tiny",
      "--arch",
      "llama",
      "-o",
      join(tmp, "x.gguf"),
      "-t",
      "0",
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("--threads must be at least 1");
  });
});
