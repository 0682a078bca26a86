// `minfer imatrix` end to end: the file it writes is llama-imatrix's GGUF format (read back by
// @minfer/gguf's parser, which reads llama-imatrix's own files), carries llama-imatrix's metadata,
// matches llama-imatrix's matrix on the same model and text (the reference file of
// packages/engine/src/imatrix-fixtures), is accepted by `gguf quantize --imatrix`, and each
// refusal names its problem.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseGguf, parseImatrix, tensorBytes } from "@minfer/gguf";
import { afterAll, describe, expect, it } from "vitest";
import { fixtures, minfer } from "../test-helpers.js";

const STORIES = join(fixtures, "models/stories260K.gguf");
const TEXT = join(fixtures, "vocab/ggml-vocab-llama-spm.gguf.inp");
const REFERENCE = new URL("../../../engine/src/imatrix-fixtures/stories260K.imatrix.gguf", import.meta.url)
  .pathname;
const dir = mkdtempSync(join(tmpdir(), "minfer-imatrix-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("minfer imatrix", () => {
  const out = join(dir, "im.gguf");

  it("writes llama-imatrix's format and matrix for stories260K", async () => {
    const r = await minfer("imatrix", "-m", STORIES, "-f", TEXT, "-o", out, "-c", "64", "-t", "2");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\[27\]2034\d\d\.\d{4},/);
    expect(r.stderr).toMatch(/35 entries over 27 chunks of 64 tokens/);
    const bytes = new Uint8Array(readFileSync(out));
    const file = parseGguf(bytes);
    expect(file.metadata.value("general.type")).toBe("imatrix");
    expect(file.metadata.value("imatrix.chunk_count")).toBe(27);
    expect(file.metadata.value("imatrix.chunk_size")).toBe(64);
    expect(file.metadata.value("imatrix.datasets")).toEqual(["ggml-vocab-llama-spm.gguf.inp"]);
    const refBytes = new Uint8Array(readFileSync(REFERENCE));
    const ref = parseGguf(refBytes);
    // the same tensors, in the same order, of the same shapes
    expect(file.tensors.map((t) => `${t.name}[${t.dims.join(",")}]`)).toEqual(
      ref.tensors.map((t) => `${t.name}[${t.dims.join(",")}]`),
    );
    const mine = parseImatrix(bytes);
    const theirs = parseImatrix(refBytes);
    for (const [name, means] of theirs) {
      const m = mine.get(name)!;
      for (let j = 0; j < means.length; j++)
        expect(Math.abs(m[j]! - means[j]!) / means[j]!, name).toBeLessThan(5e-3);
    }
    const counts = (f: typeof file, b: Uint8Array, name: string) =>
      Array.from(new Float32Array(tensorBytes(b, f, `${name}.counts`).slice().buffer));
    expect(counts(file, bytes, "blk.0.ffn_down.weight")).toEqual(
      counts(ref, refBytes, "blk.0.ffn_down.weight"),
    );
  }, 120_000);

  it("is what gguf quantize --imatrix uses (the built-in model: rows of whole K-quant blocks)", async () => {
    const model = new URL("../../models/minfer-default-7m-f16.gguf", import.meta.url).pathname;
    const im = join(dir, "default.gguf");
    const r = await minfer(
      "imatrix",
      "-m",
      model,
      "-f",
      TEXT,
      "-o",
      im,
      "-c",
      "64",
      "--chunks",
      "4",
      "-t",
      "2",
    );
    expect(r.code, r.stderr).toBe(0);
    const q = await minfer(
      "gguf",
      "quantize",
      model,
      join(dir, "q.gguf"),
      "q4_k_m",
      "--imatrix",
      im,
      "-t",
      "1",
    );
    expect(q.code, q.stderr).toBe(0);
    expect(q.stderr + q.stdout).toMatch(/imatrix .*default\.gguf: 56 entries, used for 5\d tensors/);
  }, 120_000);

  it("refuses a text shorter than two chunks, and missing arguments", async () => {
    const short = join(dir, "short.txt");
    writeFileSync(short, "Once upon a time.");
    const r = await minfer("imatrix", "-m", STORIES, "-f", short, "-o", join(dir, "x.gguf"));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/TEXT_TOO_SHORT.*needs at least 1024/);
    const noText = await minfer("imatrix", "-m", STORIES);
    expect(noText.code).toBe(2);
    expect(noText.stderr).toMatch(/-f TEXTFILE is required/);
    const badC = await minfer("imatrix", "-m", STORIES, "-f", TEXT, "-c", "8");
    expect(badC.code).toBe(2);
    expect(badC.stderr).toMatch(/-c/);
    const missing = await minfer("imatrix", "-m", STORIES, "-f", join(dir, "nope.txt"));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/MISSING_FILE/);
  });
});
