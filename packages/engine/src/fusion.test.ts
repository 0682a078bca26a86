// The decode graphs are fused (RMS_NORM_MUL, SWIGLU, MUL_MAT_MULTI, MUL_MAT_ADD) by default: fewer
// nodes, and the same logits bit for bit as the unfused graph on the CPU.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context, KV_BUCKET } from "./context.js";
import { greedy } from "./generate.js";
import type { Model } from "./model.js";
import { haveStories, loadStories } from "./test-helpers.js";

describe.skipIf(!haveStories)("fused decode graphs", () => {
  let model: Model;
  let dispose: () => void;
  beforeAll(async () => {
    ({ model, dispose } = await loadStories());
  });
  afterAll(() => dispose?.());

  it("have fewer nodes and give the unfused logits exactly", async () => {
    const plain = new Context(model, { nCtx: 64, fuse: false });
    const fused = new Context(model, { nCtx: 64 });
    try {
      const ops = (c: Context) =>
        c.graphs
          .get({ kind: "decode", nTokens: 1, nKv: KV_BUCKET, nOutputs: 1 })
          .graph.nodes.map((n) => n.op);
      const [a, b] = [ops(plain), ops(fused)];
      expect(b.length).toBeLessThan(a.length);
      expect(b).toContain(32); // RMS_NORM_MUL
      expect(b).toContain(33); // MUL_MAT_MULTI
      // The attention-output and FFN-down products with their residual ADD: one per layer each.
      const layers = model.hparams.nLayer;
      expect(b.filter((op) => op === 34).length).toBe(2 * layers); // MUL_MAT_ADD
      const prompt = model.tokenizer.encode("Once upon a time", { addSpecial: true });
      expect(Array.from(await fused.eval(prompt))).toEqual(Array.from(await plain.eval(prompt)));
      plain.clear();
      fused.clear();
      expect(await greedy(fused, prompt, 24)).toEqual(await greedy(plain, prompt, 24));
    } finally {
      plain.dispose();
      fused.dispose();
    }
  });
});
