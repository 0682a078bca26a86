// The bit layouts are checked against llama.cpp itself (through node-llama-cpp, which runs it from
// Node): a model whose only non-trivial tensors are a quantized token embedding and an F32 output
// matrix makes llama.cpp's next-token probabilities a direct function of the dequantized embedding
// row, which a float64 computation here reproduces from minfer's own dequantize.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  byteVocabulary,
  dequantize,
  encodeGguf,
  f32ToF16,
  GgmlType,
  type GgufKV,
  ggmlTypeByName,
  quantize,
  GgufValueType as T,
} from "./index.js";

type Llama = Awaited<ReturnType<typeof import("node-llama-cpp")["getLlama"]>>;
type Token = import("node-llama-cpp").Token;

const N_EMBD = 256; // one K-quant super-block per row
const N_VOCAB = 259; // byteVocabulary()
const EPS = 1e-5;
const TOKENS = [3, 70, 200, 258];

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

function normal(n: number, std: number, r: () => number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = std * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  return out;
}

/**
 * Embedding rows in `typeName`, quantized by minfer. For Q2_K and Q3_K the rows of the upper half
 * of the vocabulary (tokens 200 and 258 of TOKENS) are then replaced by random valid blocks, so
 * llama.cpp also decodes bit patterns minfer's quantizer would not write.
 */
function embeddingBytes(typeName: string, r: () => number): Uint8Array {
  const info = ggmlTypeByName(typeName);
  const bytes = quantize(info.id, normal(N_EMBD * N_VOCAB, 1, r));
  if (typeName !== "Q2_K" && typeName !== "Q3_K") return bytes;
  // Random bits are valid blocks once the f16 scales are sane (one block per row).
  const dv = new DataView(bytes.buffer);
  for (let b = (N_VOCAB >> 1) * info.typeSize; b < bytes.length; b += info.typeSize) {
    for (let j = 0; j < info.typeSize; j++) bytes[b + j] = (r() * 256) | 0;
    if (typeName === "Q2_K") {
      dv.setUint16(b + 80, f32ToF16(0.05 + r() * 0.1), true); // d
      dv.setUint16(b + 82, f32ToF16(r() * 0.1), true); // dmin
    } else {
      dv.setUint16(b + 108, f32ToF16(0.01 + r() * 0.05), true); // d
    }
  }
  return bytes;
}

const zeros = (n: number) => new Uint8Array(n * 4);
const f32 = (a: Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const u32 = (key: string, value: number): GgufKV => ({ key, type: T.UINT32, value });

/** A one-layer llama whose layer is the identity (all its weights zero). */
function modelFile(
  typeName: string,
  embedding: Uint8Array,
  output: Float32Array,
  norm: Float32Array,
): Uint8Array {
  const ffn = 256;
  const metadata: GgufKV[] = [
    { key: "general.architecture", type: T.STRING, value: "llama" },
    u32("llama.context_length", 64),
    u32("llama.embedding_length", N_EMBD),
    u32("llama.block_count", 1),
    u32("llama.feed_forward_length", ffn),
    u32("llama.attention.head_count", 4),
    u32("llama.attention.head_count_kv", 4),
    u32("llama.rope.dimension_count", N_EMBD / 4),
    { key: "llama.attention.layer_norm_rms_epsilon", type: T.FLOAT32, value: EPS },
    ...byteVocabulary(),
  ];
  const F = GgmlType.F32;
  const square = { type: F, dims: [N_EMBD, N_EMBD], data: zeros(N_EMBD * N_EMBD) };
  return encodeGguf(metadata, [
    {
      name: "token_embd.weight",
      type: ggmlTypeByName(typeName).id,
      dims: [N_EMBD, N_VOCAB],
      data: embedding,
    },
    { name: "output_norm.weight", type: F, dims: [N_EMBD], data: f32(norm) },
    { name: "output.weight", type: F, dims: [N_EMBD, N_VOCAB], data: f32(output) },
    { name: "blk.0.attn_norm.weight", type: F, dims: [N_EMBD], data: zeros(N_EMBD) },
    { name: "blk.0.attn_q.weight", ...square },
    { name: "blk.0.attn_k.weight", ...square },
    { name: "blk.0.attn_v.weight", ...square },
    { name: "blk.0.attn_output.weight", ...square },
    { name: "blk.0.ffn_norm.weight", type: F, dims: [N_EMBD], data: zeros(N_EMBD) },
    { name: "blk.0.ffn_gate.weight", type: F, dims: [N_EMBD, ffn], data: zeros(N_EMBD * ffn) },
    { name: "blk.0.ffn_up.weight", type: F, dims: [N_EMBD, ffn], data: zeros(N_EMBD * ffn) },
    { name: "blk.0.ffn_down.weight", type: F, dims: [ffn, N_EMBD], data: zeros(N_EMBD * ffn) },
  ]);
}

/** float64 next-token probabilities for an embedding row x: softmax(W · (rmsnorm(x) ⊙ g)). */
function referenceProbs(x: Float32Array, output: Float32Array, norm: Float32Array): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = 1 / Math.sqrt(ss / x.length + EPS);
  const logits = new Float64Array(N_VOCAB);
  for (let j = 0; j < N_VOCAB; j++) {
    let acc = 0;
    for (let i = 0; i < N_EMBD; i++) acc += output[j * N_EMBD + i]! * x[i]! * inv * norm[i]!;
    logits[j] = acc;
  }
  const max = Math.max(...logits);
  let sum = 0;
  for (let j = 0; j < N_VOCAB; j++) sum += logits[j] = Math.exp(logits[j]! - max);
  return logits.map((v) => v / sum);
}

let llama: Llama | undefined;
let unavailable = "";
const tmp = mkdtempSync(join(tmpdir(), "minfer-gguf-llamacpp-"));

beforeAll(async () => {
  try {
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  } catch (e) {
    unavailable = (e as Error).message;
  }
}, 60_000);
afterAll(async () => {
  await llama?.dispose();
  rmSync(tmp, { recursive: true, force: true });
});

describe("llama.cpp reads minfer's bit layouts", () => {
  const types = [
    "F16",
    "BF16",
    "Q4_0",
    "Q4_1",
    "Q5_0",
    "Q5_1",
    "Q8_0",
    "Q2_K",
    "Q3_K",
    "Q4_K",
    "Q5_K",
    "Q6_K",
  ];

  it.each(types)(
    "%s token embedding: llama.cpp's probabilities equal a float64 model of minfer's dequantize",
    async (typeName) => {
      if (!llama) throw new Error(`node-llama-cpp could not load llama.cpp here: ${unavailable}`);
      const r = rng(typeName.length * 7919 + typeName.charCodeAt(1));
      const embedding = embeddingBytes(typeName, r);
      const output = normal(N_EMBD * N_VOCAB, 0.25, r);
      const norm = normal(N_EMBD, 0.3, r).map((v) => 1 + v);
      const path = join(tmp, `${typeName}.gguf`);
      writeFileSync(path, modelFile(typeName, embedding, output, norm));
      const rows = dequantize(ggmlTypeByName(typeName).id, embedding, N_EMBD * N_VOCAB);

      const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
      try {
        const ctx = await model.createContext({ contextSize: 64, batchSize: 8 });
        const seq = ctx.getSequence();
        for (const token of TOKENS) {
          await seq.clearHistory();
          const [res] = await seq.controlledEvaluate([
            [token as Token, { generateNext: { probabilities: true } }],
          ]);
          const got = res!.next!.probabilities!;
          const want = referenceProbs(rows.subarray(token * N_EMBD, (token + 1) * N_EMBD), output, norm);
          let maxDiff = 0;
          for (let j = 0; j < N_VOCAB; j++)
            maxDiff = Math.max(maxDiff, Math.abs((got.get(j as Token) ?? 0) - want[j]!));
          // The distributions are peaked (max probability ≫ 1/259), so a wrong layout is far off.
          expect(Math.max(...want)).toBeGreaterThan(0.05);
          expect(maxDiff, `token ${token}`).toBeLessThan(2e-4);
        }
        await ctx.dispose();
      } finally {
        await model.dispose();
      }
    },
  );
});
