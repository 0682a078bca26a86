import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dequantize, GgmlType, readGguf, readTensorRange } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bin, minfer } from "../test-helpers.js";

const tmp = mkdtempSync(join(tmpdir(), "minfer-q4km-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the package first (turbo run build)`);
});

describe("the q4_k_m recipe", () => {
  it("synth --preset small --type q4_k_m writes a readable Q4_K_M file (Q6_K output, file type 15)", async () => {
    const out = join(tmp, "small-q4km.gguf");
    const r = await minfer(
      "gguf",
      "synth",
      "--preset",
      "small",
      "--arch",
      "qwen2",
      "--type",
      "q4_k_m",
      "-o",
      out,
      "-t",
      "1",
    );
    expect(r.code, r.stderr).toBe(0);
    const file = await readGguf(out);
    expect(file.metadata.integer("general.file_type")).toBe(15);
    const typeOf = new Map(file.tensors.map((t) => [t.name, t.type]));
    expect(typeOf.get("output.weight")).toBe(GgmlType.Q6_K);
    expect(typeOf.get("token_embd.weight")).toBe(GgmlType.Q4_K);
    // Two layers: use_more_bits(i, 2) holds for layer 1 only.
    expect(typeOf.get("blk.0.attn_v.weight")).toBe(GgmlType.Q4_K);
    expect(typeOf.get("blk.1.attn_v.weight")).toBe(GgmlType.Q6_K);
    expect(typeOf.get("blk.1.ffn_down.weight")).toBe(GgmlType.Q6_K);
    expect(typeOf.get("blk.0.ffn_up.weight")).toBe(GgmlType.Q4_K);
    expect(typeOf.get("blk.0.attn_norm.weight")).toBe(GgmlType.F32);
    const output = file.tensors.find((t) => t.name === "output.weight")!;
    const values = dequantize(
      output.type,
      await readTensorRange(file, output, 0, output.byteSize),
      output.nElements,
    );
    const rms = Math.sqrt(values.reduce((a, v) => a + v * v, 0) / values.length);
    expect(rms).toBeGreaterThan(0.015); // random weights of std 0.02
    expect(rms).toBeLessThan(0.025);
  });

  it("quantize f16 → q4_k_m gives the same tensor types as synth", async () => {
    const f16 = join(tmp, "small-f16.gguf");
    const q = join(tmp, "small-q4km-quantized.gguf");
    const a = await minfer(
      "gguf",
      "synth",
      "--preset",
      "small",
      "--arch",
      "qwen2",
      "--type",
      "f16",
      "-o",
      f16,
      "-t",
      "1",
    );
    expect(a.code, a.stderr).toBe(0);
    const r = await minfer("gguf", "quantize", f16, q, "q4_k_m", "-t", "1");
    expect(r.code, r.stderr).toBe(0);
    const file = await readGguf(q);
    expect(file.metadata.integer("general.file_type")).toBe(15);
    expect(file.metadata.integer("general.quantization_version")).toBe(2);
    const typeOf = new Map(file.tensors.map((t) => [t.name, t.type]));
    expect(typeOf.get("output.weight")).toBe(GgmlType.Q6_K);
    expect(typeOf.get("blk.1.attn_v.weight")).toBe(GgmlType.Q6_K);
    expect(typeOf.get("blk.0.attn_v.weight")).toBe(GgmlType.Q4_K);
  });

  it("quantize f16 → the other mixes and --pure, with a summary of the types chosen", async () => {
    const f16 = join(tmp, "small-f16.gguf"); // written by the test above
    const run = async (type: string, ...flags: string[]) => {
      const out = join(tmp, `small-${type}${flags.join("")}.gguf`);
      const r = await minfer("gguf", "quantize", f16, out, type, "-t", "1", ...flags);
      expect(r.code, r.stderr).toBe(0);
      const file = await readGguf(out);
      const typeOf = new Map(file.tensors.map((t) => [t.name, t.typeName]));
      return { stderr: r.stderr, typeOf, fileType: file.metadata.integer("general.file_type") };
    };
    // Two layers: attn_v Q5_K (the first two), ffn_down Q4_K (n/16 = 0), attn_output Q4_K.
    const m = await run("q3_k_m");
    expect(m.fileType).toBe(12);
    expect(m.stderr).toMatch(/Q3_K_M: 27 tensors 11 F32, 9 Q3_K, 4 Q4_K, 2 Q5_K, 1 Q6_K\n/);
    expect(m.stderr).toMatch(/\n {2}blk\.N\.attn_v\.weight: 2 Q5_K\n/);
    expect(m.stderr).toMatch(/\n {2}output\.weight: 1 Q6_K\n/);
    expect(m.typeOf.get("blk.1.ffn_down.weight")).toBe("Q4_K");
    // llama.cpp's Q4_0 file type puts output.weight at Q6_K; --pure leaves it Q4_0.
    const q40 = await run("q4_0");
    expect([q40.fileType, q40.typeOf.get("output.weight"), q40.typeOf.get("blk.0.attn_v.weight")]).toEqual([
      2,
      "Q6_K",
      "Q4_0",
    ]);
    const pure = await run("q4_0", "--pure");
    expect([pure.fileType, pure.typeOf.get("output.weight")]).toEqual([2, "Q4_0"]);
    expect(pure.stderr).toMatch(/Q4_0 \(pure\): 27 tensors 16 Q4_0, 11 F32\n/);
    const km = await run("q4_k_m", "--pure");
    expect(km.fileType).toBe(15);
    expect(new Set([...km.typeOf.values()])).toEqual(new Set(["Q4_K", "F32"]));
  });

  it("names the recipes when the type is unknown", async () => {
    const r = await minfer(
      "gguf",
      "synth",
      "--preset",
      "tiny",
      "--arch",
      "llama",
      "--type",
      "q4_k_z",
      "-o",
      join(tmp, "x.gguf"),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/mixes: .*Q4_K_M/);
  });
});
