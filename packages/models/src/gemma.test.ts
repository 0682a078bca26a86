import { GgufMetadata, synthesizeLayout } from "@minfer/gguf";
import { DType, Op } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import * as gemma2 from "./gemma2.js";
import * as gemma3 from "./gemma3.js";
import { architecture } from "./registry.js";
import { synthLayout, synthShape } from "./synth.js";

/** Hparams and checked tensors of a tiny synthetic file of `arch` (nothing generated). */
function tiny(arch: string, nLayer = 6) {
  const layout = synthLayout(arch, { ...synthShape("tiny"), nLayer }, 259);
  const m = synthesizeLayout(layout, { type: "f32" });
  const mod = architecture(arch);
  const hp = mod.loadHparams(new GgufMetadata(m.metadata));
  const tensors = mod.loadTensors(
    hp,
    m.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type })),
  );
  return { mod, hp, tensors };
}

describe("gemma family graphs", () => {
  it("gemma2: even layers slide over their own cache, soft-caps in attention and on the logits, post-norms", () => {
    const { mod, hp, tensors } = tiny("gemma2");
    expect(mod.kvLayers(hp).map((l) => l.group)).toEqual(["swa", "full", "swa", "full", "swa", "full"]);
    expect(mod.slidingWindow(hp)).toBe(16);
    expect(tensors.tiedOutput).toBe(true);
    const { graph, inputs } = mod.buildGraph(hp, {
      nTokens: 3,
      nKv: 32,
      nOutputs: 1,
      nCtx: 64,
      swa: { nCtx: 48, nKv: 48 },
      tensors,
    });
    expect(Object.keys(inputs).sort()).toEqual([
      "cells",
      "cells_swa",
      "mask",
      "mask_swa",
      "out_ids",
      "positions",
      "tokens",
    ]);
    expect(inputs.mask_swa).toMatchObject({ dtype: DType.F32, ne: [48, 3, 1, 1] });
    // Layer 0's K/V live in the sliding-window cache (48 cells), layer 1's in the full one (64).
    expect(graph.tensors.find((t) => t.name === "k_cache-0")!.ne[1]).toBe(48);
    expect(graph.tensors.find((t) => t.name === "k_cache-1")!.ne[1]).toBe(64);
    const attn = graph.nodes.filter((n) => n.op === Op.ATTENTION);
    expect(attn.map((n) => n.inputs[3]!.name)).toEqual([
      "mask_swa",
      "mask",
      "mask_swa",
      "mask",
      "mask_swa",
      "mask",
    ]);
    // softcap 50 and the query scale 1/√headDim as the second and first parameter.
    expect(attn[0]!.params.slice(0, 2)).toEqual([1 / Math.sqrt(16), 50]);
    expect(graph.nodes.some((n) => n.op === Op.TANH)).toBe(true);
    expect(graph.nodes.filter((n) => n.op === Op.GEGLU)).toHaveLength(6);
    const names = graph.nodes.map((n) => n.name);
    for (const n of ["attn_post_norm-0", "ffn_post_norm-5", "inp_scaled"]) expect(names).toContain(n);
  });

  it("gemma3: one global layer in six with the file's RoPE base, the rest local with base 10000", () => {
    const hp = tiny("gemma3", 12).hp as gemma3.Gemma3Hparams;
    expect(gemma3.kvLayers(hp).filter((l) => l.group === "full").length).toBe(2);
    expect([5, 11].every((il) => !gemma3.isSliding(il))).toBe(true);
    expect(gemma3.kRope(hp, 0).params.freqBase).toBe(10000);
    expect(gemma3.kRope(hp, 5).params.freqBase).toBe(hp.ropeFreqBase);
  });

  it("gemma2 reads its keys with the documented defaults and refuses a bad one by name", () => {
    const layout = synthLayout("gemma2", { ...synthShape("tiny"), keys: [] }, 259);
    const kvs = layout.metadata.filter((kv) => !/softcapping|sliding_window/.test(kv.key));
    const hp = gemma2.loadHparams(new GgufMetadata(kvs));
    expect([hp.slidingWindow, hp.attnSoftcap, hp.finalSoftcap]).toEqual([4096, 50, 30]);
    const bad = new GgufMetadata([...kvs, { key: "gemma2.attn_logit_softcapping", type: 6, value: -1 }]);
    expect(() => gemma2.loadHparams(bad)).toThrow(/gemma2\.attn_logit_softcapping/);
  });
});
