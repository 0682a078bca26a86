import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { GgmlType, GgufValueType, synthesizeModel, writeGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { llama3RopeFreqs } from "@minfer/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { Model } from "./model.js";
import { maxAbsDiff } from "./test-helpers.js";

// Llama 3 RoPE scaling reaches a model two ways: `llama.rope.scaling.*` keys (minfer computes the
// frequency factors) or a `rope_freqs.weight` tensor (what llama.cpp's converter and `minfer
// convert` write, with no scaling keys). Both must give the same logits; neither may be ignored.
describe("llama3 RoPE frequency factors", () => {
  let dir: string;
  let runtime: DeviceRuntime;
  const scaling = [
    { key: "llama.rope.scaling.type", type: GgufValueType.STRING, value: "llama3" },
    { key: "llama.rope.scaling.factor", type: GgufValueType.FLOAT32, value: 8 },
    { key: "llama.rope.scaling.original_context_length", type: GgufValueType.UINT32, value: 256 },
    { key: "llama.rope.scaling.low_freq_factor", type: GgufValueType.FLOAT32, value: 1 },
    { key: "llama.rope.scaling.high_freq_factor", type: GgufValueType.FLOAT32, value: 4 },
  ];

  async function variant(name: string, keys: boolean, tensor: boolean): Promise<string> {
    const m = synthesizeModel({ preset: "tiny", arch: "llama", type: "f32", seed: 4 });
    const metadata = [...m.metadata, ...(keys || tensor ? scaling : [])];
    const tensors = [...m.tensors];
    if (tensor) {
      // The factors as llama.cpp's converter computes them, from the same keys.
      const path = join(dir, `${name}-probe.gguf`);
      await writeGguf(path, metadata, m.tensors);
      const probe = await Model.load(path, { runtime });
      const f = llama3RopeFreqs(probe.hparams);
      probe.dispose();
      tensors.push({
        name: "rope_freqs.weight",
        type: GgmlType.F32,
        dims: [f.length],
        data: new Uint8Array(f.buffer),
      });
    }
    const path = join(dir, `${name}.gguf`);
    await writeGguf(path, keys ? metadata : m.metadata, tensors);
    return path;
  }

  async function logits(path: string): Promise<Float32Array> {
    const model = await Model.load(path, { runtime });
    const ctx = new Context(model, { nCtx: 64 });
    try {
      await ctx.eval(Array.from({ length: 30 }, (_, i) => (i * 17 + 3) % 250));
      return Float32Array.from(await ctx.eval([42]));
    } finally {
      ctx.dispose();
      model.dispose();
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "minfer-ropefreqs-"));
    runtime = await cpuBackend.devices()[0]!.init({ threads: 2 });
  });
  afterAll(() => {
    runtime?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the keys and the tensor give the same logits; without either they differ", async () => {
    const fromKeys = await logits(await variant("keys", true, false));
    const fromTensor = await logits(await variant("tensor", false, true));
    const plain = await logits(await variant("plain", false, false));
    expect(maxAbsDiff(fromKeys, fromTensor)).toBeLessThan(1e-6);
    // Random weights give small logits (~0.1): the scaling moves them by ~1e-3, far above the
    // float rounding that separates the two ways.
    expect(maxAbsDiff(fromKeys, plain)).toBeGreaterThan(1e-4);
  });

  it("a rope_freqs.weight of the wrong length is refused, naming it", async () => {
    const m = synthesizeModel({ preset: "tiny", arch: "llama", type: "f32", seed: 4 });
    const path = join(dir, "bad.gguf");
    const f = new Float32Array(3).fill(1);
    await writeGguf(path, m.metadata, [
      ...m.tensors,
      { name: "rope_freqs.weight", type: GgmlType.F32, dims: [3], data: new Uint8Array(f.buffer) },
    ]);
    await expect(Model.load(path, { runtime })).rejects.toMatchObject({
      code: "BAD_SHAPE",
      message: /rope_freqs\.weight/,
    });
  });
});
