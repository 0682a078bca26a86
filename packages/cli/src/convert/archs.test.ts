// The new architectures: each tiny checkpoint (tiny-configs.json) converted, and the GGUF checked
// against llama.cpp's layout written out here independently of archs/*.ts: the `<arch>.*` keys and
// their values, the tensor names, every tensor's values (Gemma's norms + 1, Granite's Q/K
// permuted, everything else as stored), the computed RoPE factors; then the refusals.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dequantize, type GgufFile, readGguf, readTensorData } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertCheckpoint } from "./convert.js";
import { ConvertError } from "./errors.js";
import { writeSafetensors } from "./test-helpers.js";
import { type TinyCheckpoint, tinyCheckpoint } from "./tiny-checkpoint.js";

let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-archs-"));
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function f32Of(file: GgufFile, name: string): Promise<Float32Array> {
  const t = file.tensors.find((x) => x.name === name);
  if (!t) throw new Error(`no tensor ${name}`);
  return dequantize(t.type, await readTensorData(file, t), t.nElements);
}

/** Hugging Face name → llama.cpp's GGUF name, per class (gguf-py's tensor_mapping for these archs). */
function ggufName(cls: string, hf: string): string {
  const layer = hf.match(/^model\.layers\.(\d+)\.(.+)$/);
  if (!layer) {
    const top: Record<string, string> = {
      "model.embed_tokens.weight": "token_embd.weight",
      "model.norm.weight": "output_norm.weight",
      "lm_head.weight": "output.weight",
    };
    if (!top[hf]) throw new Error(hf);
    return top[hf];
  }
  const [, i, rest] = layer;
  const preMlp = ["GemmaForCausalLM", "Phi3ForCausalLM", "GraniteForCausalLM", "Glm4ForCausalLM"].includes(
    cls,
  );
  const names: Record<string, string> = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.qkv_proj.weight": "attn_qkv.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    // Gemma 2/3 and OLMo 2: a post-attention norm; GLM-4: the pre-MLP norm (its post-attention norm
    // is post_self_attn_layernorm); Gemma, Phi-3, Granite: the pre-MLP norm.
    "post_attention_layernorm.weight": preMlp ? "ffn_norm.weight" : "post_attention_norm.weight",
    "post_self_attn_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "post_mlp_layernorm.weight": "post_ffw_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.gate_up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
  };
  if (!names[rest!]) throw new Error(hf);
  return `blk.${i}.${names[rest!]}`;
}

/** GGUF llama's Q/K from the definition: GGUF row h·d + 2i + j ← HF row h·d + j·d/2 + i. */
function permuted(hf: Float32Array, cols: number, headDim: number): Float32Array {
  const out = new Float32Array(hf.length);
  for (let r = 0; r < hf.length / cols; r++) {
    const k = r % headDim;
    const src = r - k + (k % 2) * (headDim / 2) + Math.floor(k / 2);
    out.set(hf.subarray(src * cols, (src + 1) * cols), r * cols);
  }
  return out;
}

/** The GGUF values llama.cpp's converter writes for a Hugging Face tensor. */
function expectedValues(ck: TinyCheckpoint, hf: string, gguf: string): Float32Array {
  const t = ck.tensors.get(hf)!;
  if (ck.case.class.startsWith("Gemma") && hf.endsWith("norm.weight"))
    return t.values.map((v) => Math.fround(v + 1));
  if (ck.case.class === "GraniteForCausalLM" && /attn_[qk]\.weight$/.test(gguf))
    return permuted(t.values, 64, 16);
  return t.values;
}

/** The `<arch>.*` keys of each case's GGUF (undefined: the key must be absent). */
const KEYS: Record<string, Record<string, number | string | undefined>> = {
  gemma: {
    "gemma.context_length": 512,
    "gemma.embedding_length": 64,
    "gemma.block_count": 2,
    "gemma.feed_forward_length": 96,
    "gemma.attention.head_count": 4,
    "gemma.attention.head_count_kv": 1,
    "gemma.attention.layer_norm_rms_epsilon": 1e-6,
    "gemma.attention.key_length": 16,
    "gemma.attention.value_length": 16,
    "gemma.rope.freq_base": undefined,
  },
  gemma2: {
    "gemma2.context_length": 512,
    "gemma2.block_count": 2,
    "gemma2.attention.head_count_kv": 2,
    "gemma2.attention.key_length": 16,
    "gemma2.attn_logit_softcapping": 10,
    "gemma2.final_logit_softcapping": 5,
    "gemma2.attention.sliding_window": 16,
    "gemma2.rope.freq_base": undefined,
  },
  gemma3: {
    "gemma3.context_length": 1024,
    "gemma3.block_count": 6,
    "gemma3.embedding_length": 64,
    "gemma3.feed_forward_length": 96,
    "gemma3.attention.head_count": 4,
    "gemma3.attention.head_count_kv": 2,
    "gemma3.attention.key_length": 16,
    "gemma3.attention.value_length": 16,
    "gemma3.attention.layer_norm_rms_epsilon": 1e-6,
    "gemma3.rope.freq_base": 1e6,
    "gemma3.rope.freq_base_swa": 10000,
    "gemma3.rope.scaling.type": "linear",
    "gemma3.rope.scaling.factor": 2,
    "gemma3.attention.sliding_window": 16,
    "gemma3.final_logit_softcapping": undefined,
  },
  "phi3-4k": {
    "phi3.context_length": 4096,
    "phi3.rope.scaling.original_context_length": 4096,
    "phi3.embedding_length": 64,
    "phi3.feed_forward_length": 96,
    "phi3.block_count": 2,
    "phi3.attention.head_count": 4,
    "phi3.attention.head_count_kv": 4,
    "phi3.attention.layer_norm_rms_epsilon": 1e-5,
    "phi3.rope.dimension_count": 16,
    "phi3.rope.freq_base": 10000,
    "phi3.attention.sliding_window": 2047,
    "phi3.rope.scaling.attn_factor": undefined,
  },
  "phi3-128k": {
    "phi3.context_length": 4096,
    "phi3.rope.scaling.original_context_length": 512,
    "phi3.attention.head_count_kv": 2,
    "phi3.rope.dimension_count": 16,
    "phi3.attention.sliding_window": 262144,
    "phi3.rope.scaling.attn_factor": Math.sqrt(1 + Math.log(8) / Math.log(512)),
  },
  "phi4-mini": {
    "phi3.rope.dimension_count": 12,
    "phi3.attention.sliding_window": 0,
    "phi3.rope.scaling.attn_factor": Math.sqrt(1 + Math.log(8) / Math.log(512)),
  },
  glm4: {
    "glm4.block_count": 2,
    "glm4.context_length": 2048,
    "glm4.embedding_length": 64,
    "glm4.feed_forward_length": 96,
    "glm4.attention.head_count": 4,
    "glm4.attention.head_count_kv": 2,
    "glm4.rope.freq_base": 10000,
    "glm4.attention.layer_norm_rms_epsilon": 1e-5,
    "glm4.attention.key_length": 16,
    "glm4.attention.value_length": 16,
    "glm4.rope.dimension_count": 8,
  },
  granite: {
    "granite.block_count": 2,
    "granite.attention.head_count_kv": 2,
    "granite.vocab_size": 50257,
    "granite.rope.dimension_count": 16,
    "granite.attention.scale": 0.1,
    "granite.embedding_scale": 12,
    "granite.residual_scale": 0.22,
    "granite.logit_scale": 8,
    "granite.attention.key_length": undefined,
  },
  olmo2: {
    "olmo2.block_count": 2,
    "olmo2.attention.head_count_kv": 2,
    "olmo2.rope.freq_base": 500000,
    "olmo2.attention.layer_norm_rms_epsilon": 1e-6,
    "olmo2.attention.sliding_window": undefined,
  },
};

/** The tokenizer each case's GGUF has. */
const TOKENIZER: Record<string, { model: string; pre: string; addSpacePrefix?: boolean }> = {
  gemma: { model: "llama", pre: "default", addSpacePrefix: false },
  gemma2: { model: "llama", pre: "default", addSpacePrefix: false },
  gemma3: { model: "llama", pre: "default", addSpacePrefix: false },
  "phi3-4k": { model: "llama", pre: "default" },
  "phi3-128k": { model: "llama", pre: "default" },
  "phi4-mini": { model: "gpt2", pre: "gpt-4o" },
  glm4: { model: "gpt2", pre: "glm4" },
  granite: { model: "gpt2", pre: "refact" },
  olmo2: { model: "gpt2", pre: "dbrx" },
};

const ARCH: Record<string, string> = { "phi3-4k": "phi3", "phi3-128k": "phi3", "phi4-mini": "phi3" };

const made = new Map<string, Promise<{ ck: TinyCheckpoint; file: GgufFile; notes: string[] }>>();
function converted(name: string, type = "f32", multimodal = false) {
  const key = `${name}-${type}${multimodal ? "-mm" : ""}`;
  let p = made.get(key);
  if (!p) {
    p = (async () => {
      const ck = await tinyCheckpoint(name, join(tmp, key), { multimodal });
      const out = join(tmp, `${key}.gguf`);
      const s = await convertCheckpoint(ck.dir, out, { type });
      return { ck, file: await readGguf(out), notes: s.notes };
    })();
    made.set(key, p);
  }
  return p;
}

describe("minfer convert: the new architectures, checked against llama.cpp's layout", () => {
  for (const name of Object.keys(KEYS)) {
    it(`${name}: keys, tensor names and values (F32)`, async () => {
      const { ck, file } = await converted(name);
      const md = file.metadata;
      expect(md.string("general.architecture")).toBe(ARCH[name] ?? name);
      for (const [k, v] of Object.entries(KEYS[name]!)) {
        if (v === undefined) expect(md.has(k), k).toBe(false);
        else if (typeof v === "string") expect(md.string(k), k).toBe(v);
        else expect(md.number(k), k).toBeCloseTo(v, 5);
      }
      const tok = TOKENIZER[name]!;
      expect(md.string("tokenizer.ggml.model")).toBe(tok.model);
      expect(md.string("tokenizer.ggml.pre")).toBe(tok.pre);
      expect(md.optBool("tokenizer.ggml.add_space_prefix")).toBe(tok.addSpacePrefix);
      const want = new Map<string, string>();
      for (const hf of ck.tensors.keys()) want.set(ggufName(ck.case.class, hf), hf);
      const longrope = (ck.case.config.rope_scaling as { long_factor?: number[] } | null)?.long_factor;
      const extra = longrope ? ["rope_factors_long.weight", "rope_factors_short.weight"] : [];
      expect(file.tensors.map((t) => t.name).sort()).toEqual([...want.keys(), ...extra].sort());
      expect(want.has("output.weight")).toBe(ck.case.config.tie_word_embeddings !== true);
      for (const [gguf, hf] of want) {
        const info = file.tensors.find((t) => t.name === gguf)!;
        expect([...info.dims], gguf).toEqual([...ck.tensors.get(hf)!.shape].reverse());
        expect(info.typeName).toBe("F32");
        const got = await f32Of(file, gguf);
        const exp = expectedValues(ck, hf, gguf);
        expect(Buffer.from(got.buffer).equals(Buffer.from(exp.buffer)), `${gguf} values`).toBe(true);
      }
      if (longrope) {
        const rs = ck.case.config.rope_scaling as { long_factor: number[]; short_factor: number[] };
        expect([...(await f32Of(file, "rope_factors_long.weight"))]).toEqual(rs.long_factor.map(Math.fround));
        expect([...(await f32Of(file, "rope_factors_short.weight"))]).toEqual(
          rs.short_factor.map(Math.fround),
        );
      }
    }, 120_000);
  }

  it("F16: matrices F16, vectors (norms, biases, RoPE factors) F32", async () => {
    for (const name of ["glm4", "phi4-mini"]) {
      const { file } = await converted(name, "f16");
      for (const t of file.tensors) expect(t.typeName, t.name).toBe(t.dims.length === 1 ? "F32" : "F16");
    }
  }, 120_000);

  it("Gemma 3 as Gemma3ForConditionalGeneration: the text model's tensors, the vision ones skipped with a note", async () => {
    const text = await converted("gemma3");
    const mm = await converted("gemma3", "f32", true);
    expect(mm.notes.join("\n")).toMatch(/skipped 4 tensors: vision tower and multimodal projector/);
    expect(mm.file.tensors.map((t) => t.name)).toEqual(text.file.tensors.map((t) => t.name));
    for (const t of mm.file.tensors) {
      const a = Buffer.from((await f32Of(mm.file, t.name)).buffer);
      expect(a.equals(Buffer.from((await f32Of(text.file, t.name)).buffer)), t.name).toBe(true);
    }
    expect(mm.file.metadata.integer("gemma3.attention.sliding_window")).toBe(16);
    expect(mm.file.metadata.number("gemma3.rope.scaling.factor")).toBe(2);
  }, 120_000);

  it("Gemma's user-defined added tokens: ▁ becomes a space (USER_DEFINED), special ones CONTROL", async () => {
    const ck = await tinyCheckpoint("gemma", join(tmp, "gemma-added"), {
      edit: (c) => {
        c.num_hidden_layers = 1;
      },
    });
    const p = join(ck.dir, "tokenizer_config.json");
    const tc = JSON.parse(readFileSync(p, "utf8"));
    tc.added_tokens_decoder ??= {};
    tc.added_tokens_decoder["300"] = { content: "▁▁▁", special: false };
    tc.added_tokens_decoder["301"] = { content: "<start_of_turn>", special: true };
    tc.added_tokens_decoder["302"] = { content: "<unused7>", special: false };
    writeFileSync(p, JSON.stringify(tc));
    await convertCheckpoint(ck.dir, join(tmp, "gemma-added.gguf"), { type: "f16" });
    const md = (await readGguf(join(tmp, "gemma-added.gguf"))).metadata;
    const tokens = md.stringArray("tokenizer.ggml.tokens");
    const types = md.numberArray("tokenizer.ggml.token_type");
    const scores = md.numberArray("tokenizer.ggml.scores");
    expect([tokens[300], types[300], scores[300]]).toEqual(["   ", 4, -1000]);
    expect([tokens[301], types[301]]).toEqual(["<start_of_turn>", 3]);
    expect([tokens[302], types[302]]).toEqual(["<unused7>", 3]);
  }, 60_000);
});

async function refusal(
  name: string,
  code: string,
  pattern: RegExp,
  edit: (c: Record<string, unknown>) => void,
  after?: (ck: TinyCheckpoint) => void,
): Promise<void> {
  const dir = join(tmp, `bad-${name}-${Math.random().toString(36).slice(2)}`);
  const ck = await tinyCheckpoint(name, dir, {
    edit: (c) => {
      c.num_hidden_layers = name === "gemma3" ? 6 : 1;
      edit(c);
    },
  });
  after?.(ck);
  const err = await convertCheckpoint(dir, join(dir, "out.gguf")).catch((e) => e);
  expect(err).toBeInstanceOf(ConvertError);
  expect((err as ConvertError).code, (err as Error).message).toBe(code);
  expect((err as Error).message).toMatch(pattern);
}

describe("minfer convert: what llama.cpp's layout cannot represent is refused by name", () => {
  it("Gemma 2: a query_pre_attn_scalar other than head_dim (llama.cpp derives the scale)", () =>
    refusal(
      "gemma2",
      "UNSUPPORTED_CONFIG",
      /query_pre_attn_scalar 32 differs from the head_dim \(16\)/,
      (c) => {
        c.query_pre_attn_scalar = 32;
      },
    ));
  it("Gemma 2: no final soft-capping (llama.cpp always applies it)", () =>
    refusal("gemma2", "UNSUPPORTED_CONFIG", /"final_logit_softcapping" is null/, (c) => {
      c.final_logit_softcapping = null;
    }));
  it("Gemma 2: a sliding-window pattern other than every other layer", () =>
    refusal("gemma2", "UNSUPPORTED_CONFIG", /sliding-window layers \(F\)/, (c) => {
      c.layer_types = ["full_attention"];
    }));
  it("Gemma 3: a layer pattern other than five sliding to one global", () =>
    refusal("gemma3", "UNSUPPORTED_CONFIG", /sliding-window layers \(SSSFSF\)/, (c) => {
      c.layer_types = ["S", "S", "S", "F", "S", "F"].map((t) =>
        t === "S" ? "sliding_attention" : "full_attention",
      );
    }));
  it("Gemma 3: attention soft-capping", () =>
    refusal("gemma3", "UNSUPPORTED_CONFIG", /attn_logit_softcapping 50/, (c) => {
      c.attn_logit_softcapping = 50;
    }));
  it("Gemma 3: yarn RoPE scaling", () =>
    refusal(
      "gemma3",
      "UNSUPPORTED_CONFIG",
      /rope scaling "yarn" is not supported for gemma3; supported: linear/,
      (c) => {
        c.rope_scaling = { rope_type: "yarn", factor: 4, original_max_position_embeddings: 256 };
      },
    ));
  it("Gemma: rope_theta other than 10000 (its converter writes no RoPE keys)", () =>
    refusal("gemma", "UNSUPPORTED_CONFIG", /rope_theta 500000/, (c) => {
      c.rope_theta = 500000;
    }));
  it("Phi-3: yarn RoPE scaling", () =>
    refusal("phi3-128k", "UNSUPPORTED_CONFIG", /rope scaling "yarn" is not supported for phi3/, (c) => {
      c.rope_scaling = { type: "yarn", factor: 8, original_max_position_embeddings: 512 };
    }));
  it("Phi-3: LongRoPE factors of the wrong length", () =>
    refusal(
      "phi3-128k",
      "BAD_CONFIG_KEY",
      /rope_scaling.long_factor" has 3 values; LongRoPE needs 8/,
      (c) => {
        (c.rope_scaling as { long_factor: number[] }).long_factor = [1, 2, 3];
      },
    ));
  it("GLM-4: an unknown RoPE scaling type", () =>
    refusal("glm4", "UNSUPPORTED_CONFIG", /rope scaling "dynamic" is not supported for glm4/, (c) => {
      c.rope_scaling = { rope_type: "dynamic", factor: 2 };
    }));
  it("Granite: a head_dim other than hidden_size / heads (llama.cpp's converter drops it)", () =>
    refusal("granite", "UNSUPPORTED_CONFIG", /head_dim 32 × num_attention_heads 4 ≠ hidden_size 64/, (c) => {
      c.head_dim = 32;
    }));
  it("OLMo 2: tied embeddings (llama.cpp's olmo2 needs output.weight)", () =>
    refusal("olmo2", "UNSUPPORTED_CONFIG", /tie_word_embeddings true/, (c) => {
      c.tie_word_embeddings = true;
    }));
  it("a quantized checkpoint", () =>
    refusal("glm4", "UNSUPPORTED_CONFIG", /quantized \(quantization_config.quant_method "gptq"\)/, (c) => {
      c.quantization_config = { quant_method: "gptq", bits: 4 };
    }));
  it("a missing tensor (Gemma 3's q_norm)", () =>
    refusal(
      "gemma3",
      "MISSING_TENSOR",
      /"model.layers.0.self_attn.q_norm.weight" is missing/,
      () => {},
      (ck) => {
        const kept = [...ck.tensors.values()].filter(
          (t) => t.name !== "model.layers.0.self_attn.q_norm.weight",
        );
        writeSafetensors(join(ck.dir, "model.safetensors"), kept, "F32");
      },
    ));
  it("a SentencePiece model that normalizes whitespace", () =>
    refusal(
      "gemma2",
      "UNSUPPORTED_TOKENIZER",
      /remove_extra_whitespaces is set/,
      () => {},
      (ck) => {
        const p = join(ck.dir, "tokenizer.model");
        const b = readFileSync(p);
        // The normalizer_spec is written last: flip remove_extra_whitespaces (field 4) to 1.
        const i = b.lastIndexOf(Buffer.from([0x20, 0x00]));
        b[i + 1] = 1;
        writeFileSync(p, b);
      },
    ));
  it("a truncated tokenizer.model", () =>
    refusal(
      "gemma",
      "BAD_TOKENIZER",
      /tokenizer.model: not a valid SentencePiece model/,
      () => {},
      (ck) => {
        const p = join(ck.dir, "tokenizer.model");
        writeFileSync(p, readFileSync(p).subarray(0, 1000));
      },
    ));
});
