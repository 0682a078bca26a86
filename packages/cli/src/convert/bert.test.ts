// The BERT-family conversions' layout, checked against llama.cpp's written out here independently
// of archs/*.ts (from its convert_hf_to_gguf.py BertModel / XLMRobertaModel / NomicBertModel,
// gguf-py's tensor names and llama.cpp's loader): the `<arch>.*` and `tokenizer.*` keys and their
// values, every tensor's name, dims, type and values; then the refusals.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dequantize, GgmlType, type GgufFile, readGguf, readTensorData } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertCheckpoint } from "./convert.js";
import { ConvertError } from "./errors.js";
import { roundTo } from "./test-helpers.js";
import { writeJson } from "./test-tokenizers.js";
import { TINY_UNIGRAM, TINY_WORDPIECE, tinyCharsmap, unigramTokenizerJson } from "./test-tokenizers-bert.js";
import { type TinyBertCheckpoint, type TinyBertOptions, tinyBertCheckpoint } from "./tiny-bert.js";

let tmp = "";
let n = 0;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-bert-layout-"));
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function converted(
  name: string,
  type = "f16",
  o: TinyBertOptions = {},
  after?: (dir: string) => void,
): Promise<{ ck: TinyBertCheckpoint; file: GgufFile; notes: string[] }> {
  const dir = join(tmp, `${name}-${n++}`);
  const ck = await tinyBertCheckpoint(name, dir, o);
  after?.(dir);
  const out = `${dir}.gguf`;
  const s = await convertCheckpoint(dir, out, { type });
  return { ck, file: await readGguf(out), notes: s.notes };
}

async function refused(
  name: string,
  o: TinyBertOptions,
  after?: (dir: string) => void,
): Promise<ConvertError> {
  try {
    await converted(name, "f16", o, after);
  } catch (e) {
    if (e instanceof ConvertError) return e;
    throw e;
  }
  throw new Error("the conversion was not refused");
}

/** Appends an I64 tensor to a safetensors file (as transformers < 4.31 saved BERT's position_ids buffer). */
function appendI64(path: string, name: string, values: number[]): void {
  const buf = readFileSync(path);
  const len = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + len).toString("utf8")) as Record<string, unknown>;
  const data = buf.subarray(8 + len);
  const extra = Buffer.alloc(8 * values.length);
  values.forEach((v, i) => {
    extra.writeBigInt64LE(BigInt(v), 8 * i);
  });
  header[name] = {
    dtype: "I64",
    shape: [1, values.length],
    data_offsets: [data.length, data.length + extra.length],
  };
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  writeFileSync(path, Buffer.concat([head, Buffer.from(json), data, extra]));
}

async function valuesOf(file: GgufFile, name: string): Promise<Float32Array> {
  const t = file.tensors.find((x) => x.name === name);
  if (!t) throw new Error(`no tensor ${name}`);
  return dequantize(t.type, await readTensorData(file, t), t.nElements);
}

/** llama.cpp's BERT tensor names for a Hugging Face BertModel / XLMRobertaModel tensor. */
function bertName(hf: string): string {
  const top: Record<string, string> = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
  };
  if (top[hf]) return top[hf];
  const m = hf.match(/^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$/);
  if (!m) throw new Error(hf);
  const names: Record<string, string> = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
  };
  return `blk.${m[1]}.${names[m[2]!]}.${m[3]}`;
}

/** The phantom-space form llama.cpp's BERT converter gives a WordPiece token of type `type`. */
const phantom = (t: string, type: number) =>
  type === 3 ? t : t.startsWith("##") ? t.slice(2) : `\u2581${t}`;
const WP_SPECIAL = new Set(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]);

describe("BertModel → bert", () => {
  it("writes llama.cpp's bert keys: counts, LayerNorm epsilon, non-causal attention, mean pooling from modules.json", async () => {
    const { file } = await converted("bert");
    const md = file.metadata;
    expect(md.string("general.architecture")).toBe("bert");
    expect(md.value("bert.block_count")).toBe(2);
    expect(md.value("bert.context_length")).toBe(64);
    expect(md.value("bert.embedding_length")).toBe(32);
    expect(md.value("bert.feed_forward_length")).toBe(64);
    expect(md.value("bert.attention.head_count")).toBe(4);
    expect(md.value("bert.attention.layer_norm_epsilon")).toBe(Math.fround(1e-12));
    expect(md.value("bert.attention.causal")).toBe(false);
    expect(md.value("bert.pooling_type")).toBe(1);
    for (const k of ["bert.attention.head_count_kv", "bert.rope.freq_base", "bert.classifier.output_labels"])
      expect(md.has(k), k).toBe(false);
  });

  it("writes the WordPiece vocabulary in phantom-space form with BERT's special tokens and flags", async () => {
    const { file } = await converted("bert");
    const md = file.metadata;
    const types = TINY_WORDPIECE.map((t) => (WP_SPECIAL.has(t) ? 3 : 1));
    expect(md.string("tokenizer.ggml.model")).toBe("bert");
    expect(md.value("tokenizer.ggml.token_type_count")).toBe(2);
    expect(md.stringArray("tokenizer.ggml.tokens")).toEqual(
      TINY_WORDPIECE.map((t, i) => phantom(t, types[i]!)),
    );
    expect(Array.from(md.optNumberArray("tokenizer.ggml.token_type")!)).toEqual(types);
    const id = (t: string) => TINY_WORDPIECE.indexOf(t);
    expect(md.value("tokenizer.ggml.bos_token_id")).toBe(id("[CLS]"));
    expect(md.value("tokenizer.ggml.eos_token_id")).toBe(id("[SEP]"));
    expect(md.value("tokenizer.ggml.cls_token_id")).toBe(id("[CLS]"));
    expect(md.value("tokenizer.ggml.seperator_token_id")).toBe(id("[SEP]"));
    expect(md.value("tokenizer.ggml.unknown_token_id")).toBe(id("[UNK]"));
    expect(md.value("tokenizer.ggml.padding_token_id")).toBe(id("[PAD]"));
    expect(md.value("tokenizer.ggml.mask_token_id")).toBe(id("[MASK]"));
    // [CLS] A [SEP] B [SEP]: BOS and EOS around each text, no separator of its own between a pair.
    expect(md.value("tokenizer.ggml.add_bos_token")).toBe(true);
    expect(md.value("tokenizer.ggml.add_eos_token")).toBe(true);
    expect(md.value("tokenizer.ggml.add_sep_token")).toBe(false);
    expect(md.value("tokenizer.ggml.normalizer.lowercase")).toBe(true);
    expect(md.has("tokenizer.ggml.normalizer.strip_accents")).toBe(false);
  });

  it("writes every encoder tensor under llama.cpp's name, values as stored, position and token-type tables in F32", async () => {
    const { ck, file } = await converted("bert");
    const hf = [...ck.tensors.keys()].filter((k) => !k.startsWith("pooler."));
    expect(file.tensors.map((t) => t.name).sort()).toEqual(hf.map(bertName).sort());
    for (const name of hf) {
      const t = ck.tensors.get(name)!;
      const g = file.tensors.find((x) => x.name === bertName(name))!;
      expect([...g.dims], name).toEqual([...t.shape].reverse());
      const f32 = t.shape.length === 1 || /position_embeddings|token_type_embeddings/.test(name);
      expect(g.type, name).toBe(f32 ? GgmlType.F32 : GgmlType.F16);
      expect(await valuesOf(file, g.name)).toEqual(f32 ? t.values : roundTo(t.values, "F16"));
    }
  });

  it("drops the pooler with a note, and reads LayerNorm gamma/beta and vocab.txt alone (CLS pooling)", async () => {
    const { ck, file, notes } = await converted("bert-cls", "f32");
    expect(notes.some((x) => /skipped 2 tensors: the pooler/.test(x))).toBe(true);
    expect(file.metadata.value("bert.pooling_type")).toBe(2);
    expect(await valuesOf(file, "token_embd_norm.weight")).toEqual(
      ck.tensors.get("embeddings.LayerNorm.weight")!.values,
    );
    expect(await valuesOf(file, "blk.0.layer_output_norm.bias")).toEqual(
      ck.tensors.get("encoder.layer.0.output.LayerNorm.bias")!.values,
    );
    // vocab_size 170 > 167 tokens: [PADn], unused, in phantom form as llama.cpp writes them.
    const tokens = file.metadata.stringArray("tokenizer.ggml.tokens");
    expect(tokens.length).toBe(170);
    expect(tokens.slice(167)).toEqual(["\u2581[PAD167]", "\u2581[PAD168]", "\u2581[PAD169]"]);
    expect(Array.from(file.metadata.optNumberArray("tokenizer.ggml.token_type")!).slice(165)).toEqual([
      1, 1, 5, 5, 5,
    ]);
    expect(file.metadata.value("tokenizer.ggml.cls_token_id")).toBe(TINY_WORDPIECE.indexOf("[CLS]"));
    expect(file.metadata.value("tokenizer.ggml.bos_token_id")).toBe(TINY_WORDPIECE.indexOf("[CLS]"));
    expect(file.metadata.value("tokenizer.ggml.seperator_token_id")).toBe(TINY_WORDPIECE.indexOf("[SEP]"));
  });

  it("skips the I64 position_ids buffer older checkpoints carry, with a note; refuses an integer tensor it would convert", async () => {
    const { file, notes } = await converted("bert", "f32", {}, (dir) =>
      appendI64(join(dir, "model.safetensors"), "embeddings.position_ids", [...Array(64).keys()]),
    );
    expect(notes.some((x) => /skipped 1 tensor: the position id buffer/.test(x))).toBe(true);
    expect(file.tensors.length).toBe(5 + 2 * 16);
    const e = await refused("bert", {}, (dir) => {
      const path = join(dir, "model.safetensors");
      appendI64(path, "embeddings.word_embeddings.weight_int", [1]);
    });
    expect(e.code).toBe("UNKNOWN_TENSOR");
    const asInt = await refused(
      "bert",
      { saved: (ts) => ts.filter((t) => t.name !== "embeddings.LayerNorm.bias") },
      (dir) => appendI64(join(dir, "model.safetensors"), "embeddings.LayerNorm.bias", [...Array(32).keys()]),
    );
    expect(asInt.code).toBe("UNSUPPORTED_DTYPE");
    expect(asInt.message).toMatch(/is I64; only F32, F16 and BF16/);
  });

  it("BertForMaskedLM: the encoder under the bert. prefix, the masked-LM head skipped with a note", async () => {
    const { file, notes } = await converted(
      "bert",
      "f32",
      {
        saved: (ts) => [
          ...ts.filter((t) => !t.name.startsWith("pooler.")).map((t) => ({ ...t, name: `bert.${t.name}` })),
          { name: "cls.predictions.bias", shape: [167], values: new Float32Array(167) },
          { name: "cls.predictions.transform.dense.weight", shape: [32, 32], values: new Float32Array(1024) },
        ],
      },
      (dir) => {
        const cfg = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
        writeJson(join(dir, "config.json"), { ...cfg, architectures: ["BertForMaskedLM"] });
      },
    );
    expect(notes.some((x) => /skipped 2 tensors: the masked-LM and next-sentence heads/.test(x))).toBe(true);
    expect(file.tensors.some((t) => t.name.startsWith("cls"))).toBe(false);
    expect(file.tensors.length).toBe(5 + 2 * 16);
  });
});

describe("BertForSequenceClassification → bert with a RANK head", () => {
  it("writes the pooler as cls and the classifier as cls.output, the labels, RANK pooling", async () => {
    const { ck, file } = await converted("bert-reranker", "f32");
    const md = file.metadata;
    expect(md.value("bert.pooling_type")).toBe(4);
    expect(md.stringArray("bert.classifier.output_labels")).toEqual(["LABEL_0"]);
    const same = async (gguf: string, hf: string, dims: number[]) => {
      const t = file.tensors.find((x) => x.name === gguf)!;
      expect([...t.dims], gguf).toEqual(dims);
      expect(await valuesOf(file, gguf)).toEqual(ck.tensors.get(hf)!.values);
    };
    await same("cls.weight", "bert.pooler.dense.weight", [32, 32]);
    await same("cls.bias", "bert.pooler.dense.bias", [32]);
    await same("cls.output.weight", "classifier.weight", [32, 1]);
    await same("cls.output.bias", "classifier.bias", [1]);
    await same("token_embd.weight", "bert.embeddings.word_embeddings.weight", [32, 167]);
  });
});

describe("XLMRobertaModel → bert with a Unigram (t5) vocabulary", () => {
  it("drops the first pad_token_id + 1 rows of the position table and shortens context_length by as many", async () => {
    const { ck, file, notes } = await converted("xlm-roberta", "f32");
    expect(file.metadata.value("bert.context_length")).toBe(66 - 2);
    const pos = ck.tensors.get("embeddings.position_embeddings.weight")!;
    const t = file.tensors.find((x) => x.name === "position_embd.weight")!;
    expect([...t.dims]).toEqual([32, 64]);
    expect(await valuesOf(file, "position_embd.weight")).toEqual(pos.values.subarray(2 * 32));
    expect(notes.some((x) => /dropped the first 2 of 66 rows/.test(x))).toBe(true);
    expect(file.metadata.value("bert.attention.layer_norm_epsilon")).toBe(Math.fround(1e-5));
    expect(file.metadata.value("bert.pooling_type")).toBe(2);
    expect(file.tensors.find((x) => x.name === "token_types.weight")!.dims).toEqual([32, 1]);
  });

  it("writes the pieces, scores and types, the charsmap, the prefix and whitespace flags, RoBERTa's specials", async () => {
    const { file } = await converted("xlm-roberta-reranker", "f32");
    const md = file.metadata;
    const pieces = TINY_UNIGRAM.map(([p]) => p);
    expect(md.string("tokenizer.ggml.model")).toBe("t5");
    expect(md.string("tokenizer.ggml.pre")).toBe("default");
    // vocab_size 202 > 199 pieces: [PADn] at -10000, unused.
    expect(md.stringArray("tokenizer.ggml.tokens")).toEqual([...pieces, "[PAD199]", "[PAD200]", "[PAD201]"]);
    expect(Array.from(md.optNumberArray("tokenizer.ggml.scores")!)).toEqual([
      ...TINY_UNIGRAM.map(([, s]) => Math.fround(s)),
      -10000,
      -10000,
      -10000,
    ]);
    const types = pieces.map((p) =>
      p === "<unk>" ? 2 : ["<s>", "<pad>", "</s>", "<mask>"].includes(p) ? 3 : 1,
    );
    expect(Array.from(md.optNumberArray("tokenizer.ggml.token_type")!)).toEqual([...types, 5, 5, 5]);
    expect(md.value("tokenizer.ggml.precompiled_charsmap")).toEqual(tinyCharsmap());
    expect(md.value("tokenizer.ggml.add_space_prefix")).toBe(true);
    expect(md.value("tokenizer.ggml.remove_extra_whitespaces")).toBe(true);
    expect(md.value("tokenizer.ggml.token_type_count")).toBe(1);
    const ids = {
      bos_token_id: 0,
      eos_token_id: 2,
      unknown_token_id: 3,
      seperator_token_id: 2,
      padding_token_id: 1,
      cls_token_id: 0,
      mask_token_id: pieces.indexOf("<mask>"),
    };
    for (const [k, v] of Object.entries(ids)) expect(md.value(`tokenizer.ggml.${k}`), k).toBe(v);
    // RobertaProcessing: <s> A </s></s> B </s>.
    for (const k of ["bos", "eos", "sep"]) expect(md.value(`tokenizer.ggml.add_${k}_token`), k).toBe(true);
  });

  it("XLMRobertaForSequenceClassification: classifier.dense as cls, out_proj as cls.output, no pooler", async () => {
    const { ck, file } = await converted("xlm-roberta-reranker", "f32");
    expect(file.metadata.value("bert.pooling_type")).toBe(4);
    expect(await valuesOf(file, "cls.weight")).toEqual(ck.tensors.get("classifier.dense.weight")!.values);
    expect(await valuesOf(file, "cls.output.weight")).toEqual(
      ck.tensors.get("classifier.out_proj.weight")!.values,
    );
    expect(await valuesOf(file, "cls.output.bias")).toEqual(
      ck.tensors.get("classifier.out_proj.bias")!.values,
    );
    expect(await valuesOf(file, "blk.0.attn_q.weight")).toEqual(
      ck.tensors.get("roberta.encoder.layer.0.attention.self.query.weight")!.values,
    );
  });
});

describe("NomicBertModel → nomic-bert", () => {
  it("writes the keys (context 2048, rope base) and the fused Wqkv, fc11 up, fc12 gate, fc2 down, no position table", async () => {
    const { ck, file } = await converted("nomic-bert", "f32");
    const md = file.metadata;
    expect(md.string("general.architecture")).toBe("nomic-bert");
    const keys: Record<string, unknown> = {
      "nomic-bert.block_count": 2,
      "nomic-bert.context_length": 2048,
      "nomic-bert.embedding_length": 32,
      "nomic-bert.feed_forward_length": 48,
      "nomic-bert.attention.head_count": 4,
      "nomic-bert.rope.freq_base": 1000,
      "nomic-bert.attention.layer_norm_epsilon": Math.fround(1e-12),
      "nomic-bert.attention.causal": false,
      "nomic-bert.pooling_type": 1,
      "tokenizer.ggml.model": "bert",
      "tokenizer.ggml.token_type_count": 2,
    };
    for (const [k, v] of Object.entries(keys)) expect(md.value(k), k).toBe(v);
    const map: [string, string][] = [
      ["embeddings.word_embeddings.weight", "token_embd.weight"],
      ["embeddings.token_type_embeddings.weight", "token_types.weight"],
      ["emb_ln.weight", "token_embd_norm.weight"],
      ["emb_ln.bias", "token_embd_norm.bias"],
    ];
    for (let i = 0; i < 2; i++) {
      const p = `encoder.layers.${i}.`;
      map.push(
        [`${p}attn.Wqkv.weight`, `blk.${i}.attn_qkv.weight`],
        [`${p}attn.out_proj.weight`, `blk.${i}.attn_output.weight`],
        [`${p}norm1.weight`, `blk.${i}.attn_output_norm.weight`],
        [`${p}norm1.bias`, `blk.${i}.attn_output_norm.bias`],
        [`${p}mlp.fc11.weight`, `blk.${i}.ffn_up.weight`],
        [`${p}mlp.fc12.weight`, `blk.${i}.ffn_gate.weight`],
        [`${p}mlp.fc2.weight`, `blk.${i}.ffn_down.weight`],
        [`${p}norm2.weight`, `blk.${i}.layer_output_norm.weight`],
        [`${p}norm2.bias`, `blk.${i}.layer_output_norm.bias`],
      );
    }
    expect(file.tensors.map((t) => t.name).sort()).toEqual(map.map(([, g]) => g).sort());
    for (const [h, g] of map) expect(await valuesOf(file, g), g).toEqual(ck.tensors.get(h)!.values);
    expect(file.tensors.find((t) => t.name === "blk.0.attn_qkv.weight")!.dims).toEqual([32, 96]);
  });
});

describe("refusals", () => {
  it("a pooling llama.cpp has no type for", async () => {
    const e = await refused("bert", {}, (dir) =>
      writeJson(join(dir, "1_Pooling", "config.json"), { pooling_mode_max_tokens: true }),
    );
    expect(e.code).toBe("UNSUPPORTED_CONFIG");
    expect(e.message).toMatch(/pooling_mode_max_tokens.*supported: pooling_mode_mean_tokens/);
  });

  it("an activation or position embedding llama.cpp's BERT does not have", async () => {
    const act = await refused("bert", {
      edit: (c) => {
        c.hidden_act = "relu";
      },
    });
    expect(act.code).toBe("UNSUPPORTED_CONFIG");
    expect(act.message).toMatch(/hidden_act "relu".*supported: gelu/);
    const pos = await refused("bert", {
      edit: (c) => {
        c.position_embedding_type = "relative_key";
      },
    });
    expect(pos.code).toBe("UNSUPPORTED_CONFIG");
  });

  it("a nomic config llama.cpp's converter rejects", async () => {
    const pre = await refused("nomic-bert", {
      edit: (c) => {
        c.prenorm = true;
      },
    });
    expect(pre.code).toBe("UNSUPPORTED_CONFIG");
    expect(pre.message).toMatch(/prenorm true/);
    const ctx = await refused("nomic-bert", {
      edit: (c) => {
        c.n_positions = 2048;
      },
    });
    expect(ctx.message).toMatch(/n_positions 2048 with max_trained_positions 2048/);
  });

  it("a WordPiece checkpoint whose tokenizer.json is not WordPiece, a Unigram one with other normalizers", async () => {
    const bpe = await refused("bert", {}, (dir) =>
      writeJson(join(dir, "tokenizer.json"), { model: { type: "BPE", vocab: {}, merges: [] } }),
    );
    expect(bpe.code).toBe("UNSUPPORTED_TOKENIZER");
    expect(bpe.message).toMatch(/"BPE" is not WordPiece/);
    const nfkc = await refused("xlm-roberta", {}, (dir) => {
      const tj = unigramTokenizerJson(TINY_UNIGRAM);
      tj.normalizer = { type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Lowercase" }] };
      writeJson(join(dir, "tokenizer.json"), tj);
    });
    expect(nfkc.code).toBe("UNSUPPORTED_TOKENIZER");
    expect(nfkc.message).toMatch(/"NFKC"/);
  });

  it("an XLM-R checkpoint with only sentencepiece.bpe.model", async () => {
    const e = await refused("xlm-roberta", {}, (dir) => {
      rmSync(join(dir, "tokenizer.json"));
      writeFileSync(join(dir, "sentencepiece.bpe.model"), new Uint8Array(4));
    });
    expect(e.code).toBe("UNSUPPORTED_TOKENIZER");
  });

  it("a reranker without its pooler, a position table of the wrong length", async () => {
    const noPooler = await refused("bert-reranker", {
      saved: (ts) => ts.filter((t) => !t.name.startsWith("bert.pooler.")),
    });
    expect(noPooler.code).toBe("MISSING_TENSOR");
    expect(noPooler.message).toMatch(/pooler\.dense\.weight/);
    const short = await refused("xlm-roberta", {
      saved: (ts) =>
        ts.map((t) =>
          t.name === "embeddings.position_embeddings.weight"
            ? { ...t, shape: [64, 32], values: t.values.subarray(0, 64 * 32) }
            : t,
        ),
    });
    expect(short.code).toBe("BAD_SHAPE");
  });
});
