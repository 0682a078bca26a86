import { DType } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { ModelError } from "./errors.js";
import * as llama from "./llama.js";
import * as qwen2 from "./qwen2.js";
import * as qwen3 from "./qwen3.js";
import { tinyModel } from "./test-helpers.js";

function caught(f: () => unknown): ModelError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelError);
    return e as ModelError;
  }
  throw new Error("expected a ModelError");
}

describe("loadTensors", () => {
  it.each([llama, qwen2, qwen3])("accepts the tiny $ARCH model", (mod) => {
    const { meta, infos } = tinyModel(mod.ARCH as "llama");
    const t = mod.loadTensors(mod.loadHparams(meta), infos);
    expect(t.tiedOutput).toBe(false);
    expect(t.byName.size).toBe(infos.length);
    expect(t.byName.get("blk.1.ffn_down.weight")).toEqual({
      name: "blk.1.ffn_down.weight",
      dtype: DType.F32,
      ne: [128, 64],
    });
  });

  it("names a missing tensor", () => {
    const { meta, infos } = tinyModel("qwen2");
    const e = caught(() =>
      qwen2.loadTensors(
        qwen2.loadHparams(meta),
        infos.filter((t) => t.name !== "blk.1.attn_k.bias"),
      ),
    );
    expect(e.code).toBe("MISSING_TENSOR");
    expect(e.details.tensor).toBe("blk.1.attn_k.bias");
    expect(e.message).toContain("blk.1.attn_k.bias");
  });

  it("qwen3 needs the per-head Q/K norms", () => {
    const { meta, infos } = tinyModel("qwen3");
    const e = caught(() =>
      qwen3.loadTensors(
        qwen3.loadHparams(meta),
        infos.filter((t) => t.name !== "blk.0.attn_q_norm.weight"),
      ),
    );
    expect(e.details.tensor).toBe("blk.0.attn_q_norm.weight");
  });

  it("names a misshapen tensor with both shapes", () => {
    const { meta, infos } = tinyModel("llama");
    const bad = infos.map((t) => (t.name === "blk.0.attn_k.weight" ? { ...t, dims: [64, 64] } : t));
    const e = caught(() => llama.loadTensors(llama.loadHparams(meta), bad));
    expect(e.code).toBe("BAD_SHAPE");
    expect(e.details).toMatchObject({ tensor: "blk.0.attn_k.weight", expected: [64, 32], got: [64, 64] });
    expect(e.message).toContain("blk.0.attn_k.weight");
    expect(e.message).toContain("[64, 64]");
    expect(e.message).toContain("[64, 32]");
  });

  it("refuses a norm weight that is not F32", () => {
    const { meta, infos } = tinyModel("llama");
    const bad = infos.map((t) => (t.name === "output_norm.weight" ? { ...t, type: DType.F16 } : t));
    const e = caught(() => llama.loadTensors(llama.loadHparams(meta), bad));
    expect(e.code).toBe("BAD_DTYPE");
    expect(e.details.tensor).toBe("output_norm.weight");
  });

  it("ties the output to the embeddings when output.weight is absent", () => {
    const { meta, infos } = tinyModel("llama");
    const hp = llama.loadHparams(meta);
    const t = llama.loadTensors(
      hp,
      infos.filter((x) => x.name !== "output.weight"),
    );
    expect(t.tiedOutput).toBe(true);
    const { graph, logits } = llama.buildGraph(hp, { nTokens: 2, nKv: 4, nOutputs: 1, tensors: t });
    const w = graph.tensors.filter((x) => x.kind === "weight").map((x) => x.name);
    expect(w).not.toContain("output.weight");
    expect(logits.node?.inputs[0]?.name).toBe("token_embd.weight");
  });
});
