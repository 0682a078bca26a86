import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import type { Model } from "./model.js";
import { loadSynthetic, maxAbsDiff } from "./test-helpers.js";

// A Q8_0 KV cache on a model with 64-wide heads (the synth preset "small", random weights).
describe("Q8_0 KV cache", () => {
  let model: Model;
  let dispose: (() => void) | undefined;

  beforeAll(async () => {
    ({ model, dispose } = await loadSynthetic({ preset: "small", arch: "llama", type: "f32", seed: 5 }));
  });
  afterAll(() => dispose?.());

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
