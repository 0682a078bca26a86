import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { copyFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fixturesDir } from "./fixtures-dir.js";
import {
  GgufError,
  mergeGguf,
  planSplit,
  readGguf,
  readGgufSync,
  readTensorData,
  SPLIT_KEYS,
  splitGguf,
} from "./index.js";

const source = join(fixturesDir(), "models/stories260K.gguf");
const tmp = mkdtempSync(join(tmpdir(), "minfer-gguf-split-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("split and merge", () => {
  it("plans parts by tensor count and by size", () => {
    const g = readGgufSync(source);
    expect(planSplit(g.tensors, { maxTensors: 20 }).map((p) => p.length)).toEqual([20, 20, 8]);
    const bySize = planSplit(g.tensors, { maxBytes: 300_000 });
    for (const part of bySize) {
      const bytes = part.reduce((a, t) => a + t.byteSize, 0);
      expect(part.length === 1 || bytes <= 300_000).toBe(true);
    }
    expect(bySize.flat().map((t) => t.name)).toEqual(g.tensors.map((t) => t.name));
    expect(() => planSplit(g.tensors, {})).toThrow(GgufError);
  });

  it("reads a split model from its first part", async () => {
    const g = await readGguf(source);
    const paths = await splitGguf(g, join(tmp, "m"), { maxTensors: 20 });
    const whole = await readGguf(paths[0]!);
    expect(whole.parts.length).toBe(3);
    expect(whole.tensors.map((t) => t.name)).toEqual(g.tensors.map((t) => t.name));
    expect(whole.tensors.map((t) => t.part)).toEqual(g.tensors.map((_, i) => (i < 20 ? 0 : i < 40 ? 1 : 2)));
    expect(whole.metadata.architecture).toBe("llama");
    expect(whole.metadata.integer(SPLIT_KEYS.count)).toBe(3);
    // Later parts carry only the split keys.
    expect([...whole.parts[1]!.metadata.keys()]).toEqual([
      SPLIT_KEYS.index,
      SPLIT_KEYS.count,
      SPLIT_KEYS.tensorCount,
    ]);
    const last = g.tensors.at(-1)!;
    expect(await readTensorData(whole, last.name)).toEqual(await readTensorData(g, last.name));

    await mergeGguf(whole, join(tmp, "merged.gguf"));
    expect(Buffer.compare(readFileSync(join(tmp, "merged.gguf")), readFileSync(source))).toBe(0);
  });

  it("refuses a later part, a missing part and a part from another split", async () => {
    const g = await readGguf(source);
    const paths = await splitGguf(g, join(tmp, "r"), { maxTensors: 20 });
    await expect(readGguf(paths[1]!)).rejects.toMatchObject({ code: "BAD_SPLIT" });

    const other = await splitGguf(g, join(tmp, "o"), { maxTensors: 30 });
    await copyFile(other[1]!, join(tmp, "x-00002-of-00002.gguf"));
    await copyFile(paths[0]!, join(tmp, "x-00001-of-00002.gguf"));
    await expect(readGguf(join(tmp, "x-00001-of-00002.gguf"))).rejects.toMatchObject({ code: "BAD_SPLIT" });

    await rm(paths[2]!);
    await expect(readGguf(paths[0]!)).rejects.toMatchObject({ code: "IO_ERROR" });
  });
});
