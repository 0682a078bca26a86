// The decode graphs are fused (RMS_NORM_MUL, SWIGLU, MUL_MAT_MULTI with or without addends,
// MUL_MAT_ADD) by default: fewer nodes, and the same logits bit for bit as the unfused graph on the
// CPU.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { readGguf } from "@minfer/gguf";
import { Op } from "@minfer/ir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { greedy } from "./generate.js";
import type { Model } from "./model.js";
import { FIXTURES, haveStories, loadStories, loadSynthetic } from "./test-helpers.js";

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
      const ops = (c: Context) => c.assignment().graph.nodes.map((n) => n.op);
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

const QWEN2_VOCAB = join(FIXTURES, "vocab/ggml-vocab-qwen2.gguf");

// qwen2's q/k/v products each have a bias ADD: the fused graph folds them into MUL_MAT_MULTI's
// addends (inputs x, wq, wk, wv, bq, bk, bv), one node per layer and no ADD after it.
describe.skipIf(!existsSync(QWEN2_VOCAB))(
  "fused decode graphs with q/k/v biases (tiny synthetic qwen2)",
  () => {
    let model: Model;
    let dispose: (() => void) | undefined;
    beforeAll(async () => {
      const vocab = (await readGguf(QWEN2_VOCAB)).metadata;
      ({ model, dispose } = await loadSynthetic({
        preset: "tiny",
        arch: "qwen2",
        type: "q8_0",
        vocab,
        seed: 7,
      }));
    });
    afterAll(() => dispose?.());

    it("fold the biases into MUL_MAT_MULTI and give the unfused logits exactly", async () => {
      const plain = new Context(model, { nCtx: 64, fuse: false });
      const fused = new Context(model, { nCtx: 64 });
      try {
        const graph = (c: Context) => c.assignment().graph;
        const layers = model.hparams.nLayer;
        // Unfused: three bias ADDs per layer read the q/k/v products.
        const biasAdds = (c: Context) =>
          graph(c).nodes.filter(
            (n) => n.op === Op.ADD && n.inputs[0]!.node?.op === Op.MUL_MAT && n.inputs[1]!.kind === "weight",
          ).length;
        expect(biasAdds(plain)).toBe(3 * layers);
        const g = graph(fused);
        const multis = g.nodes.filter((n) => n.op === Op.MUL_MAT_MULTI);
        const withAddends = multis.filter((n) => n.inputs.length === 7);
        expect(withAddends.length).toBe(layers);
        for (const n of withAddends) {
          expect(n.inputs.slice(4).map((t) => t.name.replace(/^blk\.\d+\./, ""))).toEqual([
            "attn_q.bias",
            "attn_k.bias",
            "attn_v.bias",
          ]);
          expect(n.outputs.every((t) => t.dtype === 0)).toBe(true);
        }
        // No ADD reads a MUL_MAT_MULTI's output (the q/k/v biases are in the fused node).
        expect(
          g.nodes.filter((n) => n.op === Op.ADD && n.inputs.some((t) => t.node?.op === Op.MUL_MAT_MULTI)),
        ).toEqual([]);
        expect(biasAdds(fused)).toBe(0);
        const prompt = model.tokenizer.encode("Once upon a time, in a land far away", { addSpecial: true });
        expect(Array.from(await fused.eval(prompt))).toEqual(Array.from(await plain.eval(prompt)));
        plain.clear();
        fused.clear();
        expect(await greedy(fused, prompt, 16)).toEqual(await greedy(plain, prompt, 16));
      } finally {
        plain.dispose();
        fused.dispose();
      }
    });
  },
);
