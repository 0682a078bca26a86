// `minfer gguf quantize` to the i-quant mixes that need an importance matrix (IQ1_S … IQ3_XXS):
// refused without one, or without an entry for a tensor that needs one, as llama-quantize does;
// token_embd / output, which llama-imatrix never records, quantized with equal importance.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readGguf } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imatrixDat, minfer } from "../test-helpers.js";

const tmp = mkdtempSync(join(tmpdir(), "minfer-iquants-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const f16 = join(tmp, "small-f16.gguf");
const full = join(tmp, "full.dat");
const partial = join(tmp, "partial.dat");

/** A .dat importance matrix in which every column of each entry weighs 1. */
const dat = (entries: { name: string; cols: number }[]): Uint8Array =>
  imatrixDat(entries.map((e) => ({ name: e.name, values: new Float32Array(e.cols).fill(1) })));

beforeAll(async () => {
  const r = await minfer(
    "gguf",
    "synth",
    "--preset",
    "small",
    "--arch",
    "llama",
    "--type",
    "f16",
    "-o",
    f16,
    "-t",
    "1",
  );
  expect(r.code, r.stderr).toBe(0);
  const file = await readGguf(f16);
  // What llama-imatrix records: the blk.* matrices.
  const entries = file.tensors
    .filter((t) => t.name.startsWith("blk.") && t.dims.length === 2)
    .map((t) => ({ name: t.name, cols: t.dims[0]! }));
  writeFileSync(full, dat(entries));
  writeFileSync(partial, dat(entries.filter((e) => e.name !== "blk.1.attn_q.weight")));
}, 60_000);

describe("gguf quantize to the i-quants that need an importance matrix", () => {
  it("refuses without --imatrix, naming the type and a tensor", async () => {
    const r = await minfer("gguf", "quantize", f16, join(tmp, "x.gguf"), "iq2_xxs", "-t", "1");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/INVALID_ARGUMENT/);
    expect(r.stderr).toMatch(/tensor "blk\.0\.attn_q\.weight" would be IQ2_XXS.*--imatrix FILE/);
  });

  it("refuses an imatrix without an entry a tensor needs (BAD_IMATRIX)", async () => {
    const r = await minfer(
      "gguf",
      "quantize",
      f16,
      join(tmp, "x.gguf"),
      "iq1_s",
      "-t",
      "1",
      "--imatrix",
      partial,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/BAD_IMATRIX/);
    expect(r.stderr).toMatch(/no entry for tensor "blk\.1\.attn_q\.weight", which IQ1_S needs/);
  });

  it("writes the IQ1_S mix with llama.cpp's per-tensor types", async () => {
    const out = join(tmp, "iq1_s.gguf");
    const r = await minfer("gguf", "quantize", f16, out, "iq1_s", "-t", "2", "--imatrix", full);
    expect(r.code, r.stderr).toBe(0);
    const file = await readGguf(out);
    expect(file.metadata.integer("general.file_type")).toBe(24);
    const types = Object.fromEntries(file.tensors.map((t) => [t.name, t.typeName]));
    expect(types["token_embd.weight"]).toBe("Q2_K");
    expect(types["output.weight"]).toBe("Q5_K");
    expect(types["blk.0.attn_q.weight"]).toBe("IQ1_S");
    expect(types["blk.1.ffn_up.weight"]).toBe("IQ1_S");
    expect(types["blk.0.attn_v.weight"]).toBe("Q2_K"); // GQA 2
    expect(types["blk.0.attn_output.weight"]).toBe("IQ2_XXS");
  }, 120_000);

  it("--pure: token_embd and output, which the imatrix lacks, weigh every column the same", async () => {
    const out = join(tmp, "iq1_m-pure.gguf");
    const r = await minfer("gguf", "quantize", f16, out, "iq1_m", "--pure", "-t", "2", "--imatrix", full);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/note: token_embd\.weight: no importance for IQ1_M; all columns weigh the same/);
    const file = await readGguf(out);
    const matrices = file.tensors.filter((t) => t.dims.length === 2);
    expect(new Set(matrices.map((t) => t.typeName))).toEqual(new Set(["IQ1_M"]));
  }, 120_000);

  it("TQ1_0 needs no imatrix", async () => {
    const out = join(tmp, "tq1_0.gguf");
    const r = await minfer("gguf", "quantize", f16, out, "tq1_0", "-t", "1");
    expect(r.code, r.stderr).toBe(0);
    const file = await readGguf(out);
    expect(file.metadata.integer("general.file_type")).toBe(36);
    const types = Object.fromEntries(file.tensors.map((t) => [t.name, t.typeName]));
    expect(types["token_embd.weight"]).toBe("Q4_K");
    expect(types["blk.0.ffn_down.weight"]).toBe("TQ1_0");
  }, 60_000);
});
