import { join } from "node:path";
import { GgmlType, type GgufKV, GgufValueType, readGguf, writeGguf } from "@minfer/gguf";
import { FIXTURES } from "./test-helpers.js";

// Test models for the embedding endpoints: a 2-layer BERT in llama.cpp's tensor layout with the
// fixtures' bge WordPiece vocabulary, random weights of a trained model's scale (so texts embed
// differently), mean pooling, and optionally a classifier head (rank pooling).

const E = 32;
const FF = 64;
const LAYERS = 2;
const CTX = 128;

function gaussian(seed: number): () => number {
  let s = seed >>> 0;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/** Writes the BERT to `dir/name.gguf` (pooling "mean", or "rank" with a classifier head); returns its path. */
export async function writeBert(
  dir: string,
  name: string,
  o: { rank?: boolean; seed?: number } = {},
): Promise<string> {
  const vocab = (await readGguf(join(FIXTURES, "vocab/ggml-vocab-bert-bge.gguf"))).metadata;
  const nVocab = vocab.stringArray("tokenizer.ggml.tokens").length;
  const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
  const f32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.FLOAT32, value });
  const metadata: GgufKV[] = [
    { key: "general.architecture", type: GgufValueType.STRING, value: "bert" },
    u32("bert.context_length", CTX),
    u32("bert.embedding_length", E),
    u32("bert.feed_forward_length", FF),
    u32("bert.block_count", LAYERS),
    u32("bert.attention.head_count", 4),
    f32("bert.attention.layer_norm_epsilon", 1e-12),
    { key: "bert.attention.causal", type: GgufValueType.BOOL, value: false },
    u32("bert.pooling_type", o.rank ? 4 : 1),
    ...[...vocab.entries()].filter((kv) => kv.key.startsWith("tokenizer.")),
  ];
  const shapes: [string, number[]][] = [
    ["token_embd.weight", [E, nVocab]],
    ["token_types.weight", [E, 2]],
    ["position_embd.weight", [E, CTX]],
    ["token_embd_norm.weight", [E]],
    ["token_embd_norm.bias", [E]],
  ];
  for (let il = 0; il < LAYERS; il++) {
    const p = `blk.${il}.`;
    for (const m of ["attn_q", "attn_k", "attn_v", "attn_output"])
      shapes.push([`${p}${m}.weight`, [E, E]], [`${p}${m}.bias`, [E]]);
    shapes.push([`${p}attn_output_norm.weight`, [E]], [`${p}attn_output_norm.bias`, [E]]);
    shapes.push(
      [`${p}ffn_up.weight`, [E, FF]],
      [`${p}ffn_up.bias`, [FF]],
      [`${p}ffn_down.weight`, [FF, E]],
      [`${p}ffn_down.bias`, [E]],
    );
    shapes.push([`${p}layer_output_norm.weight`, [E]], [`${p}layer_output_norm.bias`, [E]]);
  }
  if (o.rank)
    shapes.push(
      ["cls.weight", [E, E]],
      ["cls.bias", [E]],
      ["cls.output.weight", [E, 1]],
      ["cls.output.bias", [1]],
    );
  const g = gaussian(o.seed ?? 3);
  const tensors = shapes.map(([tname, dims]) => {
    const n = dims.reduce((a, b) => a * b, 1);
    const norm = tname.includes("norm") && tname.endsWith(".weight");
    const std = dims.length === 1 ? 0.1 : 2 / Math.sqrt(dims[0]!);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = (norm ? 1 : 0) + std * g();
    return { name: tname, type: GgmlType.F32, dims, data: new Uint8Array(v.buffer) };
  });
  const path = join(dir, `${name}.gguf`);
  await writeGguf(path, metadata, tensors);
  return path;
}
