// Test-only: a float64 forward pass of the tiny BERT-family checkpoints with transformers'
// semantics, written from its modeling code (BertModel, XLMRobertaModel, nomic's NomicBertModel)
// and run on the checkpoint's own tensors under their Hugging Face names: word + absolute position
// (XLM-R: padding_idx + 1 + i) + token-type embeddings, LayerNorm, post-LayerNorm blocks over the
// whole sequence (no causal mask), exact erf GELU (nomic: SwiGLU, NeoX rotary); then
// sentence-transformers' pooling (mean over every token, or the first) and L2 normalisation, or
// the classification head (BERT: pooler dense + tanh, classifier; XLM-R: dense + tanh, out_proj).
import type { HfTensor } from "./test-helpers.js";

type Cfg = Record<string, unknown>;

const SQRT_PI = Math.sqrt(Math.PI);

/**
 * erf to about 1e-15: its Maclaurin series below 2.5, above it 1 − erfc from erfc's continued
 * fraction (erfc x = e^(−x²)/√π · 1/(x + ½/(x + 1/(x + (3/2)/(x + …))))).
 */
export function erf(x: number): number {
  const a = Math.abs(x);
  if (a < 2.5) {
    let term = x;
    let sum = x;
    const x2 = x * x;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / SQRT_PI) * sum;
  }
  let f = a;
  for (let k = 80; k >= 1; k--) f = a + k / 2 / f;
  const erfc = Math.exp(-a * a) / (SQRT_PI * f);
  return Math.sign(x) * (1 - erfc);
}

/** transformers' "gelu": x · Φ(x) with the exact erf. */
export const geluErf = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));
const silu = (x: number) => x / (1 + Math.exp(-x));

/** What the reference needs of a tiny checkpoint. */
export interface BertReferenceInput {
  /** Hugging Face class (config.json `architectures`). */
  class: string;
  /** config.json as written. */
  config: Cfg;
  /** The checkpoint's tensors by Hugging Face name (values as stored). */
  tensors: Map<string, HfTensor>;
  /** sentence-transformers pooling of an embedding model. */
  pooling?: "mean" | "cls";
}

export class BertReference {
  readonly #w: Map<string, HfTensor>;
  readonly #c: Cfg;
  readonly #cls: string;
  readonly #prefix: string;
  readonly #nomic: boolean;
  readonly pooling: "mean" | "cls" | undefined;
  readonly E: number;
  readonly H: number;
  readonly L: number;

  constructor(ck: BertReferenceInput) {
    this.#w = ck.tensors;
    this.#c = ck.config;
    this.#cls = ck.class;
    this.#nomic = ck.class === "NomicBertModel";
    this.#prefix =
      ck.class === "BertForSequenceClassification"
        ? "bert."
        : ck.class === "XLMRobertaForSequenceClassification"
          ? "roberta."
          : "";
    this.pooling = ck.pooling;
    this.E = this.#num(this.#nomic ? "n_embd" : "hidden_size");
    this.H = this.#num(this.#nomic ? "n_head" : "num_attention_heads");
    this.L = this.#num(this.#nomic ? "n_layer" : "num_hidden_layers");
  }

  #num(k: string): number {
    const v = this.#c[k];
    if (typeof v !== "number") throw new Error(`reference: config has no ${k}`);
    return v;
  }

  #t(name: string, prefixed = true): Float32Array {
    const t = this.#w.get((prefixed ? this.#prefix : "") + name);
    if (!t) throw new Error(`reference: no tensor ${this.#prefix}${name}`);
    return t.values;
  }

  /** y = W x (+ b): W [rows, cols] row-major. */
  #linear(w: string, x: Float64Array, b?: string, prefixed = true): Float64Array {
    const W = this.#t(w, prefixed);
    const cols = x.length;
    const rows = W.length / cols;
    const B = b ? this.#t(b, prefixed) : undefined;
    const y = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let acc = B ? B[r]! : 0;
      const o = r * cols;
      for (let c = 0; c < cols; c++) acc += W[o + c]! * x[c]!;
      y[r] = acc;
    }
    return y;
  }

  #layerNorm(x: Float64Array, name: string): Float64Array {
    const eps = this.#num(this.#nomic ? "layer_norm_epsilon" : "layer_norm_eps");
    const w = this.#t(`${name}.weight`);
    const b = this.#t(`${name}.bias`);
    let mean = 0;
    for (const v of x) mean += v;
    mean /= x.length;
    let vr = 0;
    for (const v of x) vr += (v - mean) * (v - mean);
    vr /= x.length;
    const s = 1 / Math.sqrt(vr + eps);
    return x.map((v, i) => (v - mean) * s * w[i]! + b[i]!);
  }

  /** NeoX rotary of one head at `pos`: dimension i pairs with i + D/2. */
  #rotary(x: Float64Array, off: number, D: number, pos: number): void {
    const base = typeof this.#c.rotary_emb_base === "number" ? this.#c.rotary_emb_base : 10000;
    const half = D / 2;
    for (let i = 0; i < half; i++) {
      const ang = pos / base ** ((2 * i) / D);
      const c = Math.cos(ang);
      const s = Math.sin(ang);
      const a = x[off + i]!;
      const b = x[off + i + half]!;
      x[off + i] = a * c - b * s;
      x[off + i + half] = b * c + a * s;
    }
  }

  /** The last hidden state of every token of `ids` (token types `types`, default all 0). */
  hidden(ids: readonly number[], types?: readonly number[]): Float64Array[] {
    const { E, H } = this;
    const D = E / H;
    const n = ids.length;
    const word = this.#t("embeddings.word_embeddings.weight");
    const typeTable = this.#w.has(`${this.#prefix}embeddings.token_type_embeddings.weight`)
      ? this.#t("embeddings.token_type_embeddings.weight")
      : undefined;
    const xlmr = this.#cls.startsWith("XLMRoberta");
    const padding = xlmr ? this.#num("pad_token_id") : 0;
    let h: Float64Array[] = ids.map((id, i) => {
      const x = Float64Array.from(word.subarray(id * E, (id + 1) * E));
      if (typeTable) {
        const t = types?.[i] ?? 0;
        for (let k = 0; k < E; k++) x[k] = x[k]! + typeTable[t * E + k]!;
      }
      if (!this.#nomic) {
        // XLM-R numbers the positions of non-padding tokens from padding_idx + 1.
        const pos = xlmr ? padding + 1 + i : i;
        const table = this.#t("embeddings.position_embeddings.weight");
        for (let k = 0; k < E; k++) x[k] = x[k]! + table[pos * E + k]!;
      }
      return this.#layerNorm(x, this.#nomic ? "emb_ln" : "embeddings.LayerNorm");
    });
    for (let l = 0; l < this.L; l++) {
      const p = this.#nomic ? `encoder.layers.${l}.` : `encoder.layer.${l}.`;
      let q: Float64Array[];
      let k: Float64Array[];
      let v: Float64Array[];
      if (this.#nomic) {
        const qkv = h.map((x) => this.#linear(`${p}attn.Wqkv.weight`, x));
        q = qkv.map((y) => y.slice(0, E));
        k = qkv.map((y) => y.slice(E, 2 * E));
        v = qkv.map((y) => y.slice(2 * E));
        for (let i = 0; i < n; i++)
          for (let hh = 0; hh < H; hh++) {
            this.#rotary(q[i]!, hh * D, D, i);
            this.#rotary(k[i]!, hh * D, D, i);
          }
      } else {
        q = h.map((x) => this.#linear(`${p}attention.self.query.weight`, x, `${p}attention.self.query.bias`));
        k = h.map((x) => this.#linear(`${p}attention.self.key.weight`, x, `${p}attention.self.key.bias`));
        v = h.map((x) => this.#linear(`${p}attention.self.value.weight`, x, `${p}attention.self.value.bias`));
      }
      const ctx = h.map(() => new Float64Array(E));
      const scale = 1 / Math.sqrt(D);
      for (let i = 0; i < n; i++)
        for (let hh = 0; hh < H; hh++) {
          const scores = new Float64Array(n);
          for (let j = 0; j < n; j++) {
            let acc = 0;
            for (let d = 0; d < D; d++) acc += q[i]![hh * D + d]! * k[j]![hh * D + d]!;
            scores[j] = acc * scale;
          }
          const m = Math.max(...scores);
          let z = 0;
          for (let j = 0; j < n; j++) {
            scores[j] = Math.exp(scores[j]! - m);
            z += scores[j]!;
          }
          for (let j = 0; j < n; j++)
            for (let d = 0; d < D; d++)
              ctx[i]![hh * D + d] = ctx[i]![hh * D + d]! + (scores[j]! / z) * v[j]![hh * D + d]!;
        }
      const attn = ctx.map((c) =>
        this.#nomic
          ? this.#linear(`${p}attn.out_proj.weight`, c)
          : this.#linear(`${p}attention.output.dense.weight`, c, `${p}attention.output.dense.bias`),
      );
      const mid = h.map((x, i) =>
        this.#layerNorm(
          x.map((val, d) => val + attn[i]![d]!),
          this.#nomic ? `${p}norm1` : `${p}attention.output.LayerNorm`,
        ),
      );
      h = mid.map((x) => {
        let y: Float64Array;
        if (this.#nomic) {
          const up = this.#linear(`${p}mlp.fc11.weight`, x);
          const gate = this.#linear(`${p}mlp.fc12.weight`, x);
          y = this.#linear(
            `${p}mlp.fc2.weight`,
            up.map((u, i) => u * silu(gate[i]!)),
          );
        } else {
          const up = this.#linear(`${p}intermediate.dense.weight`, x, `${p}intermediate.dense.bias`).map(
            geluErf,
          );
          y = this.#linear(`${p}output.dense.weight`, up, `${p}output.dense.bias`);
        }
        return this.#layerNorm(
          x.map((val, d) => val + y[d]!),
          this.#nomic ? `${p}norm2` : `${p}output.LayerNorm`,
        );
      });
    }
    return h;
  }

  /** sentence-transformers' pooled vector (before normalisation). */
  pooled(ids: readonly number[]): Float64Array {
    const h = this.hidden(ids);
    if (this.pooling === "cls") return h[0]!;
    if (this.pooling !== "mean") throw new Error(`reference: ${this.#cls} has no embedding pooling`);
    const out = new Float64Array(this.E);
    for (const x of h) for (let d = 0; d < this.E; d++) out[d] = out[d]! + x[d]! / h.length;
    return out;
  }

  /** The pooled vector L2-normalised (sentence-transformers' Normalize module). */
  embedding(ids: readonly number[]): Float64Array {
    const p = this.pooled(ids);
    const norm = Math.hypot(...p);
    return p.map((v) => v / norm);
  }

  /** The classification head's logits on the first token (token types `types`, default all 0). */
  score(ids: readonly number[], types?: readonly number[]): Float64Array {
    const first = this.hidden(ids, types)[0]!;
    if (this.#cls === "BertForSequenceClassification") {
      const pooled = this.#linear("pooler.dense.weight", first, "pooler.dense.bias").map(Math.tanh);
      return this.#linear("classifier.weight", pooled, "classifier.bias", false);
    }
    if (this.#cls === "XLMRobertaForSequenceClassification") {
      const x = this.#linear("classifier.dense.weight", first, "classifier.dense.bias", false).map(Math.tanh);
      return this.#linear("classifier.out_proj.weight", x, "classifier.out_proj.bias", false);
    }
    throw new Error(`reference: ${this.#cls} has no classification head`);
  }
}
