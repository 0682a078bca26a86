// Model.load on crafted hostile models (issue 30): refused with a coded error before anything
// proportional to a hostile count is built.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { type GgufKV, GgufValueType, readGgufSync, writeGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { ModelError } from "@minfer/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model } from "./model.js";
import { STORIES } from "./test-helpers.js";

let runtime: DeviceRuntime;
let dir: string;

beforeAll(async () => {
  runtime = await cpuBackend.devices()[0]!.init({ threads: 1 });
  dir = mkdtempSync(join(tmpdir(), "minfer-hostile-"));
});
afterAll(() => {
  runtime?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** stories260K with `kv` replacing its metadata entry, written by @minfer/gguf's writer. */
async function storiesWith(name: string, kv: GgufKV): Promise<string> {
  const f = readGgufSync(STORIES);
  const bytes = new Uint8Array(readFileSync(STORIES));
  const base = f.parts[0]!.dataOffset;
  const tensors = f.tensors.map((t) => ({
    name: t.name,
    type: t.type,
    dims: t.dims,
    data: bytes.subarray(base + t.offset, base + t.offset + t.byteSize),
  }));
  const path = join(dir, `${name}.gguf`);
  await writeGguf(path, [...[...f.metadata.entries()].filter((x) => x.key !== kv.key), kv], tensors);
  return path;
}

async function refusal(path: string): Promise<{ e: ModelError; ms: number }> {
  const t0 = performance.now();
  try {
    (await Model.load(path, { runtime })).dispose();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelError);
    return { e: e as ModelError, ms: performance.now() - t0 };
  }
  throw new Error(`${path} loaded`);
}

describe("Model.load checks hyperparameters against the tensor table and bounds first", () => {
  it.each([2 ** 31, 2 ** 32 - 1])("block_count %d is MISSING_TENSOR at once", async (n) => {
    const path = await storiesWith(`blocks-${n}`, {
      key: "llama.block_count",
      type: GgufValueType.UINT32,
      value: n,
    });
    const heap = process.memoryUsage().heapUsed;
    const { e, ms } = await refusal(path);
    expect(e.code).toBe("MISSING_TENSOR");
    expect(e.details).toMatchObject({ tensor: "blk.5.attn_norm.weight", key: "llama.block_count" });
    expect(e.message).toContain(`llama.block_count is ${n} but the file has tensors for 5 blocks`);
    expect(ms).toBeLessThan(2000);
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 << 20);
  });

  it.each([
    ["rope.dimension_count", 9],
    ["rope.dimension_count", 10],
    ["context_length", 2 ** 31],
    ["attention.head_count_kv", 3],
  ])("llama.%s %d is BAD_KEY naming it", async (suffix, value) => {
    const key = `llama.${suffix}`;
    const { e } = await refusal(
      await storiesWith(`${suffix}-${value}`, { key, type: GgufValueType.UINT32, value }),
    );
    expect(e.code).toBe("BAD_KEY");
    expect(e.details.key).toBe(key);
    expect(e.message).toContain(String(value));
  });
});
