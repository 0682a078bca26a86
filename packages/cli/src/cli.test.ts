import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { dequantize, GgmlType, readGguf, readTensorData } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bin, fixtures, minfer } from "./test-helpers.js";

const _here = dirname(fileURLToPath(import.meta.url));
const stories = join(fixtures, "models/stories260K.gguf");
const tmp = mkdtempSync(join(tmpdir(), "minfer-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the package first (turbo run build)`);
});

describe("minfer gguf inspect", () => {
  it("reports what PROVENANCE.md says of stories260K", async () => {
    const r = await minfer("gguf", "inspect", stories, "--json");
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.architecture).toBe("llama");
    expect(report.tensorCount).toBe(48);
    expect(report.metadataCount).toBe(19);
    expect(report.totals.byType.F32.tensors).toBe(48);
    const tokens = report.metadata["tokenizer.ggml.tokens"];
    expect(tokens).toMatchObject({ type: "array", itemType: "string", length: 512, truncated: true });
    expect(tokens.items.length).toBe(8);
  });

  it("prints a table of tensors and totals", async () => {
    const r = await minfer("gguf", "inspect", stories);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("GGUF v3, architecture llama");
    expect(r.stdout).toContain("19 metadata keys, 48 tensors");
    expect(r.stdout).toMatch(/output\.weight\s+F32\s+\[64, 512\]\s+131072/);
    expect(r.stdout).toMatch(/all\s+48 tensors/);
  });

  it("fails with the error code and the byte offset for a file that is not GGUF", async () => {
    const bad = join(tmp, "bad.gguf");
    writeFileSync(bad, "not a gguf file at all");
    const r = await minfer("gguf", "inspect", bad);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("[BAD_MAGIC]");
    expect(r.stderr).toContain("at byte 0");
    const missing = await minfer("gguf", "inspect", join(tmp, "nope.gguf"));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("[IO_ERROR]");
  });
});

describe("usage errors", () => {
  it("name the problem and exit with status 2", async () => {
    const unknownOption = await minfer("gguf", "inspect", stories, "--jsn");
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toContain("unknown option --jsn; valid options: --json");
    const missing = await minfer("gguf", "quantize", stories);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing OUT TYPE");
    const unknownCommand = await minfer("gguf", "frobnicate");
    expect(unknownCommand.code).toBe(2);
    expect(unknownCommand.stderr).toContain('unknown gguf command "frobnicate"');
    const badNumber = await minfer("gguf", "quantize", stories, join(tmp, "x.gguf"), "q8_0", "-t", "two");
    expect(badNumber.code).toBe(2);
    expect(badNumber.stderr).toContain('-t expects an integer, got "two"');
  });
});

describe("synth → quantize → split → merge", () => {
  const f32 = join(tmp, "tiny-f32.gguf");

  it("synthesizes a model with the fixture vocabulary", async () => {
    const r = await minfer(
      "gguf",
      "synth",
      "--arch",
      "qwen2",
      "--preset",
      "tiny",
      "--type",
      "f32",
      "--vocab",
      join(fixtures, "vocab/ggml-vocab-gpt-2.gguf"),
      "-o",
      f32,
      "--seed",
      "5",
    );
    expect(r.code, r.stderr).toBe(0);
    const g = await readGguf(f32);
    expect(g.metadata.architecture).toBe("qwen2");
    expect(g.metadata.stringArray("tokenizer.ggml.tokens").length).toBe(50257);
    expect(g.tensors.find((t) => t.name === "blk.1.attn_v.bias")?.dims).toEqual([32]);
  });

  it("quantizes to Q8_0 with values close to the originals, the same for any thread count", async () => {
    const a = join(tmp, "q8-a.gguf");
    const b = join(tmp, "q8-b.gguf");
    const r1 = await minfer("gguf", "quantize", f32, a, "q8_0", "-t", "1");
    const r2 = await minfer("gguf", "quantize", f32, b, "Q8_0", "--threads", "2");
    expect(r1.code, r1.stderr).toBe(0);
    expect(r2.code, r2.stderr).toBe(0);
    expect(Buffer.compare(readFileSync(a), readFileSync(b))).toBe(0);
    const src = await readGguf(f32);
    const q = await readGguf(a);
    expect(q.metadata.integer("general.file_type")).toBe(7);
    const emb = q.tensors.find((t) => t.name === "token_embd.weight")!;
    expect(emb.type).toBe(GgmlType.Q8_0);
    expect(q.tensors.find((t) => t.name === "output_norm.weight")!.type).toBe(GgmlType.F32);
    const orig = dequantize(GgmlType.F32, await readTensorData(src, emb.name), emb.nElements);
    const back = dequantize(GgmlType.Q8_0, await readTensorData(q, emb.name), emb.nElements);
    let maxErr = 0;
    for (let i = 0; i < orig.length; i++) maxErr = Math.max(maxErr, Math.abs(orig[i]! - back[i]!));
    // Q8_0 steps are max|x|/127 per block of 32; weights are N(0, 0.02), so |x| < 0.12.
    expect(maxErr).toBeLessThan(0.12 / 127);
    expect(maxErr).toBeGreaterThan(0);
  });

  it("refuses to requantize unless asked", async () => {
    const q8 = join(tmp, "q8-a.gguf");
    const r = await minfer("gguf", "quantize", q8, join(tmp, "q4.gguf"), "q4_0");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--allow-requantize");
    const ok = await minfer("gguf", "quantize", q8, join(tmp, "q4.gguf"), "q4_0", "--allow-requantize");
    expect(ok.code, ok.stderr).toBe(0);
  });

  it("splits and merges back to the same bytes", async () => {
    const r = await minfer("gguf", "split", "--split-max-size", "2M", f32, join(tmp, "part"));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("part-00001-of-");
    const first = r.stderr.match(/\S*part-00001-of-\d{5}\.gguf/)![0];
    const merged = join(tmp, "merged.gguf");
    const m = await minfer("gguf", "merge", first, merged);
    expect(m.code, m.stderr).toBe(0);
    expect(Buffer.compare(readFileSync(merged), readFileSync(f32))).toBe(0);
  });
});
