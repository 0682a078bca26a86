// Layer offload: the first N blocks (and their K/V) on a second device, the rest on the CPU. The
// second device here is the float64 reference device posing as a GPU (no host memory, so the
// weights are uploaded in runs), which checks the placement, the per-device K/V buffers and the
// splits without a GPU; the CUDA run of the same is scripts/device/cuda-fidelity.ts.
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { readGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { argmax } from "@minfer/sampler";
import { referenceBackend } from "@minfer/scheduler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { greedy } from "./generate.js";
import { Model } from "./model.js";
import { Placement } from "./placement.js";
import { haveStories, STORIES } from "./test-helpers.js";

describe.skipIf(!haveStories)("offloading layers to a second device", () => {
  let cpu: DeviceRuntime;
  let gpu: DeviceRuntime;
  let plain: Model;
  beforeAll(async () => {
    cpu = await cpuBackend.devices()[0]!.init({ threads: 2 });
    const ref = referenceBackend({
      name: "fakegpu",
      type: "gpu",
      caps: { hostMemory: false, launchCostUs: 5 },
    });
    gpu = await ref.devices()[0]!.init();
    plain = await Model.load(STORIES, { runtime: cpu });
  });
  afterAll(() => {
    plain?.dispose();
    gpu?.dispose();
    cpu?.dispose();
  });

  it("places blocks, K/V and splits by layer and decodes as the CPU alone does", async () => {
    const n = plain.hparams.nLayer;
    const model = await Model.load(STORIES, { runtime: cpu, offload: { runtime: gpu, layers: 2 } });
    const a = new Context(model, { nCtx: 64 });
    const b = new Context(plain, { nCtx: 64 });
    try {
      expect(model.placement.describe()).toBe(
        `layers 0-1 on fakegpu, layers 2-${n - 1} and the output on cpu (2/${n} offloaded)`,
      );
      for (const [name, w] of model.weights) {
        const layer = /^blk\.(\d+)\./.exec(name);
        const want = name.startsWith("token_embd") || (layer && Number(layer[1]) < 2) ? "fakegpu" : "cpu";
        expect(`${name} ${w.buffer.device}`).toBe(`${name} ${want}`);
      }
      expect(a.assignment().splits.map((s) => s.device.name)).toEqual(["fakegpu", "cpu"]);
      const prompt = plain.tokenizer.encode("Once upon a time", { addSpecial: true });
      const la = await a.eval(prompt);
      const lb = await b.eval(prompt);
      expect(argmax(la)).toBe(argmax(lb));
      let d = 0;
      for (let i = 0; i < la.length; i++) d = Math.max(d, Math.abs(la[i]! - lb[i]!));
      expect(d).toBeLessThan(1e-3);
      a.clear();
      b.clear();
      expect(await greedy(a, prompt, 16)).toEqual(await greedy(b, prompt, 16));
    } finally {
      a.dispose();
      b.dispose();
      model.dispose();
    }
  });

  it("takes a header the caller already read instead of reading the file again", async () => {
    const file = await readGguf(STORIES);
    const m = await Model.load(STORIES, { runtime: cpu, file });
    try {
      expect(m.file).toBe(file);
    } finally {
      m.dispose();
    }
  });

  it("puts the output head there too when every block is offloaded, and refuses a bad layer count", async () => {
    const n = plain.hparams.nLayer;
    const p = new Placement(cpu, n, { runtime: gpu, layers: n });
    expect(p.head()).toBe(gpu);
    expect(p.weight("output.weight")).toBe(gpu);
    expect(p.describe()).toBe(`all ${n} layers and the output on fakegpu`);
    expect(p.runtimes()).toEqual([gpu, cpu]);
    expect(new Placement(cpu, n, { runtime: gpu, layers: 0 }).runtimes()).toEqual([cpu]);
    expect(() => new Placement(cpu, n, { runtime: gpu, layers: n + 1 })).toThrow(
      /offload.layers must be an integer in 0…/,
    );
    await expect(
      Model.load(STORIES, { runtime: cpu, offload: { runtime: cpu, layers: 1 } }),
    ).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });
});
