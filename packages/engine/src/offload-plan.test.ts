// The offload plan (-ngl auto): block sizes from the file, K/V at the context's element type, the
// activation arena from the scheduler's allocator — checked against what a loaded model and a
// Context really allocate on a device (the float64 reference device posing as a GPU).
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { readGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { architecture } from "@minfer/models";
import { referenceBackend } from "@minfer/scheduler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { Model } from "./model.js";
import { fitLayers, layerSizes, planOffload } from "./offload-plan.js";
import { STORIES } from "./test-helpers.js";

describe("fitLayers", () => {
  it("fits the embeddings, then blocks with their K/V, then the output head with the last block", () => {
    const sizes = { blocks: [100, 100, 100], head: 50, embd: 10, kvPerLayer: 5, kvBlocks: [5, 5, 5] };
    // reserve 20 + embd 10 = 30; each block 105; the last one also brings the head (155).
    expect(fitLayers(sizes, 134, 20)).toBe(0);
    expect(fitLayers(sizes, 135, 20)).toBe(1);
    expect(fitLayers(sizes, 240, 20)).toBe(2);
    expect(fitLayers(sizes, 394, 20)).toBe(2);
    expect(fitLayers(sizes, 395, 20)).toBe(3);
  });
});

describe("planOffload", () => {
  let cpu: DeviceRuntime;
  beforeAll(async () => {
    cpu = await cpuBackend.devices()[0]!.init({ threads: 2 });
  });
  afterAll(() => cpu?.dispose());

  it("counts each block's bytes from the file and K/V at the cache's element size", async () => {
    const file = await readGguf(STORIES);
    const hp = architecture(file.metadata.architecture).loadHparams(file.metadata);
    const s = layerSizes(file, hp, 64);
    expect(s.blocks.length).toBe(5);
    const total = file.tensors.reduce((a, t) => a + t.byteSize, 0);
    expect(s.blocks.reduce((a, b) => a + b, 0) + s.head + s.embd).toBe(total);
    const row = hp.nHeadKv * hp.headDimK + hp.nHeadKv * hp.headDimV;
    expect(s.kvPerLayer).toBe(64 * row * 2);
    expect(layerSizes(file, hp, 64, "f32").kvPerLayer).toBe(64 * row * 4);
  });

  it("predicts the bytes a model and a Context then take on the device, and fits by them", async () => {
    const file = await readGguf(STORIES);
    const ref = referenceBackend({
      name: "fakegpu",
      type: "gpu",
      caps: { hostMemory: false, launchCostUs: 5 },
      memoryBytes: 2 ** 30,
    });
    const gpuDevice = ref.devices()[0]!;
    const options = {
      device: gpuDevice,
      host: cpu.device,
      nCtx: 256,
      nUbatch: 64,
      kvDtype: "f32",
      overhead: 0,
    };
    const plan = planOffload(file, options);
    expect(plan.layers).toBe(plan.nLayer);
    expect(plan.arenaBytes).toBeGreaterThan(0);
    const gpu = await gpuDevice.init();
    try {
      const model = await Model.load(STORIES, {
        runtime: cpu,
        file,
        offload: { runtime: gpu, layers: plan.nLayer },
      });
      const ctx = new Context(model, { nCtx: 256, nUbatch: 64, kvDtype: "f32" });
      const used = gpuDevice.memory().total - gpuDevice.memory().free;
      const s = plan.sizes;
      const predicted =
        s.embd + s.blocks.reduce((a, b) => a + b, 0) + s.head + plan.nLayer * s.kvPerLayer + plan.arenaBytes;
      // Everything on the device was foreseen, to the byte.
      expect(used).toBe(predicted);
      ctx.dispose();
      model.dispose();
      // With room for all but the last block (and the head that goes with it), one block fewer fits.
      const lastBlock = s.blocks.at(-1)! + s.kvPerLayer + s.head;
      expect(planOffload(file, { ...options, free: predicted }).layers).toBe(plan.nLayer);
      expect(planOffload(file, { ...options, free: predicted - 1 }).layers).toBe(plan.nLayer - 1);
      expect(planOffload(file, { ...options, free: predicted - lastBlock }).layers).toBe(plan.nLayer - 1);
      expect(planOffload(file, { ...options, free: plan.arenaBytes + s.embd - 1 }).layers).toBe(0);
    } finally {
      gpu.dispose();
    }
  });

  it("sizes the arena for the worst case asked: a larger micro-batch needs a larger one", async () => {
    const file = await readGguf(STORIES);
    const gpuDevice = referenceBackend({ name: "fakegpu", type: "gpu", memoryBytes: 2 ** 30 }).devices()[0]!;
    const at = (nUbatch: number) =>
      planOffload(file, { device: gpuDevice, host: cpu.device, nCtx: 256, nUbatch }).arenaBytes;
    expect(at(128)).toBeGreaterThan(at(16));
    expect(() => planOffload(file, { device: gpuDevice, host: cpu.device, kvDtype: "q9" })).toThrow(
      /kvDtype/,
    );
  });
});
