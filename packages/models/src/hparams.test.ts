import { GgufValueType } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { ModelError } from "./errors.js";
import * as llama from "./llama.js";
import * as qwen2 from "./qwen2.js";
import * as qwen3 from "./qwen3.js";
import { architecture, SUPPORTED_ARCHS } from "./registry.js";
import { llama3RopeFreqs, ropeParams } from "./rope.js";
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

describe("loadHparams", () => {
  it("reads the tiny llama preset", () => {
    const hp = llama.loadHparams(tinyModel("llama").meta);
    expect(hp).toMatchObject({
      arch: "llama",
      nLayer: 2,
      nEmbd: 64,
      nFf: 128,
      nHead: 4,
      nHeadKv: 2,
      headDimK: 16,
      headDimV: 16,
      nRot: 16,
      nCtxTrain: 2048,
      nVocab: 259,
    });
    expect(hp.ropeScaling.type).toBe("none");
  });

  it.each([
    ["block_count"],
    ["embedding_length"],
    ["feed_forward_length"],
    ["attention.head_count"],
    ["context_length"],
  ])("a missing %s is MISSING_KEY naming it", (suffix) => {
    const { kvs } = tinyModel("qwen2");
    const e = caught(() => qwen2.loadHparams(withoutKey(kvs, `qwen2.${suffix}`)));
    expect(e.code).toBe("MISSING_KEY");
    expect(e.details.key).toBe(`qwen2.${suffix}`);
    expect(e.message).toContain(`qwen2.${suffix}`);
  });

  it("applies each architecture's documented defaults when optional keys are absent", () => {
    for (const [mod, eps, base] of [
      [llama, 1e-5, 10000],
      [qwen2, 1e-6, 1e6],
      [qwen3, 1e-6, 1e6],
    ] as const) {
      let { kvs } = tinyModel(mod.ARCH as "llama");
      for (const s of [
        "attention.layer_norm_rms_epsilon",
        "rope.freq_base",
        "attention.head_count_kv",
        "attention.key_length",
        "attention.value_length",
        "rope.dimension_count",
      ])
        kvs = kvs.filter((kv) => kv.key !== `${mod.ARCH}.${s}`);
      const hp = mod.loadHparams(withoutKey(kvs, "none"));
      expect(hp.rmsEps).toBe(eps);
      expect(hp.ropeFreqBase).toBe(base);
      expect(hp.nHeadKv).toBe(hp.nHead);
      expect(hp.headDimK).toBe(16);
      expect(hp.nRot).toBe(16);
    }
  });

  it("refuses an unknown rope scaling type by key", () => {
    const { kvs } = tinyModel("llama");
    const key = "llama.rope.scaling.type";
    const e = caught(() =>
      llama.loadHparams(withoutKey(kvs, key, { key, type: GgufValueType.STRING, value: "dynamic" })),
    );
    expect(e.code).toBe("BAD_KEY");
    expect(e.details.key).toBe(key);
    // LongRoPE only where the architecture reads its factor tensors (phi3), not for llama.
    const l = caught(() =>
      llama.loadHparams(withoutKey(kvs, key, { key, type: GgufValueType.STRING, value: "longrope" })),
    );
    expect(l.message).toMatch(/"longrope" is not supported for llama/);
  });

  it("reads llama3 scaling and computes its frequency factors", () => {
    const { kvs } = tinyModel("llama");
    const f32 = (s: string, value: number) => ({ key: `llama.${s}`, type: GgufValueType.FLOAT32, value });
    const meta = withoutKey(kvs, "none");
    const hp = llama.loadHparams(
      withoutKey(
        [
          ...meta.entries(),
          { key: "llama.rope.scaling.type", type: GgufValueType.STRING, value: "llama3" },
          f32("rope.scaling.factor", 8),
          f32("rope.scaling.low_freq_factor", 1),
          f32("rope.scaling.high_freq_factor", 4),
          { key: "llama.rope.scaling.original_context_length", type: GgufValueType.UINT32, value: 64 },
        ],
        "none",
      ),
    );
    expect(hp.ropeScaling).toMatchObject({ type: "llama3", factor: 8, originalContextLength: 64 });
    const ff = llama3RopeFreqs(hp);
    expect(ff.length).toBe(8);
    // i = 0: wavelen 2π < 64/4 → 1; the lowest frequency (wavelen ≈ 2π·10000^(14/16)) > 64 → 8.
    expect(ff[0]).toBe(1);
    expect(ff[7]).toBe(8);
    // In between: smooth interpolation, monotone.
    for (let i = 1; i < 8; i++) expect(ff[i]!).toBeGreaterThanOrEqual(ff[i - 1]!);
    const wavelen = 2 * Math.PI * 10000 ** (2 / 16);
    const smooth = (64 / wavelen - 1) / 3;
    expect(ff[1]).toBeCloseTo(wavelen < 16 ? 1 : 1 / ((1 - smooth) / 8 + smooth), 5);
    expect(ropeParams(hp, "normal").freqScale).toBe(1);
  });

  it("turns linear scaling into freqScale", () => {
    const { kvs } = tinyModel("qwen2");
    const meta = withoutKey(
      [
        ...kvs,
        { key: "qwen2.rope.scaling.type", type: GgufValueType.STRING, value: "linear" },
        { key: "qwen2.rope.scaling.factor", type: GgufValueType.FLOAT32, value: 4 },
      ],
      "none",
    );
    expect(ropeParams(qwen2.loadHparams(meta), "neox")).toMatchObject({ freqScale: 0.25, extFactor: 0 });
  });
});

describe("registry", () => {
  it("finds each architecture and refuses an unknown one, listing the supported ones", () => {
    expect(SUPPORTED_ARCHS).toEqual([
      "llama",
      "qwen2",
      "qwen3",
      "gemma",
      "gemma2",
      "gemma3",
      "phi3",
      "glm4",
      "granite",
      "olmo2",
      "bert",
      "nomic-bert",
    ]);
    expect(architecture("qwen3")).toBe(qwen3);
    const e = caught(() => architecture("gpt2"));
    expect(e.code).toBe("UNKNOWN_ARCH");
    expect(e.message).toContain("llama, qwen2, qwen3");
    expect(e.details.supported).toEqual(SUPPORTED_ARCHS);
  });
});
