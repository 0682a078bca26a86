// Test-only: a float64 forward pass of the tiny checkpoints with transformers' semantics, written
// from its modeling code for each class (Gemma, Gemma 2/3, Phi-3, GLM-4, Granite, OLMo 2) and run
// on the checkpoint's own tensors (Hugging Face names and layouts: fused qkv_proj / gate_up_proj
// split as transformers splits them, Gemma's (1 + w) norms, GLM's interleaved partial RoPE, …).
// Compared with llama.cpp on the converted file, it checks the facts the conversion relies on.
import type { HfTensor } from "./test-helpers.js";
import type { TinyCheckpoint } from "./tiny-checkpoint.js";

type Cfg = Record<string, unknown>;

const gelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
const silu = (x: number) => x / (1 + Math.exp(-x));

export class ArchReference {
  readonly #w: Map<string, HfTensor>;
  readonly #c: Cfg;
  readonly #cls: string;
  readonly #k: Float64Array[][] = [];
  readonly #v: Float64Array[][] = [];
  #pos = 0;
  readonly E: number;
  readonly H: number;
  readonly KV: number;
  readonly D: number;
  readonly L: number;

  constructor(ck: TinyCheckpoint) {
    this.#w = ck.tensors;
    this.#c = ck.case.config;
    this.#cls = ck.case.class;
    const n = (k: string, d?: number) => (typeof this.#c[k] === "number" ? (this.#c[k] as number) : d!);
    this.E = n("hidden_size");
    this.H = n("num_attention_heads");
    this.KV = n("num_key_value_heads", this.H);
    this.D = n("head_dim", this.E / this.H);
    this.L = n("num_hidden_layers");
    for (let l = 0; l < this.L; l++) {
      this.#k.push([]);
      this.#v.push([]);
    }
  }

  #num(k: string, d?: number): number {
    const v = this.#c[k];
    return typeof v === "number" ? v : d!;
  }

  get #gemma(): boolean {
    return this.#cls.startsWith("Gemma");
  }

  #t(name: string): HfTensor {
    const t = this.#w.get(name);
    if (!t) throw new Error(`reference: no tensor ${name}`);
    return t;
  }

  /** y = W x (+ b), W [rows, cols] row-major; `r0`/`r1` select rows (fused projections). */
  #mat(name: string, x: Float64Array, bias?: string, r0 = 0, r1?: number): Float64Array {
    const t = this.#t(name);
    const cols = t.shape[1]!;
    const end = r1 ?? t.shape[0]!;
    const y = new Float64Array(end - r0);
    const b = bias && this.#w.has(bias) ? this.#t(bias).values : undefined;
    for (let r = r0; r < end; r++) {
      let acc = 0;
      const o = r * cols;
      for (let c = 0; c < cols; c++) acc += t.values[o + c]! * x[c]!;
      y[r - r0] = acc + (b ? b[r]! : 0);
    }
    return y;
  }

  /** RMSNorm of x[off, off + n) by `w` ((1 + w) for Gemma). */
  #norm(x: Float64Array, name: string, off = 0, n = x.length): void {
    const w = this.#t(name).values;
    let ss = 0;
    for (let i = off; i < off + n; i++) ss += x[i]! * x[i]!;
    const s = 1 / Math.sqrt(ss / n + this.#num("rms_norm_eps"));
    for (let i = 0; i < n; i++) x[off + i] = x[off + i]! * s * (this.#gemma ? 1 + w[i]! : w[i]!);
  }

  /** Whether layer `l` uses sliding-window attention, and its window. */
  #window(l: number): number | undefined {
    const w = this.#num("sliding_window", 0);
    if (!w) return undefined;
    if (this.#cls === "Gemma2ForCausalLM") return l % 2 === 0 ? w : undefined;
    if (this.#cls === "Gemma3ForCausalLM")
      return (l + 1) % this.#num("sliding_window_pattern", 6) !== 0 ? w : undefined;
    return undefined; // Phi-3's window (2047, 262144) is longer than these prompts.
  }

  /** RoPE of one head at `pos` (in place), by the class's rule and the layer's base and scaling. */
  #rope(x: Float64Array, off: number, pos: number, l: number): void {
    const D = this.D;
    const rs = this.#c.rope_scaling as {
      rope_type?: string;
      type?: string;
      factor?: number;
      short_factor?: number[];
    } | null;
    let base = this.#num("rope_theta", 10000);
    let p = pos;
    let mscale = 1;
    let ext: number[] | undefined;
    const partial = this.#num("partial_rotary_factor", this.#cls === "Glm4ForCausalLM" ? 0.5 : 1);
    const rot = Math.floor(D * partial);
    if (this.#cls === "Gemma3ForCausalLM") {
      if (this.#window(l) !== undefined) base = this.#num("rope_local_base_freq", 10000);
      else if (rs && (rs.rope_type ?? rs.type) === "linear") p = pos / rs.factor!;
    }
    if (this.#cls === "Phi3ForCausalLM" && rs) {
      // LongRoPE below original_max_position_embeddings: the short factors, and the attention factor.
      ext = rs.short_factor!;
      const scale = this.#num("max_position_embeddings") / this.#num("original_max_position_embeddings");
      mscale =
        scale > 1
          ? Math.sqrt(1 + Math.log(scale) / Math.log(this.#num("original_max_position_embeddings")))
          : 1;
    }
    const half = rot / 2;
    const interleaved = this.#cls === "Glm4ForCausalLM";
    for (let i = 0; i < half; i++) {
      const inv = 1 / ((ext ? ext[i]! : 1) * base ** ((2 * i) / rot));
      const c = Math.cos(p * inv) * mscale;
      const s = Math.sin(p * inv) * mscale;
      const [ia, ib] = interleaved ? [off + 2 * i, off + 2 * i + 1] : [off + i, off + i + half];
      const a = x[ia]!;
      const b = x[ib]!;
      x[ia] = a * c - b * s;
      x[ib] = b * c + a * s;
    }
  }

  /** Feeds `tokens`; returns the logits after the last. */
  eval(tokens: number[]): Float64Array {
    let out: Float64Array = new Float64Array(0);
    for (const t of tokens) out = this.#step(t);
    return out;
  }

  #step(token: number): Float64Array {
    const { E, H, KV, D, L } = this;
    const cls = this.#cls;
    const emb = this.#t("model.embed_tokens.weight");
    const x = Float64Array.from(emb.values.subarray(token * E, (token + 1) * E));
    if (this.#gemma) {
      const normalizer = Math.fround(Math.sqrt(E)); // transformers casts √E to the hidden dtype
      for (let i = 0; i < E; i++) x[i] = x[i]! * normalizer;
    }
    if (cls === "GraniteForCausalLM")
      for (let i = 0; i < E; i++) x[i] = x[i]! * this.#num("embedding_multiplier");
    const residual = cls === "GraniteForCausalLM" ? this.#num("residual_multiplier") : 1;
    const pos = this.#pos++;
    const nQ = H * D;
    const nKv = KV * D;
    for (let l = 0; l < L; l++) {
      const p = `model.layers.${l}.`;
      const h = Float64Array.from(x);
      if (cls !== "Olmo2ForCausalLM") this.#norm(h, `${p}input_layernorm.weight`);
      let q: Float64Array;
      let k: Float64Array;
      let v: Float64Array;
      if (cls === "Phi3ForCausalLM") {
        q = this.#mat(`${p}self_attn.qkv_proj.weight`, h, undefined, 0, nQ);
        k = this.#mat(`${p}self_attn.qkv_proj.weight`, h, undefined, nQ, nQ + nKv);
        v = this.#mat(`${p}self_attn.qkv_proj.weight`, h, undefined, nQ + nKv, nQ + 2 * nKv);
      } else {
        q = this.#mat(`${p}self_attn.q_proj.weight`, h, `${p}self_attn.q_proj.bias`);
        k = this.#mat(`${p}self_attn.k_proj.weight`, h, `${p}self_attn.k_proj.bias`);
        v = this.#mat(`${p}self_attn.v_proj.weight`, h, `${p}self_attn.v_proj.bias`);
      }
      if (cls === "Olmo2ForCausalLM") {
        this.#norm(q, `${p}self_attn.q_norm.weight`);
        this.#norm(k, `${p}self_attn.k_norm.weight`);
      }
      if (cls === "Gemma3ForCausalLM") {
        for (let i = 0; i < H; i++) this.#norm(q, `${p}self_attn.q_norm.weight`, i * D, D);
        for (let i = 0; i < KV; i++) this.#norm(k, `${p}self_attn.k_norm.weight`, i * D, D);
      }
      for (let i = 0; i < H; i++) this.#rope(q, i * D, pos, l);
      for (let i = 0; i < KV; i++) this.#rope(k, i * D, pos, l);
      this.#k[l]!.push(k);
      this.#v[l]!.push(v);
      const scale =
        cls.startsWith("Gemma2") || cls.startsWith("Gemma3")
          ? this.#num("query_pre_attn_scalar") ** -0.5
          : cls === "GraniteForCausalLM"
            ? this.#num("attention_multiplier")
            : 1 / Math.sqrt(D);
      const cap = cls === "Gemma2ForCausalLM" ? this.#num("attn_logit_softcapping") : 0;
      const win = this.#window(l);
      const att = new Float64Array(nQ);
      const group = H / KV;
      const first = win === undefined ? 0 : Math.max(0, pos - win + 1);
      for (let hh = 0; hh < H; hh++) {
        const kv = Math.floor(hh / group);
        const scores: number[] = [];
        for (let j = first; j <= pos; j++) {
          const kk = this.#k[l]![j]!;
          let acc = 0;
          for (let i = 0; i < D; i++) acc += q[hh * D + i]! * kk[kv * D + i]!;
          acc *= scale;
          scores.push(cap ? Math.tanh(acc / cap) * cap : acc);
        }
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let j = first; j <= pos; j++) {
          const vv = this.#v[l]![j]!;
          const wgt = e[j - first]! / z;
          for (let i = 0; i < D; i++) att[hh * D + i] = att[hh * D + i]! + wgt * vv[kv * D + i]!;
        }
      }
      const o = this.#mat(`${p}self_attn.o_proj.weight`, att);
      if (cls === "Gemma2ForCausalLM" || cls === "Gemma3ForCausalLM" || cls === "Olmo2ForCausalLM")
        this.#norm(o, `${p}post_attention_layernorm.weight`);
      if (cls === "Glm4ForCausalLM") this.#norm(o, `${p}post_self_attn_layernorm.weight`);
      for (let i = 0; i < E; i++) x[i] = x[i]! + residual * o[i]!;

      const h2 = Float64Array.from(x);
      if (cls === "Gemma2ForCausalLM" || cls === "Gemma3ForCausalLM")
        this.#norm(h2, `${p}pre_feedforward_layernorm.weight`);
      else if (cls !== "Olmo2ForCausalLM") this.#norm(h2, `${p}post_attention_layernorm.weight`);
      const F = this.#num("intermediate_size");
      const fused = cls === "Phi3ForCausalLM" || cls === "Glm4ForCausalLM";
      const g = fused
        ? this.#mat(`${p}mlp.gate_up_proj.weight`, h2, undefined, 0, F)
        : this.#mat(`${p}mlp.gate_proj.weight`, h2);
      const u = fused
        ? this.#mat(`${p}mlp.gate_up_proj.weight`, h2, undefined, F, 2 * F)
        : this.#mat(`${p}mlp.up_proj.weight`, h2);
      const act = this.#gemma ? gelu : silu;
      for (let i = 0; i < F; i++) g[i] = act(g[i]!) * u[i]!;
      const dn = this.#mat(`${p}mlp.down_proj.weight`, g);
      if (cls === "Gemma2ForCausalLM" || cls === "Gemma3ForCausalLM" || cls === "Olmo2ForCausalLM")
        this.#norm(dn, `${p}post_feedforward_layernorm.weight`);
      if (cls === "Glm4ForCausalLM") this.#norm(dn, `${p}post_mlp_layernorm.weight`);
      for (let i = 0; i < E; i++) x[i] = x[i]! + residual * dn[i]!;
    }
    this.#norm(x, "model.norm.weight");
    const logits = this.#mat(
      this.#c.tie_word_embeddings === true ? "model.embed_tokens.weight" : "lm_head.weight",
      x,
    );
    if (cls === "GraniteForCausalLM")
      for (let i = 0; i < logits.length; i++) logits[i] = logits[i]! / this.#num("logits_scaling");
    const finalCap = this.#num("final_logit_softcapping", 0);
    if (finalCap)
      for (let i = 0; i < logits.length; i++) logits[i] = Math.tanh(logits[i]! / finalCap) * finalCap;
    return logits;
  }
}
