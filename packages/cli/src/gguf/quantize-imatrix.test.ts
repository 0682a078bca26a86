import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GgmlType, readGguf, readTensorRange } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imatrixDat as dat, minfer } from "../test-helpers.js";

const tmp = mkdtempSync(join(tmpdir(), "minfer-imatrix-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const f16 = join(tmp, "small-f16.gguf");

async function tensorData(path: string, name: string): Promise<Uint8Array> {
  const file = await readGguf(path);
  const t = file.tensors.find((x) => x.name === name)!;
  return readTensorRange(file, t, 0, t.byteSize);
}

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
});

describe("gguf quantize --imatrix", () => {
  it("weighs the tensors the imatrix has, leaves the others as without, and notes how many it lacks", async () => {
    const file = await readGguf(f16);
    const up = file.tensors.find((t) => t.name === "blk.0.ffn_up.weight")!;
    const cols = up.dims[0]!;
    const values = Float32Array.from({ length: cols }, (_, j) => (j % 7 === 0 ? 50 : 0.5));
    const imatrix = join(tmp, "one.dat");
    writeFileSync(imatrix, dat([{ name: up.name, values }]));
    const plain = join(tmp, "plain.gguf");
    const weighted = join(tmp, "weighted.gguf");
    const a = await minfer("gguf", "quantize", f16, plain, "q4_k", "-t", "2");
    expect(a.code, a.stderr).toBe(0);
    const b = await minfer("gguf", "quantize", f16, weighted, "q4_k", "-t", "2", "--imatrix", imatrix);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stderr).toMatch(/imatrix .*one\.dat: 1 entries, used for 1 tensors/);
    expect(b.stderr).toMatch(/note: the imatrix has no entry for \d+ tensor\(s\), quantized without one/);
    const out = await readGguf(weighted);
    expect(out.tensors.find((t) => t.name === up.name)!.type).toBe(GgmlType.Q4_K);
    expect(await tensorData(weighted, up.name)).not.toEqual(await tensorData(plain, up.name));
    expect(await tensorData(weighted, "blk.0.ffn_gate.weight")).toEqual(
      await tensorData(plain, "blk.0.ffn_gate.weight"),
    );
  });

  it("fails naming the tensor when an entry has the wrong size", async () => {
    const imatrix = join(tmp, "wrong.dat");
    writeFileSync(imatrix, dat([{ name: "blk.0.ffn_up.weight", values: new Float32Array(100).fill(1) }]));
    const r = await minfer(
      "gguf",
      "quantize",
      f16,
      join(tmp, "x.gguf"),
      "q4_k",
      "-t",
      "1",
      "--imatrix",
      imatrix,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/BAD_IMATRIX/);
    expect(r.stderr).toMatch(/blk\.0\.ffn_up\.weight has 100 values/);
  });

  it("fails on a file that is not an importance matrix", async () => {
    const imatrix = join(tmp, "junk.dat");
    writeFileSync(imatrix, Uint8Array.of(1, 0, 0, 0, 200, 0));
    const r = await minfer(
      "gguf",
      "quantize",
      f16,
      join(tmp, "y.gguf"),
      "q4_k",
      "-t",
      "1",
      "--imatrix",
      imatrix,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/TRUNCATED/);
  });
});
