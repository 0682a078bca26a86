// Weights of offloaded layers that the offload device cannot multiply stay on the main runtime:
// the fake GPU (the float64 reference device posing as one) refuses every product over Q8_0
// weights, so a Q8_0 model offloaded to it keeps those weights on the CPU, says so, and decodes as
// the CPU alone does.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { synthesizeModel, writeGguf } from "@minfer/gguf";
import { type DeviceRuntime, DType, Op } from "@minfer/ir";
import { argmax } from "@minfer/sampler";
import { referenceBackend } from "@minfer/scheduler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { Model } from "./model.js";
import { weightUnsupported } from "./weight-home.js";

describe("weights the offload device cannot multiply", () => {
  let cpu: DeviceRuntime;
  let gpu: DeviceRuntime;
  let dir: string;
  let path: string;
  beforeAll(async () => {
    cpu = await cpuBackend.devices()[0]!.init({ threads: 2 });
    const ref = referenceBackend({
      name: "fakegpu",
      type: "gpu",
      caps: { hostMemory: false, launchCostUs: 5 },
      supports: (q) => !((q.op === Op.MUL_MAT || q.op === Op.GET_ROWS) && q.inputs[0]!.dtype === DType.Q8_0),
    });
    gpu = await ref.devices()[0]!.init();
    dir = mkdtempSync(join(tmpdir(), "minfer-weight-home-"));
    path = join(dir, "q8.gguf");
    const m = synthesizeModel({ preset: "tiny", arch: "qwen2", type: "q8_0", seed: 3 });
    await writeGguf(path, m.metadata, m.tensors);
  });
  afterAll(() => {
    gpu?.dispose();
    cpu?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("names the dtype the device refuses, and asks nothing about float weights or vectors", () => {
    expect(weightUnsupported(gpu, "blk.0.ffn_up.weight", DType.Q8_0, [64, 128])).toBe(
      "fakegpu cannot multiply Q8_0 weights",
    );
    expect(weightUnsupported(gpu, "blk.0.ffn_up.weight", DType.Q4_0, [64, 128])).toBeUndefined();
    expect(weightUnsupported(gpu, "blk.0.attn_norm.weight", DType.F32, [64])).toBeUndefined();
    expect(weightUnsupported(cpu, "token_embd.weight", DType.Q8_0, [64, 128])).toBeUndefined();
  });

  it("keeps them on the CPU, lists them, and decodes as the CPU alone", async () => {
    const plain = await Model.load(path, { runtime: cpu });
    const model = await Model.load(path, { runtime: cpu, offload: { runtime: gpu, layers: 1 } });
    const a = new Context(model, { nCtx: 32 });
    const b = new Context(plain, { nCtx: 32 });
    try {
      const kept = new Set(model.weightsKept.map((k) => k.name));
      expect(kept.size).toBeGreaterThan(0);
      for (const k of model.weightsKept) {
        expect(k.dtype).toBe(DType.Q8_0);
        expect(k.reason).toBe("fakegpu cannot multiply Q8_0 weights");
        expect(k.name).toMatch(/^(blk\.0\.|token_embd)/);
      }
      for (const [name, w] of model.weights) {
        const onGpu = /^blk\.0\./.test(name) || name.startsWith("token_embd");
        const info = model.file.tensors.find((t) => t.name === name)!;
        const want = onGpu && info.type !== DType.Q8_0 ? "fakegpu" : "cpu";
        expect(`${name} ${w.buffer.device}`).toBe(`${name} ${want}`);
        expect(kept.has(name)).toBe(onGpu && info.type === DType.Q8_0);
      }
      const prompt = [1, 5, 9, 12];
      const la = await a.eval(prompt);
      const lb = await b.eval(prompt);
      expect(argmax(la)).toBe(argmax(lb));
      let d = 0;
      for (let i = 0; i < la.length; i++) d = Math.max(d, Math.abs(la[i]! - lb[i]!));
      expect(d).toBeLessThan(1e-3);
    } finally {
      a.dispose();
      b.dispose();
      model.dispose();
      plain.dispose();
    }
  });
});
