// `minfer convert`: checkpoints written from scratch in a temp dir (test-helpers.ts), converted,
// and the GGUF checked against what was written: tensor values (Q/K permutation checked from its
// definition), metadata, and the tokenizer round trip GGUF vocab → tokenizer.json → GGUF.
import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dequantize, type GgufFile, readGguf, readTensorData } from "@minfer/gguf";
import { Tokenizer } from "@minfer/tokenizer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bin, fixtures, minfer } from "../test-helpers.js";
import { convertCheckpoint } from "./convert.js";
import { permuteRows } from "./tensor-map.js";
import { type Checkpoint, type FixtureVocab, TINY, testVectors, writeCheckpoint } from "./test-helpers.js";

const VOCAB: Record<FixtureVocab, string> = {
  qwen2: join(fixtures, "vocab/ggml-vocab-qwen2.gguf"),
  "llama-bpe": join(fixtures, "vocab/ggml-vocab-llama-bpe.gguf"),
};
let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-"));
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function f32Of(file: GgufFile, name: string): Promise<Float32Array> {
  const t = file.tensors.find((x) => x.name === name);
  if (!t) throw new Error(`no tensor ${name}`);
  return dequantize(t.type, await readTensorData(file, t), t.nElements);
}

/** The expected GGUF Q/K of a llama, built from the definition: GGUF row h·d + 2i + j ← HF row h·d + j·d/2 + i. */
function expectedPermuted(hf: Float32Array, cols: number, headDim: number): Float32Array {
  const out = new Float32Array(hf.length);
  const rows = hf.length / cols;
  for (let r = 0; r < rows; r++) {
    const head = Math.floor(r / headDim);
    const k = r % headDim;
    const src = head * headDim + (k % 2) * (headDim / 2) + Math.floor(k / 2);
    out.set(hf.subarray(src * cols, (src + 1) * cols), r * cols);
  }
  return out;
}

const HF_TO_GGUF: [RegExp, string][] = [
  [/^model\.embed_tokens\.weight$/, "token_embd.weight"],
  [/^model\.norm\.weight$/, "output_norm.weight"],
  [/^lm_head\.weight$/, "output.weight"],
  [/^model\.layers\.(\d+)\.input_layernorm\.weight$/, "blk.$1.attn_norm.weight"],
  [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, "blk.$1.ffn_norm.weight"],
  [/^model\.layers\.(\d+)\.self_attn\.([qkv])_proj\.(weight|bias)$/, "blk.$1.attn_$2.$3"],
  [/^model\.layers\.(\d+)\.self_attn\.o_proj\.weight$/, "blk.$1.attn_output.weight"],
  [/^model\.layers\.(\d+)\.self_attn\.([qk])_norm\.weight$/, "blk.$1.attn_$2_norm.weight"],
  [/^model\.layers\.(\d+)\.mlp\.(gate|up|down)_proj\.weight$/, "blk.$1.ffn_$2.weight"],
];
const ggufName = (hf: string) => {
  for (const [re, to] of HF_TO_GGUF) if (re.test(hf)) return hf.replace(re, to);
  throw new Error(hf);
};

async function checkWeights(ck: Checkpoint, out: string): Promise<GgufFile> {
  const file = await readGguf(out);
  const names = new Set(file.tensors.map((t) => t.name));
  expect(names.size).toBe(ck.tensors.size);
  expect(names.has("output.weight")).toBe(!ck.tied);
  for (const [hf, t] of ck.tensors) {
    const name = ggufName(hf);
    const info = file.tensors.find((x) => x.name === name)!;
    expect(info, name).toBeDefined();
    expect([...info.dims]).toEqual([...t.shape].reverse());
    expect(info.typeName).toBe("F32");
    const got = await f32Of(file, name);
    const qk = /attn_[qk]\.weight$/.test(name) && ck.arch === "llama";
    const want = qk ? expectedPermuted(t.values, ck.shape.nEmbd, ck.shape.headDim) : t.values;
    expect(Buffer.from(got.buffer).equals(Buffer.from(want.buffer)), `${name} values`).toBe(true);
    if (qk)
      expect(Buffer.from(got.buffer).equals(Buffer.from(t.values.buffer)), `${name} is permuted`).toBe(false);
  }
  return file;
}

describe("permuteRows", () => {
  it("GGUF row h·d + 2i + j of each head is HF row h·d + j·d/2 + i", () => {
    const d = 8;
    const cols = 3;
    const rows = 2 * d;
    const hf = Float32Array.from({ length: rows * cols }, (_, k) => k);
    const got = permuteRows(hf, cols, d);
    expect([...got]).toEqual([...expectedPermuted(hf, cols, d)]);
    // head 0: rows 0,4,1,5,2,6,3,7 of HF
    expect([...got].filter((_, k) => k % cols === 0).map((v) => v / cols)).toEqual([
      0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15,
    ]);
  });
});

describe("minfer convert: weights and metadata", () => {
  it("llama, two shards with an index, F32: tensors equal, Q/K permuted, llama.* keys", async () => {
    const ck = await writeCheckpoint(join(tmp, "llama"), {
      arch: "llama",
      vocab: "llama-bpe",
      vocabPath: VOCAB["llama-bpe"],
      shards: 2,
    });
    const out = join(tmp, "llama.gguf");
    const s = await convertCheckpoint(ck.dir, out, { type: "f32" });
    expect(s.arch).toBe("llama");
    expect(s.pre).toBe("llama-bpe");
    const file = await checkWeights(ck, out);
    const md = file.metadata;
    expect(md.string("general.architecture")).toBe("llama");
    expect(md.integer("general.file_type")).toBe(0);
    expect(md.integer("llama.block_count")).toBe(TINY.nLayer);
    expect(md.integer("llama.embedding_length")).toBe(TINY.nEmbd);
    expect(md.integer("llama.feed_forward_length")).toBe(TINY.nFf);
    expect(md.integer("llama.attention.head_count")).toBe(TINY.nHead);
    expect(md.integer("llama.attention.head_count_kv")).toBe(TINY.nHeadKv);
    expect(md.integer("llama.rope.dimension_count")).toBe(TINY.headDim);
    expect(md.integer("llama.vocab_size")).toBe(ck.nVocab);
    expect(md.integer("llama.context_length")).toBe(4096);
    expect(md.number("llama.attention.layer_norm_rms_epsilon")).toBeCloseTo(1e-6, 10);
    expect(md.integer("tokenizer.ggml.bos_token_id")).toBe(128000);
    expect(md.integer("tokenizer.ggml.eos_token_id")).toBe(128001);
    expect(md.optBool("tokenizer.ggml.add_bos_token")).toBe(true);
  });

  it("qwen2 from BF16, single file: biases F32, no permutation", async () => {
    const ck = await writeCheckpoint(join(tmp, "qwen2"), {
      arch: "qwen2",
      vocab: "qwen2",
      vocabPath: VOCAB.qwen2,
      dtype: "BF16",
    });
    const out = join(tmp, "qwen2.gguf");
    await convertCheckpoint(ck.dir, out, { type: "f32" });
    const file = await checkWeights(ck, out);
    expect(file.metadata.string("tokenizer.ggml.pre")).toBe("qwen2");
    expect(file.metadata.optBool("tokenizer.ggml.add_bos_token")).toBe(false);
    expect(file.metadata.integer("tokenizer.ggml.padding_token_id")).toBe(151643);
    expect(file.metadata.string("tokenizer.chat_template")).toBe(ck.tokenizer.tokenizerConfig.chat_template);
  });

  it("qwen3 from F16, tied embeddings, head_dim ≠ hidden/heads: no output.weight, key_length", async () => {
    const ck = await writeCheckpoint(join(tmp, "qwen3"), {
      arch: "qwen3",
      vocab: "qwen2",
      vocabPath: VOCAB.qwen2,
      dtype: "F16",
      tied: true,
      shape: { ...TINY, headDim: 32, explicitHeadDim: true },
    });
    const out = join(tmp, "qwen3.gguf");
    await convertCheckpoint(ck.dir, out, { type: "f32" });
    const file = await checkWeights(ck, out);
    expect(file.metadata.integer("qwen3.attention.key_length")).toBe(32);
    expect(file.metadata.integer("qwen3.attention.value_length")).toBe(32);
  });

  it("Q8_0 and F16: matrices converted, norms and biases stay F32; the chat template list form", async () => {
    const dir = join(tmp, "qwen2-q8");
    await writeCheckpoint(dir, { arch: "qwen2", vocab: "qwen2", vocabPath: VOCAB.qwen2, seed: 5 });
    const cfgPath = join(dir, "tokenizer_config.json");
    const cfg = JSON.parse(readFileSync(cfgPath, "utf8"));
    cfg.chat_template = [
      { name: "default", template: "{{ messages }}" },
      { name: "tool_use", template: "{{ tools }}" },
    ];
    writeFileSync(cfgPath, JSON.stringify(cfg));
    for (const [type, name] of [
      ["q8_0", "Q8_0"],
      ["f16", "F16"],
    ] as const) {
      const out = join(tmp, `qwen2-${type}.gguf`);
      await convertCheckpoint(dir, out, { type });
      const file = await readGguf(out);
      for (const t of file.tensors) expect(t.typeName, t.name).toBe(t.dims.length === 1 ? "F32" : name);
      expect(file.metadata.string("tokenizer.chat_template")).toBe("{{ messages }}");
      expect(file.metadata.string("tokenizer.chat_template.tool_use")).toBe("{{ tools }}");
    }
  });
});

describe("minfer convert: tokenizer round trip (fixture GGUF vocab → tokenizer.json → GGUF)", () => {
  for (const vocab of ["qwen2", "llama-bpe"] as const) {
    it(`${vocab}: identical tokens, merges and types; llama.cpp's test vectors pass`, async () => {
      const arch = vocab === "qwen2" ? "qwen2" : "llama";
      const ck = await writeCheckpoint(join(tmp, `tok-${vocab}`), {
        arch,
        vocab,
        vocabPath: VOCAB[vocab],
        shape: { ...TINY, nLayer: 1 },
      });
      const out = join(tmp, `tok-${vocab}.gguf`);
      await convertCheckpoint(ck.dir, out, { type: "f16" });
      const md = (await readGguf(out)).metadata;
      const fixture = (await readGguf(VOCAB[vocab])).metadata;
      expect(md.string("tokenizer.ggml.pre")).toBe(fixture.string("tokenizer.ggml.pre"));
      expect(md.stringArray("tokenizer.ggml.tokens")).toEqual(fixture.stringArray("tokenizer.ggml.tokens"));
      expect(Array.from(md.optNumberArray("tokenizer.ggml.token_type")!)).toEqual(
        Array.from(fixture.optNumberArray("tokenizer.ggml.token_type")!),
      );
      expect(md.stringArray("tokenizer.ggml.merges")).toEqual(fixture.stringArray("tokenizer.ggml.merges"));
      const tok = Tokenizer.fromMetadata(md);
      const cases = testVectors(VOCAB[vocab]);
      expect(cases.length).toBeGreaterThan(10);
      for (const c of cases)
        expect(
          tok.encode(c.text, { addSpecial: false, parseSpecial: false }),
          JSON.stringify(c.text),
        ).toEqual(c.ids);
    }, 120_000);
  }
});

describe.skipIf(!existsSync(bin))("minfer convert (the built CLI): output and refusals", () => {
  let good = "";
  beforeAll(async () => {
    good = join(tmp, "cli-good");
    await writeCheckpoint(good, { arch: "qwen3", vocab: "qwen2", vocabPath: VOCAB.qwen2, tied: true });
  });

  it("converts, prints a summary on stderr, nothing on stdout", async () => {
    const out = join(tmp, "cli.gguf");
    const r = await minfer("convert", good, "-o", out, "--type", "q8_0");
    expect(r.stderr).toMatch(/qwen3, tokenizer pre qwen2, \d+ tensors \(/);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect((await readGguf(out)).metadata.integer("general.file_type")).toBe(7);
    expect(r.stderr).not.toContain("kept in another type");
  });

  it("says which matrices could not take the asked type (rows of 64 are not whole Q4_K blocks)", async () => {
    const out = join(tmp, "cli-q4k.gguf");
    const r = await minfer("convert", good, "-o", out, "--type", "q4_k");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/matrices kept in another type/);
    expect(r.stderr).toMatch(
      /blk\.0\.attn_q\.weight: rows of 64 are not a multiple of the Q4_K block size 256; using Q5_0/,
    );
    const file = await readGguf(out);
    expect(file.tensors.find((t) => t.name === "blk.0.attn_q.weight")!.typeName).toBe("Q5_0");
  });

  async function refused(dir: string, code: string, pattern: RegExp): Promise<void> {
    const out = join(tmp, "refused.gguf");
    const r = await minfer("convert", dir, "-o", out);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`[${code}]`);
    expect(r.stderr).toMatch(pattern);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(out)).toBe(false);
  }

  it("an unknown architecture, by name", async () => {
    const dir = join(tmp, "bad-arch");
    await writeCheckpoint(dir, {
      arch: "llama",
      vocab: "llama-bpe",
      vocabPath: VOCAB["llama-bpe"],
      shape: { ...TINY, nLayer: 1 },
      editConfig: (c) => {
        c.architectures = ["FalconForCausalLM"];
        c.model_type = "falcon";
      },
    });
    await refused(dir, "UNKNOWN_ARCH", /FalconForCausalLM is not supported/);
  });

  it("an unknown pre-tokenizer regex, with the pattern", async () => {
    const dir = join(tmp, "bad-pre");
    await writeCheckpoint(dir, {
      arch: "qwen2",
      vocab: "qwen2",
      vocabPath: VOCAB.qwen2,
      shape: { ...TINY, nLayer: 1 },
    });
    const p = join(dir, "tokenizer.json");
    const tj = JSON.parse(readFileSync(p, "utf8"));
    tj.pre_tokenizer.pretokenizers[0].pattern.Regex = "\\p{N}{1,5}|\\p{L}+";
    writeFileSync(p, JSON.stringify(tj));
    await refused(dir, "UNKNOWN_PRE_TOKENIZER", /split pattern .*\\\\p\{N\}\{1,5\}/);
  });

  it("a SentencePiece-style (byte_fallback) tokenizer, by name", async () => {
    const dir = join(tmp, "bad-spm");
    await writeCheckpoint(dir, {
      arch: "qwen2",
      vocab: "qwen2",
      vocabPath: VOCAB.qwen2,
      shape: { ...TINY, nLayer: 1 },
    });
    const p = join(dir, "tokenizer.json");
    const tj = JSON.parse(readFileSync(p, "utf8"));
    tj.model.byte_fallback = true;
    writeFileSync(p, JSON.stringify(tj));
    await refused(dir, "UNSUPPORTED_TOKENIZER", /SentencePiece-style/);
  });

  it("a missing config key, by name", async () => {
    const dir = join(tmp, "bad-key");
    await writeCheckpoint(dir, {
      arch: "qwen2",
      vocab: "qwen2",
      vocabPath: VOCAB.qwen2,
      shape: { ...TINY, nLayer: 1 },
      editConfig: (c) => {
        c.intermediate_size = undefined;
      },
    });
    await refused(dir, "MISSING_CONFIG_KEY", /"intermediate_size" is required/);
  });

  it("a truncated safetensors file, by name", async () => {
    const dir = join(tmp, "bad-trunc");
    await writeCheckpoint(dir, {
      arch: "qwen2",
      vocab: "qwen2",
      vocabPath: VOCAB.qwen2,
      shape: { ...TINY, nLayer: 1 },
    });
    const f = join(dir, "model.safetensors");
    truncateSync(f, readFileSync(f).length - 100);
    await refused(dir, "BAD_FILE", /model\.safetensors: not a valid safetensors file: .*truncated/);
    writeFileSync(f, Buffer.from([1, 2, 3]));
    await refused(dir, "BAD_FILE", /model\.safetensors: not a valid safetensors file/);
  });

  it("a tensor of the wrong shape, by name", async () => {
    const dir = join(tmp, "bad-shape");
    await writeCheckpoint(dir, {
      arch: "qwen2",
      vocab: "qwen2",
      vocabPath: VOCAB.qwen2,
      shape: { ...TINY, nLayer: 1 },
      editConfig: (c) => {
        c.intermediate_size = 128; // the weights are written for 96
      },
    });
    await refused(dir, "BAD_SHAPE", /mlp\.gate_proj\.weight.*\[96, 64\].*\[128, 64\]/);
  });

  it("usage errors exit 2", async () => {
    const r = await minfer("convert", good);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/-o OUT.gguf is required/);
  });
});

describe("RoPE scaling", () => {
  it("linear and yarn become <arch>.rope.scaling.* keys; llama3 the rope_freqs.weight tensor", async () => {
    const dir = join(tmp, "rope");
    await writeCheckpoint(dir, {
      arch: "qwen2",
      vocab: "qwen2",
      vocabPath: VOCAB.qwen2,
      shape: { ...TINY, nLayer: 1 },
      editConfig: (c) => {
        c.rope_scaling = { type: "yarn", factor: 4, original_max_position_embeddings: 32768 };
      },
    });
    await convertCheckpoint(dir, join(tmp, "yarn.gguf"), { type: "f32" });
    const md = (await readGguf(join(tmp, "yarn.gguf"))).metadata;
    expect(md.string("qwen2.rope.scaling.type")).toBe("yarn");
    expect(md.number("qwen2.rope.scaling.factor")).toBe(4);
    expect(md.integer("qwen2.rope.scaling.original_context_length")).toBe(32768);

    const l3 = join(tmp, "rope-llama3");
    await writeCheckpoint(l3, {
      arch: "llama",
      vocab: "llama-bpe",
      vocabPath: VOCAB["llama-bpe"],
      shape: { ...TINY, nLayer: 1, ropeTheta: 500000 },
      editConfig: (c) => {
        c.rope_scaling = {
          rope_type: "llama3",
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 8192,
        };
      },
    });
    // transformers 5 writes the same as `rope_parameters`, with rope_theta inside it.
    const t5 = join(tmp, "rope-t5");
    await writeCheckpoint(t5, {
      arch: "llama",
      vocab: "llama-bpe",
      vocabPath: VOCAB["llama-bpe"],
      shape: { ...TINY, nLayer: 1 },
      editConfig: (c) => {
        delete c.rope_theta;
        c.rope_parameters = {
          rope_type: "llama3",
          rope_theta: 500000,
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 8192,
        };
      },
    });
    await convertCheckpoint(t5, join(tmp, "llama3-t5.gguf"), { type: "f32" });
    const t5File = await readGguf(join(tmp, "llama3-t5.gguf"));
    expect(t5File.metadata.number("llama.rope.freq_base")).toBe(500000);
    await convertCheckpoint(l3, join(tmp, "llama3.gguf"), { type: "f32" });
    expect(await f32Of(t5File, "rope_freqs.weight")).toEqual(
      await f32Of(await readGguf(join(tmp, "llama3.gguf")), "rope_freqs.weight"),
    );
    const file = await readGguf(join(tmp, "llama3.gguf"));
    expect(file.metadata.optString("llama.rope.scaling.type")).toBeUndefined();
    const f = await f32Of(file, "rope_freqs.weight");
    expect(f.length).toBe(TINY.headDim / 2);
    // Wavelength 2π·500000^(2i/16): short ones (< 2048) keep factor 1, long ones (> 8192) get 8.
    for (let i = 0; i < f.length; i++) {
      const wavelen = 2 * Math.PI * 500000 ** ((2 * i) / TINY.headDim);
      if (wavelen < 2048) expect(f[i]).toBe(1);
      else if (wavelen > 8192) expect(f[i]).toBe(8);
      else expect(f[i]).toBeGreaterThan(1);
    }
  });
});
