import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixturesDir } from "../fixtures-dir.js";
import {
  dequantize,
  encodeGguf,
  GgmlType,
  GgufMetadata,
  GgufValueType,
  parseGguf,
  readGgufSync,
  synthesizeModel,
} from "../index.js";

/** A vocabulary of n placeholder tokens, to count parameters at a model's real vocabulary size. */
function vocabOf(n: number): GgufMetadata {
  const tokens = Array.from({ length: n }, (_, i) => `t${i}`);
  return new GgufMetadata([
    { key: "tokenizer.ggml.model", type: GgufValueType.STRING, value: "gpt2" },
    {
      key: "tokenizer.ggml.tokens",
      type: GgufValueType.ARRAY,
      value: { itemType: GgufValueType.STRING, items: tokens },
    },
  ]);
}

function paramCount(preset: string, nVocab: number, withoutOutput = false): number {
  const m = synthesizeModel({ preset, vocab: vocabOf(nVocab) });
  return m.tensors
    .filter((t) => !(withoutOutput && t.name === "output.weight"))
    .reduce((a, t) => a + t.dims.reduce((x, y) => x * y, 1), 0);
}

describe("presets match the published parameter counts of the models they imitate", () => {
  // Published totals (model cards / safetensors metadata). Qwen2-0.5B ties its embeddings; the
  // preset unties them, so its output matrix is left out of the comparison.
  it("qwen2-0.5b: 494,032,768 parameters besides the untied output", () => {
    expect(paramCount("qwen2-0.5b", 151936, true)).toBe(494_032_768);
  });
  it("qwen2-7b: 7,615,616,512 parameters with its 152,064-token vocabulary", () => {
    expect(paramCount("qwen2-7b", 152064)).toBe(7_615_616_512);
  });
  it("llama-1b (Llama 3.2 1B): 1,235,814,400", () => {
    expect(paramCount("llama-1b", 128256)).toBe(1_235_814_400);
  });
  it("llama-8b (Llama 3.1 8B): 8,030,261,248", () => {
    expect(paramCount("llama-8b", 128256)).toBe(8_030_261_248);
  });
  it("qwen3-0.6b: 0.44B parameters outside the embedding", () => {
    const nonEmbedding = paramCount("qwen3-0.6b", 151936) - 151936 * 1024;
    expect(nonEmbedding / 0.44e9).toBeGreaterThan(0.99);
    expect(nonEmbedding / 0.44e9).toBeLessThan(1.01);
  });
});

describe("synthesizeModel", () => {
  const vocabPath = join(fixturesDir(), "vocab/ggml-vocab-qwen2.gguf");

  async function materialize(m: ReturnType<typeof synthesizeModel>) {
    const tensors = [];
    for (const t of m.tensors) {
      const chunks: Uint8Array[] = [];
      for await (const c of (t.data as () => AsyncIterable<Uint8Array>)()) chunks.push(c);
      tensors.push({ ...t, data: Buffer.concat(chunks) });
    }
    return parseGguf(encodeGguf(m.metadata, tensors));
  }

  it("writes a tiny qwen3 with q/k norms, the vocabulary's tokenizer and N(0, 0.02) weights", async () => {
    const vocab = readGgufSync(vocabPath).metadata;
    const m = synthesizeModel({ preset: "tiny", arch: "qwen3", type: "f32", vocab, seed: 7 });
    const g = await materialize(m);
    const md = g.metadata;
    expect(md.architecture).toBe("qwen3");
    expect(md.archInteger("block_count")).toBe(2);
    expect(md.archInteger("embedding_length")).toBe(64);
    expect(md.stringArray("tokenizer.ggml.tokens").length).toBe(151936);
    expect(md.string("tokenizer.ggml.pre")).toBe("qwen2");
    const names = g.tensors.map((t) => t.name);
    expect(names).toContain("blk.1.attn_q_norm.weight");
    expect(names).not.toContain("blk.0.attn_q.bias");
    const q = m.tensors.find((t) => t.name === "blk.0.attn_q.weight")!;
    expect(q.dims).toEqual([64, 64]);
    const emb = g.tensors.find((t) => t.name === "token_embd.weight")!;
    expect(emb.dims).toEqual([64, 151936]);
    const chunks: Uint8Array[] = [];
    for await (const c of (m.tensors[0]!.data as () => AsyncIterable<Uint8Array>)()) chunks.push(c);
    const w = dequantize(GgmlType.F32, Buffer.concat(chunks), emb.nElements);
    let sum = 0;
    let sq = 0;
    for (const x of w) {
      sum += x;
      sq += x * x;
    }
    const mean = sum / w.length;
    expect(Math.abs(mean)).toBeLessThan(1e-3);
    expect(Math.sqrt(sq / w.length - mean * mean)).toBeCloseTo(0.02, 3);
  });

  it("is reproducible for a seed and differs across seeds", async () => {
    const a = await materialize(synthesizeModel({ preset: "tiny", arch: "llama", type: "q8_0", seed: 3 }));
    const b = await materialize(synthesizeModel({ preset: "tiny", arch: "llama", type: "q8_0", seed: 3 }));
    const c = await materialize(synthesizeModel({ preset: "tiny", arch: "llama", type: "q8_0", seed: 4 }));
    expect(a.tensors.map((t) => t.typeName)).toContain("Q8_0");
    const bytesOf = (g: typeof a) => JSON.stringify(g.tensors.map((t) => [t.name, t.typeName, t.dims]));
    expect(bytesOf(a)).toBe(bytesOf(b));
    expect(a.metadata.stringArray("tokenizer.ggml.tokens").length).toBe(259);
    // Byte equality of the generated data:
    const dataOf = async (seed: number) => {
      const m = synthesizeModel({ preset: "tiny", arch: "llama", type: "q8_0", seed });
      const out: Uint8Array[] = [];
      for await (const chunk of (m.tensors[3]!.data as () => AsyncIterable<Uint8Array>)()) out.push(chunk);
      return Buffer.concat(out);
    };
    expect(Buffer.compare(await dataOf(3), await dataOf(3))).toBe(0);
    expect(Buffer.compare(await dataOf(3), await dataOf(4))).not.toBe(0);
    expect(c.tensors.length).toBe(a.tensors.length);
  });

  it("gives qwen2 its q/k/v biases and reports K-quant fallbacks", () => {
    const m = synthesizeModel({ preset: "qwen2-0.5b", type: "q4_k", vocab: vocabOf(151936) });
    expect(m.tensors.find((t) => t.name === "blk.0.attn_k.bias")?.dims).toEqual([128]);
    // 896 % 256 ≠ 0: llama.cpp's fallback for Q4_K is Q5_0
    expect(m.tensors.find((t) => t.name === "blk.0.attn_q.weight")?.type).toBe(GgmlType.Q5_0);
    expect(m.tensors.find((t) => t.name === "blk.0.ffn_down.weight")?.type).toBe(GgmlType.Q4_K); // 4864 = 19 × 256
    expect(m.notes.some((n) => n.startsWith("blk.0.attn_q.weight: rows of 896"))).toBe(true);
  });

  it("refuses unknown presets, architectures and mismatched pairs by name", () => {
    expect(() => synthesizeModel({ preset: "huge" })).toThrow(/unknown preset "huge"; presets: tiny/);
    expect(() => synthesizeModel({ preset: "tiny", arch: "gpt9" })).toThrow(/unknown architecture "gpt9"/);
    expect(() => synthesizeModel({ preset: "tiny" })).toThrow(/choose one with --arch/);
    expect(() => synthesizeModel({ preset: "qwen2-0.5b", arch: "llama" })).toThrow(/is a qwen2 model/);
    expect(() => synthesizeModel({ preset: "tiny", arch: "llama", type: "iq2_xxs" })).toThrow(
      /cannot write weights as IQ2_XXS/,
    );
  });
});
