import { describe, expect, it } from "vitest";
import { GgufError } from "./errors.js";
import { GgmlType, ggmlTypeInfo } from "./ggml-types.js";
import { useMoreBits } from "./quantize-mixes.js";
import { planQuantization, quantTargetByName, recipeTypes } from "./quantize-plan.js";
import { synthesizeModel } from "./synth/synth.js";

// Layers of a 28-layer model whose attn_v / ffn_down get Q6_K in Q4_K_M: i < 3, i ≥ 24, and
// (i − 3) % 3 == 2 between (llama.cpp's use_more_bits with n/8 = 3, 7n/8 = 24).
const Q6_LAYERS_28 = [0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27];

describe("Q4_K_M recipe", () => {
  it("useMoreBits is llama.cpp's use_more_bits", () => {
    const picked = Array.from({ length: 28 }, (_, i) => i).filter((i) => useMoreBits(i, 28));
    expect(picked).toEqual(Q6_LAYERS_28);
    // 32 layers: n/8 = 4, 7n/8 = 28.
    expect(Array.from({ length: 32 }, (_, i) => i).filter((i) => useMoreBits(i, 32))).toEqual([
      0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31,
    ]);
  });

  it("gives a qwen2-7b-shaped model its per-tensor types and file type 15", () => {
    const model = synthesizeModel({ preset: "qwen2-7b", type: "q4_k_m" });
    const fileType = model.metadata.find((kv) => kv.key === "general.file_type");
    expect(fileType?.value).toBe(15);
    const typeOf = new Map(model.tensors.map((t) => [t.name, t.type]));
    expect(typeOf.get("output.weight")).toBe(GgmlType.Q6_K);
    expect(typeOf.get("token_embd.weight")).toBe(GgmlType.Q4_K);
    expect(typeOf.get("output_norm.weight")).toBe(GgmlType.F32);
    for (let i = 0; i < 28; i++) {
      const more = Q6_LAYERS_28.includes(i) ? GgmlType.Q6_K : GgmlType.Q4_K;
      expect(typeOf.get(`blk.${i}.attn_v.weight`), `layer ${i} attn_v`).toBe(more);
      expect(typeOf.get(`blk.${i}.ffn_down.weight`), `layer ${i} ffn_down`).toBe(more);
      for (const t of ["attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"]) {
        expect(typeOf.get(`blk.${i}.${t}.weight`), `layer ${i} ${t}`).toBe(GgmlType.Q4_K);
      }
      expect(typeOf.get(`blk.${i}.attn_norm.weight`)).toBe(GgmlType.F32);
      expect(typeOf.get(`blk.${i}.attn_q.bias`)).toBe(GgmlType.F32);
    }
  });

  it("plans a file's tensors the same way, with the row-size fallback", () => {
    const f16 = GgmlType.F16;
    const tensors = [
      { name: "token_embd.weight", type: f16, dims: [512, 100] },
      { name: "blk.0.attn_v.weight", type: f16, dims: [512, 128] },
      { name: "blk.1.attn_v.weight", type: f16, dims: [512, 128] },
      { name: "blk.0.ffn_down.weight", type: f16, dims: [1024, 512] },
      { name: "blk.1.ffn_down.weight", type: f16, dims: [96, 512] },
      { name: "blk.0.attn_qkv.weight", type: f16, dims: [512, 1536] },
      { name: "output_norm.weight", type: GgmlType.F32, dims: [512] },
      { name: "output.weight", type: f16, dims: [512, 100] },
    ];
    const plan = planQuantization(tensors, quantTargetByName("Q4_K_m"));
    // Two layers: use_more_bits(i, 2) holds for ffn_down of layer 1 only (n/8 = 0, 7n/8 = 1).
    // attn_qkv counts with attn_v (three of them, layer order: qkv.0, v.0, v.1) and follows
    // attn_v's rule, Q6_K for the third only: llama-quantize's files show it (a Q5_K rule for
    // attn_qkv exists in llama.cpp's source but is never reached).
    expect(plan.map((p) => p.to.name)).toEqual([
      "Q4_K",
      "Q4_K",
      "Q6_K",
      "Q4_K",
      "Q8_0",
      "Q4_K",
      "F32",
      "Q6_K",
    ]);
    expect(plan[4]!.note).toMatch(/rows of 96 .* Q6_K block size 256; using Q8_0/);
    // A plain type is still one type for every matrix.
    expect(new Set(recipeTypes(tensors, quantTargetByName("q4_k")).map((t) => t.name))).toEqual(
      new Set(["Q4_K"]),
    );
    expect(planQuantization(tensors, ggmlTypeInfo(GgmlType.Q4_K))[1]!.to.name).toBe("Q4_K");
  });

  it("names the targets it knows when one is unknown", () => {
    let error: unknown;
    try {
      quantTargetByName("q4_k_x");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GgufError);
    expect((error as GgufError).code).toBe("UNKNOWN_TENSOR_TYPE");
    expect((error as GgufError).message).toMatch(/mixes: .*Q4_K_M/);
    expect(quantTargetByName("q8_0").fileType).toBe(7);
    expect(quantTargetByName("q4_k").fileType).toBe(14);
  });
});
