import { type GgufKV, GgufValueType } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { ModelError } from "./errors.js";
import * as llama from "./llama.js";
import { tinyModel, withoutKey } from "./test-helpers.js";

const U32 = GgufValueType.UINT32;
const U64 = GgufValueType.UINT64;
const F32 = GgufValueType.FLOAT32;
const STR = GgufValueType.STRING;

/** The tiny llama's hyperparameters with `extra` replacing (or adding) keys: the ModelError, or undefined. */
function refusal(extra: GgufKV[]): ModelError | undefined {
  let kvs = tinyModel("llama").kvs;
  for (const kv of extra) kvs = [...withoutKey(kvs, kv.key).entries()];
  try {
    llama.loadHparams(withoutKey([...kvs, ...extra], "none"));
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(ModelError);
    return e as ModelError;
  }
}

const kv = (suffix: string, type: number, value: number | bigint | string): GgufKV => ({
  key: `llama.${suffix}`,
  type: type as GgufKV["type"],
  value,
});

// The tiny llama: 4 heads of 16 (2 KV heads), context 2048.
describe("hyperparameters out of bounds are BAD_KEY naming the key and the value", () => {
  it.each([
    ["rope.dimension_count", kv("rope.dimension_count", U32, 15), "15"],
    ["rope.dimension_count", kv("rope.dimension_count", U32, 32), "32"],
    ["context_length", kv("context_length", U64, 2n ** 31n), "2147483648"],
    ["context_length", kv("context_length", U32, 0xffffffff), "4294967295"],
    ["attention.head_count", kv("attention.head_count", U32, 2 ** 31), "2147483648"],
    ["attention.head_count_kv", kv("attention.head_count_kv", U32, 3), "3"],
    ["attention.head_count_kv", kv("attention.head_count_kv", U32, 2 ** 20), "1048576"],
    ["attention.layer_norm_rms_epsilon", kv("attention.layer_norm_rms_epsilon", F32, Number.NaN), "NaN"],
    ["attention.layer_norm_rms_epsilon", kv("attention.layer_norm_rms_epsilon", F32, -1e-5), "-0.00001"],
    ["rope.freq_base", kv("rope.freq_base", F32, Number.POSITIVE_INFINITY), "Infinity"],
    ["rope.freq_base", kv("rope.freq_base", F32, 0), "0"],
    ["rope.scaling.factor", kv("rope.scaling.factor", F32, 0), "0"],
    ["rope.scaling.attn_factor", kv("rope.scaling.attn_factor", F32, Number.NaN), "NaN"],
    [
      "rope.scaling.original_context_length",
      kv("rope.scaling.original_context_length", U64, 2n ** 40n),
      "1099511627776",
    ],
  ])("%s = %s", (suffix, bad, shown) => {
    const e = refusal([bad]);
    expect(e?.code).toBe("BAD_KEY");
    expect(e?.details.key).toBe(`llama.${suffix}`);
    expect(e?.message).toContain(`llama.${suffix}`);
    expect(e?.message).toContain(shown);
  });

  it("llama3 scaling needs high_freq_factor above low_freq_factor", () => {
    const e = refusal([
      kv("rope.scaling.type", STR, "llama3"),
      kv("rope.scaling.low_freq_factor", F32, 4),
      kv("rope.scaling.high_freq_factor", F32, 4),
    ]);
    expect(e?.code).toBe("BAD_KEY");
    expect(e?.details.key).toBe("llama.rope.scaling.high_freq_factor");
  });

  it("accepts the values at the bounds", () => {
    expect(
      refusal([
        kv("rope.dimension_count", U32, 16),
        kv("context_length", U32, 1 << 24),
        kv("attention.head_count_kv", U32, 4),
      ]),
    ).toBeUndefined();
  });
});
