import { GgufValueType } from "@minfer/gguf";
import { DType, type DTypeName, WEIGHT_DTYPES } from "@minfer/ir";
import { describe, expect, it } from "vitest";

import { ModelError } from "./errors.js";
import * as llama from "./llama.js";
import * as qwen2 from "./qwen2.js";
import * as qwen3 from "./qwen3.js";
import { blocksInFile, checkTensor, checkTensors } from "./tensors.js";
import { tinyModel, withoutKey } from "./test-helpers.js";

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

  // The i-quants, the ternary types and MXFP4 are weight types (@minfer/gguf dequantizes them; the
  // CPU multiplies them); the activation formats Q8_1 and Q8_K are not, and a type @minfer/ir does
  // not know (NVFP4, ggml type 40) stays refused.
  const matrix =
    (type: number, kind: "matrix" | "vector" = "matrix") =>
    () =>
      checkTensor(new Map([["blk.0.ffn_up.weight", { name: "blk.0.ffn_up.weight", dims: [256, 8], type }]]), {
        name: "blk.0.ffn_up.weight",
        ne: [256, 8],
        kind,
      });
  const NEW_WEIGHT_TYPES: DTypeName[] = [
    "IQ2_XXS",
    "IQ2_XS",
    "IQ2_S",
    "IQ3_XXS",
    "IQ3_S",
    "IQ1_S",
    "IQ1_M",
    "IQ4_NL",
    "IQ4_XS",
    "TQ1_0",
    "TQ2_0",
    "MXFP4",
  ];
  it.each(NEW_WEIGHT_TYPES)("accepts a %s matrix", (name) => {
    expect(WEIGHT_DTYPES).toContain(DType[name]);
    expect(matrix(DType[name])()).toEqual({ name: "blk.0.ffn_up.weight", dtype: DType[name], ne: [256, 8] });
  });

  it.each([
    ["Q8_1", DType.Q8_1, "is Q8_1"],
    ["Q8_K", DType.Q8_K, "is Q8_K"],
    ["NVFP4", 40, "is type 40"],
  ] as const)("refuses a %s matrix (not a weight type here)", (_name, type, said) => {
    const e = caught(matrix(type));
    expect(e.code).toBe("BAD_DTYPE");
    expect(e.details.tensor).toBe("blk.0.ffn_up.weight");
    expect(e.message).toContain(said);
  });

  it("refuses an i-quant where a vector must be F32", () => {
    const e = caught(matrix(DType.IQ4_NL, "vector"));
    expect(e.code).toBe("BAD_DTYPE");
    expect(e.message).toContain("is IQ4_NL; a vector must be F32");
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

describe("block_count against the tensor table", () => {
  const withBlocks = (n: number | bigint) => {
    const { kvs, infos } = tinyModel("llama");
    const key = "llama.block_count";
    const meta = withoutKey(kvs, key, { key, type: GgufValueType.UINT64, value: BigInt(n) });
    return { meta, infos };
  };

  it.each([3, 2 ** 31, 2 ** 32 - 1])(
    "block_count %d over a 2-block file names the first missing tensor at once",
    (n) => {
      const { meta, infos } = withBlocks(n);
      const t0 = performance.now();
      const e = caught(() => llama.loadTensors(llama.loadHparams(meta), infos));
      expect(performance.now() - t0).toBeLessThan(1000);
      expect(e.code).toBe("MISSING_TENSOR");
      expect(e.details).toMatchObject({ tensor: "blk.2.attn_norm.weight", key: "llama.block_count" });
      expect(e.message).toContain(`llama.block_count is ${n} but the file has tensors for 2 blocks`);
    },
  );

  it("block_count below the file's blocks is BAD_KEY", () => {
    const { meta, infos } = withBlocks(1);
    const e = caught(() => llama.loadTensors(llama.loadHparams(meta), infos));
    expect(e.code).toBe("BAD_KEY");
    expect(e.details.key).toBe("llama.block_count");
    expect(e.message).toContain("llama.block_count is 1 but the file has tensors for 2 blocks");
  });

  it("counts the blocks of a table by its highest blk index", () => {
    expect(
      blocksInFile([
        { name: "blk.7.x", dims: [1], type: 0 },
        { name: "token_embd.weight", dims: [1], type: 0 },
      ]),
    ).toBe(8);
    expect(blocksInFile([{ name: "output.weight", dims: [1], type: 0 }])).toBe(0);
  });
});

describe("tensorSpecs", () => {
  it("yields specs lazily: a consumer that stops early does no work per unread block", () => {
    const hp = { ...llama.loadHparams(tinyModel("llama").meta), nLayer: 200_000 };
    const t0 = performance.now();
    const first: string[] = [];
    for (const s of llama.tensorSpecs(hp)) {
      first.push(s.name);
      if (first.length === 6) break;
    }
    expect(performance.now() - t0).toBeLessThan(100);
    expect(first.slice(4)).toEqual(["blk.0.attn_norm.weight", "blk.0.attn_q.weight"]);
  });

  it("checkTensors stops at the first missing tensor even with an unchecked block count", () => {
    const { meta, infos } = tinyModel("llama");
    const hp = { ...llama.loadHparams(meta), nLayer: 200_000 };
    const t0 = performance.now();
    const e = caught(() => checkTensors(infos, llama.tensorSpecs(hp)));
    expect(performance.now() - t0).toBeLessThan(100);
    expect(e.details.tensor).toBe("blk.2.attn_norm.weight");
  });
});
