// -ngl: parsing, fitting layers into free GPU memory, and what happens without a usable GPU.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { readGguf } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { chooseGpu, fitLayers, layerBytes } from "./run/gpu.js";
import { parseGpuLayers } from "./run/options.js";
import { fixtures, minfer } from "./test-helpers.js";

const STORIES = join(fixtures, "models/stories260K.gguf");

describe("-ngl", () => {
  it("takes a layer count, all or auto, and names the flag otherwise", () => {
    expect(parseGpuLayers(undefined)).toBeUndefined();
    expect(parseGpuLayers("all")).toBe("all");
    expect(parseGpuLayers("auto")).toBe("auto");
    expect(parseGpuLayers("0")).toBe(0);
    expect(parseGpuLayers("28")).toBe(28);
    for (const bad of ["x", "-1", "1.5", ""])
      expect(() => parseGpuLayers(bad)).toThrow(/-ngl must be a layer count \(0 or more\), all or auto/);
  });

  it("fits the embeddings, then blocks with their K/V, then the output head with the last block", () => {
    const sizes = { blocks: [100, 100, 100], head: 50, embd: 10, kvPerLayer: 5 };
    // reserve 20 + embd 10 = 30; each block 105; the last one also brings the head (155).
    expect(fitLayers(sizes, 134, 20)).toBe(0);
    expect(fitLayers(sizes, 135, 20)).toBe(1);
    expect(fitLayers(sizes, 240, 20)).toBe(2);
    expect(fitLayers(sizes, 394, 20)).toBe(2);
    expect(fitLayers(sizes, 395, 20)).toBe(3);
  });

  it.skipIf(!existsSync(STORIES))("counts each block's bytes from the file", async () => {
    const file = await readGguf(STORIES);
    const s = layerBytes(file, 64);
    expect(s.blocks.length).toBe(5);
    const total = file.tensors.reduce((a, t) => a + t.byteSize, 0);
    expect(s.blocks.reduce((a, b) => a + b, 0) + s.head + s.embd).toBe(total);
    // K and V rows of nHeadKv × headDim elements per cell, at the KV cache's own element size.
    const { architecture } = await import("@minfer/models");
    const h = architecture(file.metadata.architecture).loadHparams(file.metadata);
    const row = h.nHeadKv * h.headDimK + h.nHeadKv * h.headDimV;
    expect(s.kvPerLayer).toBe(64 * row * 2);
    expect(layerBytes(file, 64, "f32").kvPerLayer).toBe(64 * row * 4);
    expect(layerBytes(file, 64, "q8_0").kvPerLayer).toBe((64 * row * 34) / 32);
  });

  it.skipIf(!existsSync(STORIES))(
    "without a usable GPU: auto runs on the CPU and says why; a count is an error",
    async () => {
      const { backend } = await import("@minfer/backend-cuda");
      if (backend.score() > 0) return; // a GPU machine: nothing to check here
      const file = await readGguf(STORIES);
      const auto = await chooseGpu(file, {}, false);
      expect(auto.runtime).toBeUndefined();
      expect(auto.note).toMatch(/^cpu only \(no usable GPU: /);
      expect((await chooseGpu(file, { gpuLayers: 0 }, false)).note).toBe("cpu only (-ngl 0)");
      await expect(chooseGpu(file, { gpuLayers: 3 }, false)).rejects.toMatchObject({
        code: "BAD_VALUE",
        message: expect.stringMatching(/^-ngl 3: no usable CUDA GPU .*use -ngl 0 for the CPU only$/),
      });
      const r = await minfer("run", "-m", STORIES, "-p", "Once", "-n", "2", "-ngl", "all");
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/-ngl all: no usable CUDA GPU/);
    },
  );
});
