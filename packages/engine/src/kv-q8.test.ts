import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { synthesizeModel, writeGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { Model } from "./model.js";
import { maxAbsDiff } from "./test-helpers.js";

// A Q8_0 KV cache on a model with 64-wide heads (the synth preset "small", random weights).
describe("Q8_0 KV cache", () => {
  let dir: string;
  let runtime: DeviceRuntime;
  let model: Model;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "minfer-kvq8-"));
    const path = join(dir, "small.gguf");
    const m = synthesizeModel({ preset: "small", arch: "llama", type: "f32", seed: 5 });
    await writeGguf(path, m.metadata, m.tensors);
    runtime = await cpuBackend.devices()[0]!.init({ threads: 2 });
    model = await Model.load(path, { runtime });
  });
  afterAll(() => {
    model?.dispose();
    runtime?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it("gives logits close to an F32 cache's, over a prefill and decode steps", async () => {
    const prompt = Array.from({ length: 40 }, (_, i) => (i * 37) % 259);
    const run = async (kvDtype: "f32" | "q8_0") => {
      const ctx = new Context(model, { nCtx: 64, kvDtype });
      try {
        const out = [await ctx.eval(prompt)];
        for (const t of [5, 77, 130]) out.push(await ctx.eval([t]));
        return out;
      } finally {
        ctx.dispose();
      }
    };
    const [f32, q8] = [await run("f32"), await run("q8_0")];
    for (let i = 0; i < f32.length; i++) {
      const scale = Math.max(...f32[i]!.map(Math.abs));
      const d = maxAbsDiff(f32[i]!, q8[i]!);
      // Q8_0 keeps ~2 significant digits per element: close, but not equal.
      expect(d).toBeGreaterThan(0);
      expect(d).toBeLessThan(0.02 * scale);
    }
  });
});
