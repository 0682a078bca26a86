import { GgufMetadata } from "@minfer/gguf";
import { DType, Op } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { CANDIDATE_LOGITS_OUTPUT, CANDIDATES_OUTPUT } from "./graph-inputs.js";
import * as llama from "./llama.js";
import * as qwen2 from "./qwen2.js";
import * as qwen3 from "./qwen3.js";
import { tinyModel } from "./test-helpers.js";

describe.each([llama, qwen2, qwen3])("$ARCH buildGraph", (mod) => {
  const { meta, infos } = tinyModel(mod.ARCH as "llama");
  const hp = mod.loadHparams(meta);
  const tensors = mod.loadTensors(hp, infos);

  it("has the documented inputs and logits [nVocab, nOutputs]", () => {
    const { graph, inputs, logits } = mod.buildGraph(hp, { nTokens: 5, nKv: 8, nOutputs: 2, tensors });
    expect(logits.dtype).toBe(DType.F32);
    expect(logits.ne).toEqual([hp.nVocab, 2, 1, 1]);
    expect(graph.outputs).toEqual([logits]);
    expect(inputs.tokens.ne).toEqual([5, 1, 1, 1]);
    expect(inputs.positions.dtype).toBe(DType.I32);
    expect(inputs.cells.ne).toEqual([5, 1, 1, 1]);
    expect(inputs.mask).toMatchObject({ dtype: DType.F32, ne: [8, 5, 1, 1] });
    expect(inputs.out_ids).toMatchObject({ dtype: DType.I32, ne: [2, 1, 1, 1] });
    expect(inputs.rope_freqs).toBeUndefined();
    // Every weight the graph reads is one loadTensors checked.
    for (const t of graph.tensors.filter((x) => x.kind === "weight"))
      expect(tensors.byName.has(t.name)).toBe(true);
    const states = graph.tensors.filter((x) => x.kind === "state").map((x) => x.name);
    expect(states).toEqual(["k_cache-0", "v_cache-0", "k_cache-1", "v_cache-1"]);
    const attn = graph.nodes.filter((n) => n.op === Op.ATTENTION);
    expect(attn.map((n) => n.name)).toEqual(["kqv_out-0", "kqv_out-1"]);
  });

  it("outputs the candidate ids (TOP_K of the logits) only when asked, and refuses a bad count", () => {
    const o = { nTokens: 3, nKv: 8, nOutputs: 2, tensors };
    const { graph, logits, candidates, candidateLogits } = mod.buildGraph(hp, { ...o, candidates: 4 });
    expect(candidates).toMatchObject({ name: CANDIDATES_OUTPUT, dtype: DType.I32, ne: [4, 2, 1, 1] });
    expect(candidateLogits).toMatchObject({
      name: CANDIDATE_LOGITS_OUTPUT,
      dtype: DType.F32,
      ne: [1, 4, 2, 1],
    });
    expect(graph.outputs).toEqual([logits, candidates, candidateLogits]);
    expect(candidates!.node!.op).toBe(Op.TOP_K);
    expect(candidates!.node!.inputs[0]).toBe(logits);
    // the logits gathered by the ids: rows of one element, a plane per logits row
    expect(candidateLogits!.node!.op).toBe(Op.GET_ROWS);
    expect(candidateLogits!.node!.inputs[0]).toMatchObject({ ne: [1, hp.nVocab, 2, 1] });
    expect(candidateLogits!.node!.inputs[0]!.viewOf).toBe(logits);
    expect(candidateLogits!.node!.inputs[1]).toBe(candidates);
    const none = mod.buildGraph(hp, { ...o, candidates: 0 });
    expect(none.candidates).toBeUndefined();
    expect(none.candidateLogits).toBeUndefined();
    for (const bad of [-1, 1.5, hp.nVocab + 1])
      expect(() => mod.buildGraph(hp, { ...o, candidates: bad })).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
  });

  it("uses the architecture's RoPE layout and features", () => {
    const { graph } = mod.buildGraph(hp, { nTokens: 1, nKv: 4, nOutputs: 1, nCtx: 16, kvDtype: DType.F16 });
    const rope = graph.nodes.find((n) => n.op === Op.ROPE)!;
    expect(rope.params[0]).toBe(mod.ARCH === "llama" ? 0 : 2);
    const names = graph.nodes.map((n) => n.name);
    expect(names.includes("Qcur_b-0")).toBe(mod.ARCH === "qwen2");
    expect(names.includes("Qcur_normed-0")).toBe(mod.ARCH === "qwen3");
    const k = graph.tensors.find((x) => x.name === "k_cache-0")!;
    expect(k).toMatchObject({ dtype: DType.F16, ne: [hp.nHeadKv * hp.headDimK, 16, 1, 1] });
  });
});

describe("qwen3 head size", () => {
  it("is key_length, decoupled from nEmbd / nHead", () => {
    const { kvs } = tinyModel("qwen3");
    const meta = new GgufMetadata(
      kvs.map((kv) =>
        kv.key.endsWith(".key_length") ||
        kv.key.endsWith(".value_length") ||
        kv.key.endsWith(".dimension_count")
          ? { ...kv, value: 32 }
          : kv,
      ),
    );
    const hp = qwen3.loadHparams(meta);
    expect(hp.headDimK).toBe(32);
    const { graph, logits } = qwen3.buildGraph(hp, { nTokens: 3, nKv: 4, nOutputs: 3 });
    expect(graph.tensors.find((t) => t.name === "blk.0.attn_q.weight")!.ne).toEqual([64, 128, 1, 1]);
    expect(graph.tensors.find((t) => t.name === "blk.0.attn_output.weight")!.ne).toEqual([128, 64, 1, 1]);
    expect(logits.ne).toEqual([259, 3, 1, 1]);
  });
});
