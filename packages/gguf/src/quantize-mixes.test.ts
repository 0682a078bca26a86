import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GgmlType } from "./ggml-types.js";
import { isQuantizable, type ModelFacts, QUANT_MIXES, tensorRole, useMoreBits } from "./quantize-mixes.js";
import { chooseTypes, llamaQuantTarget, quantTargetByName } from "./quantize-plan.js";

// What llama-quantize wrote for each mix, per synthetic model: made by
// scripts/fidelity/quantize-mixes-vectors.mjs from llama.cpp itself (see the file's "about").
interface Expected {
  readonly about: string;
  readonly models: Record<
    string,
    {
      readonly facts: ModelFacts;
      readonly tensors: [string, number[], "F16" | "F32"][];
      readonly mixes: Record<
        string,
        { fileType: number; most: string; other: Record<string, string>; vectors: string[] }
      >;
    }
  >;
}
const LLAMACPP: Expected = JSON.parse(
  readFileSync(new URL("./quantize-mixes.llamacpp.json", import.meta.url), "utf8"),
);

const isMatrix = (dims: readonly number[]) => dims.filter((d) => d > 1).length >= 2;

describe("llama.cpp's mixes, against llama-quantize's own choices", () => {
  for (const [id, model] of Object.entries(LLAMACPP.models)) {
    const tensors = model.tensors.map(([name, dims, type]) => ({ name, dims, type: GgmlType[type] }));
    for (const [run, want] of Object.entries(model.mixes)) {
      it(`${id} ${run}`, () => {
        const [mix, ...flags] = run.split(" ");
        const target = llamaQuantTarget(mix!, { pure: flags.includes("--pure") });
        expect(target.fileType).toBe(want.fileType);
        // The types chosen, whether or not minfer writes them all.
        const plan = chooseTypes(tensors, target, { ...model.facts, imatrix: flags.includes("--imatrix") });
        const got = new Map<string, string>();
        const expected = new Map<string, string>();
        for (const [i, t] of tensors.entries()) {
          if (!isMatrix(t.dims)) {
            expect(want.vectors).toContain(plan[i]!.to.name);
            continue;
          }
          got.set(t.name, plan[i]!.to.name);
          expected.set(t.name, want.other[t.name] ?? want.most);
        }
        expect(Object.fromEntries(got)).toEqual(Object.fromEntries(expected));
      });
    }
  }

  it("covers every mix on the models, and --pure on each", () => {
    const runs = Object.values(LLAMACPP.models).map((m) => Object.keys(m.mixes));
    for (const mix of QUANT_MIXES) {
      expect(runs.filter((r) => r.some((k) => k.split(" ")[0] === mix)).length).toBeGreaterThan(4);
    }
    for (const r of runs) expect(r.some((k) => k.endsWith("--pure"))).toBe(true);
  });
});

describe("the mixes' building blocks", () => {
  it("useMoreBits is llama.cpp's use_more_bits", () => {
    // 28 layers: n/8 = 3, 7n/8 = 24, and (i − 3) % 3 == 2 between.
    const picked = Array.from({ length: 28 }, (_, i) => i).filter((i) => useMoreBits(i, 28));
    expect(picked).toEqual([0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27]);
  });

  it("names the roles as llama.cpp matches them, first match wins", () => {
    expect(tensorRole("blk.3.attn_qkv.weight")).toBe("attn_v");
    expect(tensorRole("blk.3.attn_kv_b.weight")).toBe("attn_v");
    expect(tensorRole("blk.3.ffn_down_exps.weight")).toBe("ffn_down");
    expect(tensorRole("output.weight")).toBe("output");
    expect(tensorRole("token_embd.weight")).toBe("token_embd");
    expect(tensorRole("blk.0.attn_k_norm.weight")).toBe("other");
  });

  it("leaves vectors, norms and MoE routers alone", () => {
    expect(isQuantizable("blk.0.ffn_gate_inp.weight", [256, 8])).toBe(false);
    expect(isQuantizable("blk.0.attn_norm.weight", [256])).toBe(false);
    expect(isQuantizable("blk.0.attn_q.weight", [256, 1])).toBe(false);
    expect(isQuantizable("blk.0.attn_q.weight", [256, 256])).toBe(true);
    expect(isQuantizable("blk.0.time_mix_w1.weight", [256, 256])).toBe(false);
  });

  it("synth's names: mixes that are not type names; type names stay plain there", () => {
    expect(quantTargetByName("q3_k_m").recipe).toBe("Q3_K_M");
    expect(quantTargetByName("q4_0").recipe).toBeUndefined();
    expect(llamaQuantTarget("q4_0").recipe).toBe("Q4_0");
    expect(llamaQuantTarget("q4_k").recipe).toBeUndefined();
    expect(llamaQuantTarget("q4_k_m", { pure: true })).toMatchObject({ name: "Q4_K_M", fileType: 15 });
    expect(llamaQuantTarget("q4_k_m", { pure: true }).recipe).toBeUndefined();
  });
});
