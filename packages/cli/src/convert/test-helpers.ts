// Test-only: Hugging Face checkpoints written from scratch (a tiny safetensors writer, config.json,
// tokenizer.json made from a fixture GGUF vocabulary) and a float64 reference forward pass with
// Hugging Face's semantics (NeoX-style RoPE on the unpermuted weights).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { f32ToBf16, f32ToF16, readGguf } from "@minfer/gguf";

export type Dtype = "F32" | "F16" | "BF16";

export interface HfTensor {
  name: string;
  shape: number[];
  /** Values as the checkpoint holds them (already rounded to the dtype). */
  values: Float32Array;
}

/** Rounds `v` to `dtype` and back, so the test knows the exact stored values. */
export function roundTo(v: Float32Array, dtype: Dtype): Float32Array {
  if (dtype === "F32") return v;
  const b = encodeValues(v, dtype);
  const h = new Uint16Array(b.buffer);
  const out = new Float32Array(v.length);
  const dv = new DataView(new ArrayBuffer(4));
  for (let i = 0; i < v.length; i++) {
    if (dtype === "BF16") {
      dv.setUint32(0, h[i]! << 16, true);
      out[i] = dv.getFloat32(0, true);
    } else out[i] = f16(h[i]!);
  }
  return out;
}

function f16(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function encodeValues(v: Float32Array, dtype: Dtype): Uint8Array {
  if (dtype === "F32") return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  const h = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) h[i] = dtype === "BF16" ? f32ToBf16(v[i]!) : f32ToF16(v[i]!);
  return new Uint8Array(h.buffer);
}

/** Writes a safetensors file: 8-byte header length, JSON header, data (tensors in order). */
export function writeSafetensors(path: string, tensors: HfTensor[], dtype: Dtype): void {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const t of tensors) {
    const bytes = encodeValues(t.values, dtype);
    header[t.name] = { dtype, shape: t.shape, data_offsets: [at, at + bytes.length] };
    parts.push(bytes);
    at += bytes.length;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const head = new Uint8Array(8 + json.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  head.set(new TextEncoder().encode(json), 8);
  writeFileSync(path, Buffer.concat([head, ...parts]));
}

/** mulberry32 → standard normal (Box–Muller). */
export function normalRng(seed: number): () => number {
  let a = seed >>> 0;
  const u = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u() + 1e-12)) * Math.cos(2 * Math.PI * u());
}

/** Split regexes exactly as Hugging Face writes them in tokenizer.json. */
export const HF_SPLITS = {
  qwen2:
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  "llama-bpe":
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
} as const;
export type FixtureVocab = keyof typeof HF_SPLITS;

export interface FixtureTokenizer {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  nVocab: number;
  bos?: number;
  eos?: number;
  tokens: string[];
  types: number[];
  merges: string[];
}

/**
 * tokenizer.json / tokenizer_config.json in Hugging Face's format from a fixture GGUF vocabulary:
 * NORMAL tokens → model.vocab, CONTROL → added special tokens, USER_DEFINED → added non-special
 * ones, llama.cpp's `[PADn]` fillers left out (config.json's vocab_size brings them back).
 */
export async function tokenizerFromGguf(vocabPath: string, name: FixtureVocab): Promise<FixtureTokenizer> {
  const f = await readGguf(vocabPath);
  const md = f.metadata;
  const tokens = md.stringArray("tokenizer.ggml.tokens");
  const types = Array.from(md.optNumberArray("tokenizer.ggml.token_type")!);
  const merges = md.stringArray("tokenizer.ggml.merges");
  const vocab: Record<string, number> = {};
  const added: Record<string, unknown>[] = [];
  tokens.forEach((t, id) => {
    if (types[id] === 1) vocab[t] = id;
    else if (types[id] === 4 && /^\[PAD\d+\]$/.test(t)) return;
    else
      added.push({
        id,
        content: t,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: types[id] === 3,
      });
  });
  const llama3 = name === "llama-bpe";
  const tokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: llama3 ? null : { type: "NFC" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: HF_SPLITS[name] }, behavior: "Isolated", invert: false },
        {
          type: "ByteLevel",
          add_prefix_space: false,
          trim_offsets: llama3,
          use_regex: false,
        },
      ],
    },
    post_processor: llama3
      ? {
          type: "TemplateProcessing",
          single: [
            { SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } },
            { Sequence: { id: "A", type_id: 0 } },
          ],
          pair: [],
          special_tokens: {},
        }
      : { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: llama3 ? null : "",
      end_of_word_suffix: llama3 ? null : "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: llama3,
      vocab,
      // Llama 3's file has "a b" strings; newer files (Qwen3's) have [a, b] pairs: write both forms.
      merges: llama3 ? merges : merges.map((m) => m.split(" ")),
    },
  };
  const bos = md.optInteger("tokenizer.ggml.bos_token_id");
  const eos = md.optInteger("tokenizer.ggml.eos_token_id");
  const template = md.optString("tokenizer.chat_template");
  const tokenizerConfig: Record<string, unknown> = {
    bos_token: llama3 && bos !== undefined ? tokens[bos] : null,
    eos_token: eos !== undefined ? tokens[eos] : null,
    ...(llama3 ? {} : { pad_token: "<|endoftext|>", add_bos_token: false }),
    ...(template ? { chat_template: template } : {}),
  };
  return { tokenizerJson, tokenizerConfig, nVocab: tokens.length, bos, eos, tokens, types, merges };
}

export type Arch = "llama" | "qwen2" | "qwen3";

export interface Shape {
  nEmbd: number;
  nFf: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Write head_dim in config.json (qwen3 does). */
  explicitHeadDim: boolean;
  ropeTheta: number;
  rmsEps: number;
}

export const TINY: Shape = {
  nEmbd: 64,
  nFf: 96,
  nLayer: 2,
  nHead: 4,
  nHeadKv: 2,
  headDim: 16,
  explicitHeadDim: false,
  ropeTheta: 10000,
  rmsEps: 1e-6,
};

export interface Checkpoint {
  dir: string;
  arch: Arch;
  shape: Shape;
  nVocab: number;
  tied: boolean;
  tensors: Map<string, HfTensor>;
  tokenizer: FixtureTokenizer;
  config: Record<string, unknown>;
}

const CLASS: Record<Arch, string> = {
  llama: "LlamaForCausalLM",
  qwen2: "Qwen2ForCausalLM",
  qwen3: "Qwen3ForCausalLM",
};

/** The checkpoint's tensors with random values (std `std`; norms around 1). */
export function randomTensors(
  arch: Arch,
  s: Shape,
  nVocab: number,
  tied: boolean,
  seed: number,
  dtype: Dtype,
): HfTensor[] {
  const rnd = normalRng(seed);
  const out: HfTensor[] = [];
  const add = (name: string, shape: number[], std: number, mean = 0) => {
    const n = shape.reduce((a, d) => a * d, 1);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = mean + std * rnd();
    out.push({ name, shape, values: roundTo(v, dtype) });
  };
  const nQ = s.nHead * s.headDim;
  const nKv = s.nHeadKv * s.headDim;
  add("model.embed_tokens.weight", [nVocab, s.nEmbd], 0.5);
  for (let i = 0; i < s.nLayer; i++) {
    const p = `model.layers.${i}.`;
    add(`${p}input_layernorm.weight`, [s.nEmbd], 0.1, 1);
    add(`${p}self_attn.q_proj.weight`, [nQ, s.nEmbd], 0.2);
    add(`${p}self_attn.k_proj.weight`, [nKv, s.nEmbd], 0.2);
    add(`${p}self_attn.v_proj.weight`, [nKv, s.nEmbd], 0.2);
    if (arch === "qwen2") {
      add(`${p}self_attn.q_proj.bias`, [nQ], 0.2);
      add(`${p}self_attn.k_proj.bias`, [nKv], 0.2);
      add(`${p}self_attn.v_proj.bias`, [nKv], 0.2);
    }
    if (arch === "qwen3") {
      add(`${p}self_attn.q_norm.weight`, [s.headDim], 0.1, 1);
      add(`${p}self_attn.k_norm.weight`, [s.headDim], 0.1, 1);
    }
    add(`${p}self_attn.o_proj.weight`, [s.nEmbd, nQ], 0.1);
    add(`${p}post_attention_layernorm.weight`, [s.nEmbd], 0.1, 1);
    add(`${p}mlp.gate_proj.weight`, [s.nFf, s.nEmbd], 0.2);
    add(`${p}mlp.up_proj.weight`, [s.nFf, s.nEmbd], 0.2);
    add(`${p}mlp.down_proj.weight`, [s.nEmbd, s.nFf], 0.1);
  }
  add("model.norm.weight", [s.nEmbd], 0.1, 1);
  if (!tied) add("lm_head.weight", [nVocab, s.nEmbd], 0.3);
  return out;
}

export interface CheckpointOptions {
  arch: Arch;
  vocab: FixtureVocab;
  vocabPath: string;
  shape?: Shape;
  tied?: boolean;
  shards?: 1 | 2;
  dtype?: Dtype;
  seed?: number;
  /** Edits config.json before it is written. */
  editConfig?: (c: Record<string, unknown>) => void;
}

const tokenizerCache = new Map<string, Promise<FixtureTokenizer>>();

/** Writes a whole Hugging Face checkpoint into `dir`. */
export async function writeCheckpoint(dir: string, o: CheckpointOptions): Promise<Checkpoint> {
  mkdirSync(dir, { recursive: true });
  const s = o.shape ?? TINY;
  const tied = o.tied ?? false;
  const dtype = o.dtype ?? "F32";
  let tp = tokenizerCache.get(o.vocabPath);
  if (!tp) {
    tp = tokenizerFromGguf(o.vocabPath, o.vocab);
    tokenizerCache.set(o.vocabPath, tp);
  }
  const tok = await tp;
  const config: Record<string, unknown> = {
    architectures: [CLASS[o.arch]],
    model_type: o.arch,
    hidden_size: s.nEmbd,
    intermediate_size: s.nFf,
    num_hidden_layers: s.nLayer,
    num_attention_heads: s.nHead,
    num_key_value_heads: s.nHeadKv,
    ...(s.explicitHeadDim ? { head_dim: s.headDim } : {}),
    rms_norm_eps: s.rmsEps,
    rope_theta: s.ropeTheta,
    max_position_embeddings: 4096,
    vocab_size: tok.nVocab,
    tie_word_embeddings: tied,
    hidden_act: "silu",
    torch_dtype: dtype === "F32" ? "float32" : dtype === "F16" ? "float16" : "bfloat16",
    ...(tok.bos !== undefined ? { bos_token_id: tok.bos } : {}),
    ...(tok.eos !== undefined ? { eos_token_id: tok.eos } : {}),
  };
  o.editConfig?.(config);
  writeFileSync(join(dir, "config.json"), JSON.stringify(config, null, 2));
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(tok.tokenizerJson));
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(tok.tokenizerConfig, null, 2));
  const tensors = randomTensors(o.arch, s, tok.nVocab, tied, o.seed ?? 1, dtype);
  if ((o.shards ?? 1) === 1) writeSafetensors(join(dir, "model.safetensors"), tensors, dtype);
  else {
    const half = Math.ceil(tensors.length / 2);
    const shards = [tensors.slice(0, half), tensors.slice(half)];
    const weightMap: Record<string, string> = {};
    shards.forEach((part, i) => {
      const file = `model-0000${i + 1}-of-00002.safetensors`;
      writeSafetensors(join(dir, file), part, dtype);
      for (const t of part) weightMap[t.name] = file;
    });
    writeFileSync(
      join(dir, "model.safetensors.index.json"),
      JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }, null, 2),
    );
  }
  return {
    dir,
    arch: o.arch,
    shape: s,
    nVocab: tok.nVocab,
    tied,
    tensors: new Map(tensors.map((t) => [t.name, t])),
    tokenizer: tok,
    config,
  };
}

/** llama.cpp's tokenizer test vectors (`ggml-vocab-NAME.gguf.inp/.out`). */
export function testVectors(vocabPath: string): { text: string; ids: number[] }[] {
  const inputs = readFileSync(`${vocabPath}.inp`, "utf8").split("\n__ggml_vocab_test__\n");
  if (inputs.at(-1) === "" || inputs.at(-1) === "\n") inputs.pop();
  const outputs = readFileSync(`${vocabPath}.out`, "utf8").split("\n");
  if (outputs.at(-1) === "") outputs.pop();
  return inputs.map((text, i) => ({
    text,
    ids: outputs[i]!.trim() === "" ? [] : outputs[i]!.trim().split(/\s+/).map(Number),
  }));
}

/**
 * Float64 forward pass of the checkpoint with Hugging Face's semantics: RMSNorm, RoPE on the two
 * halves of each head (rotate_half), GQA attention, SwiGLU; qwen2 Q/K/V biases, qwen3 per-head
 * Q/K RMSNorm. Returns the logits of the last of `tokens` after feeding them all (no cache).
 */
export class HfReference {
  readonly #w: Map<string, HfTensor>;
  readonly #k: Float64Array[][] = [];
  readonly #v: Float64Array[][] = [];
  #pos = 0;
  constructor(readonly ck: Checkpoint) {
    this.#w = ck.tensors;
    for (let l = 0; l < ck.shape.nLayer; l++) {
      this.#k.push([]);
      this.#v.push([]);
    }
  }

  #mat(name: string, x: Float64Array, bias?: string): Float64Array {
    const t = this.#w.get(name)!;
    const [rows, cols] = t.shape as [number, number];
    const y = new Float64Array(rows);
    const b = bias ? this.#w.get(bias)?.values : undefined;
    for (let r = 0; r < rows; r++) {
      let acc = 0;
      const o = r * cols;
      for (let c = 0; c < cols; c++) acc += t.values[o + c]! * x[c]!;
      y[r] = acc + (b ? b[r]! : 0);
    }
    return y;
  }

  #norm(x: Float64Array, w: Float32Array, off = 0, n = x.length): void {
    let ss = 0;
    for (let i = off; i < off + n; i++) ss += x[i]! * x[i]!;
    const scale = 1 / Math.sqrt(ss / n + this.ck.shape.rmsEps);
    for (let i = 0; i < n; i++) x[off + i] = x[off + i]! * scale * w[i]!;
  }

  #rope(x: Float64Array, nHeads: number, pos: number): void {
    const d = this.ck.shape.headDim;
    const half = d / 2;
    for (let h = 0; h < nHeads; h++) {
      for (let i = 0; i < half; i++) {
        const theta = pos * this.ck.shape.ropeTheta ** ((-2 * i) / d);
        const c = Math.cos(theta);
        const s = Math.sin(theta);
        const a = x[h * d + i]!;
        const b = x[h * d + i + half]!;
        x[h * d + i] = a * c - b * s;
        x[h * d + i + half] = b * c + a * s;
      }
    }
  }

  /** Feeds `tokens`; returns the logits after the last one. */
  eval(tokens: number[]): Float64Array {
    let logits: Float64Array = new Float64Array(0);
    for (const t of tokens) logits = this.#step(t);
    return logits;
  }

  #step(token: number): Float64Array {
    const s = this.ck.shape;
    const a = this.ck.arch;
    const emb = this.#w.get("model.embed_tokens.weight")!;
    const x = Float64Array.from(emb.values.subarray(token * s.nEmbd, (token + 1) * s.nEmbd));
    const pos = this.#pos++;
    const d = s.headDim;
    for (let l = 0; l < s.nLayer; l++) {
      const p = `model.layers.${l}.`;
      const h = Float64Array.from(x);
      this.#norm(h, this.#w.get(`${p}input_layernorm.weight`)!.values);
      const bias = (n: string) => (a === "qwen2" ? `${p}self_attn.${n}_proj.bias` : undefined);
      const q = this.#mat(`${p}self_attn.q_proj.weight`, h, bias("q"));
      const k = this.#mat(`${p}self_attn.k_proj.weight`, h, bias("k"));
      const v = this.#mat(`${p}self_attn.v_proj.weight`, h, bias("v"));
      if (a === "qwen3") {
        for (let i = 0; i < s.nHead; i++)
          this.#norm(q, this.#w.get(`${p}self_attn.q_norm.weight`)!.values, i * d, d);
        for (let i = 0; i < s.nHeadKv; i++)
          this.#norm(k, this.#w.get(`${p}self_attn.k_norm.weight`)!.values, i * d, d);
      }
      this.#rope(q, s.nHead, pos);
      this.#rope(k, s.nHeadKv, pos);
      this.#k[l]!.push(k);
      this.#v[l]!.push(v);
      const att = new Float64Array(s.nHead * d);
      const group = s.nHead / s.nHeadKv;
      for (let hh = 0; hh < s.nHead; hh++) {
        const kv = Math.floor(hh / group);
        const scores = this.#k[l]!.map((kk) => {
          let acc = 0;
          for (let i = 0; i < d; i++) acc += q[hh * d + i]! * kk[kv * d + i]!;
          return acc / Math.sqrt(d);
        });
        const m = Math.max(...scores);
        const e = scores.map((sc) => Math.exp(sc - m));
        const z = e.reduce((x1, x2) => x1 + x2, 0);
        this.#v[l]!.forEach((vv, j) => {
          for (let i = 0; i < d; i++) att[hh * d + i] = att[hh * d + i]! + (e[j]! / z) * vv[kv * d + i]!;
        });
      }
      const o = this.#mat(`${p}self_attn.o_proj.weight`, att);
      for (let i = 0; i < s.nEmbd; i++) x[i] = x[i]! + o[i]!;
      const h2 = Float64Array.from(x);
      this.#norm(h2, this.#w.get(`${p}post_attention_layernorm.weight`)!.values);
      const g = this.#mat(`${p}mlp.gate_proj.weight`, h2);
      const u = this.#mat(`${p}mlp.up_proj.weight`, h2);
      for (let i = 0; i < g.length; i++) g[i] = (g[i]! / (1 + Math.exp(-g[i]!))) * u[i]!;
      const dn = this.#mat(`${p}mlp.down_proj.weight`, g);
      for (let i = 0; i < s.nEmbd; i++) x[i] = x[i]! + dn[i]!;
    }
    this.#norm(x, this.#w.get("model.norm.weight")!.values);
    return this.#mat(this.ck.tied ? "model.embed_tokens.weight" : "lm_head.weight", x);
  }
}
