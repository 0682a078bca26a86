import { GgufMetadata, synthesizeLayout } from "@minfer/gguf";
import { Op } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { architecture } from "./registry.js";
import { synthLayout, synthShape } from "./synth.js";

/** Hparams, checked tensors and a 3-token graph of a tiny synthetic file of `arch`. */
function tiny(arch: string, keys: Parameters<typeof synthLayout>[1]["keys"] = []) {
  const layout = synthLayout(arch, { ...synthShape("tiny"), keys }, 259);
  const m = synthesizeLayout(layout, { type: "f32" });
  const mod = architecture(arch);
  const hp = mod.loadHparams(new GgufMetadata(m.metadata));
  const tensors = mod.loadTensors(
    hp,
    m.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type })),
  );
  const built = mod.buildGraph(hp, { nTokens: 3, nKv: 32, nOutputs: 1, tensors });
  return { mod, hp, tensors, ...built, names: built.graph.nodes.map((n) => n.name) };
}

describe("phi3, glm4, granite, olmo2 graphs", () => {
  it("phi3: Q/K/V and gate/up are row views of the fused weights; 3/4 of each head rotated", () => {
    const { hp, graph } = tiny("phi3");
    expect(hp.nRot).toBe(12); // of 16
    const q = graph.tensors.find((t) => t.name === "blk.0.attn_k.view")!;
    expect(q.viewOf?.name).toBe("blk.0.attn_qkv.weight");
    expect(q.viewOffset).toBe(64 * q.nb[1]); // after the 64 rows of Q
    const up = graph.tensors.find((t) => t.name === "blk.1.ffn_up.view")!;
    expect([up.ne[1], up.viewOffset / up.nb[1]]).toEqual([128, 128]);
    const rope = graph.nodes.find((n) => n.op === Op.ROPE)!;
    expect(rope.params.slice(0, 2)).toEqual([2, 12]); // NeoX, 12 dims
  });

  it("phi3: a sliding window shorter than the training context puts every layer in the windowed cache", () => {
    const { mod, hp, inputs } = tiny("phi3", [["attention.sliding_window", "u32", 24]]);
    expect(mod.kvLayers(hp).every((l) => l.group === "swa")).toBe(true);
    expect(Object.keys(inputs).sort()).toEqual(["cells_swa", "mask_swa", "out_ids", "positions", "tokens"]);
  });

  it("glm4: half of each head rotated in adjacent pairs, RMSNorms after attention and the feed-forward", () => {
    const { graph, names } = tiny("glm4");
    const rope = graph.nodes.find((n) => n.op === Op.ROPE)!;
    expect(rope.params.slice(0, 2)).toEqual([0, 8]);
    for (const n of ["post_attn_norm-0", "post_mlp_norm-1"]) expect(names).toContain(n);
  });

  it("granite: the four multipliers", () => {
    const { graph } = tiny("granite");
    const scales = graph.nodes.filter((n) => n.op === Op.SCALE).map((n) => [n.name, n.params[0]]);
    expect(scales).toContainEqual(["inp_scaled", 12]);
    expect(scales).toContainEqual(["attn_scaled-0", 0.22]);
    expect(scales).toContainEqual(["ffn_scaled-1", 0.22]);
    expect(scales).toContainEqual(["result_output", 1 / 8]);
    const attn = graph.nodes.find((n) => n.op === Op.ATTENTION)!;
    expect(attn.params[0]).toBe(0.015625);
  });

  it("olmo2: no pre-norms, Q and K normed over the whole projection", () => {
    const { graph, names } = tiny("olmo2");
    expect(names.some((n) => n.startsWith("attn_norm"))).toBe(false);
    const qNorm = graph.tensors.find((t) => t.name === "blk.0.attn_q_norm.weight")!;
    expect(qNorm.ne[0]).toBe(64); // nHead · headDim, not 16
    expect(names).toContain("Qcur_normed-0");
  });
});
