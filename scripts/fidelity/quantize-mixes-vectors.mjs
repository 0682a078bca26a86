#!/usr/bin/env node
// Writes packages/gguf/src/quantize-mixes.llamacpp.json: the type llama.cpp's llama-quantize gives
// each tensor of small synthetic F16 models for each mix minfer implements (the expected data of
// packages/gguf/src/quantize-mixes.test.ts). The models are random weights at shapes chosen to
// reach the rules: GQA ratios 1, 3 and 4, tied and untied output, rows that are and are not whole
// 256-element blocks (and one not a multiple of 32), layer counts 4 to 80 (80: llama.cpp's 70B
// rule), a fused attn_qkv (phi3) and an 8-expert MoE (llama, Mixtral-style).
//   node scripts/fidelity/quantize-mixes-vectors.mjs /path/to/llama-quantize [OUT.json]
// (after `pnpm --filter @minfer/gguf build`; llama-quantize built from the llama.cpp source in
// shared/device/llamacpp/llama.cpp-src.tar.xz, e.g. cmake -B build && ninja -C build llama-quantize)
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  byteVocabulary,
  encodeImatrix,
  GgmlType,
  GgufValueType,
  QUANT_MIXES,
  quantize,
  readGguf,
  writeGguf,
} from "../../packages/gguf/dist/index.js";

const [bin, outPath = "packages/gguf/src/quantize-mixes.llamacpp.json"] = process.argv.slice(2);
if (!bin) {
  console.error("usage: quantize-mixes-vectors.mjs /path/to/llama-quantize [OUT.json]");
  process.exit(2);
}

/** Runs with --pure as well, on every model. */
const PURE_MIXES = ["Q2_K", "Q4_K_M"];
/**
 * Mixes llama-quantize writes only with an importance matrix (some of their tensors are IQ1_S,
 * IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S or IQ3_XXS): run with --imatrix, an imatrix of equal sums for
 * every matrix but the token embeddings (what llama-imatrix records), keyed "MIX --imatrix".
 */
const IMATRIX_MIXES = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS"];

/**
 * The models: architecture, layers, width, heads, KV heads, FFN width, vocabulary rows (the
 * byte vocabulary: 259), tied output, and variants (qkv: fused attention; experts: MoE FFN).
 */
const MODELS = [
  { id: "llama-16L-gqa4", arch: "llama", layers: 16, embd: 256, heads: 8, kv: 2, ff: 512 },
  {
    id: "qwen2-12L-gqa3-tied-384",
    arch: "qwen2",
    layers: 12,
    embd: 384,
    heads: 6,
    kv: 2,
    ff: 640,
    tied: true,
  },
  { id: "qwen3-8L-gqa1-ff600", arch: "qwen3", layers: 8, embd: 256, heads: 4, kv: 4, ff: 600 },
  // Only the mixes whose attn_v the 70B rule can change (Q3_K / Q4_K → Q5_K), to keep the file small.
  {
    id: "llama-80L-gqa4",
    arch: "llama",
    layers: 80,
    embd: 256,
    heads: 4,
    kv: 1,
    ff: 256,
    only: ["Q2_K", "Q3_K_S", "Q3_K_M", "Q4_K_S", "Q4_K_M", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M"],
  },
  { id: "phi3-6L-qkv", arch: "phi3", layers: 6, embd: 256, heads: 4, kv: 4, ff: 512, qkv: true },
  { id: "llama-4L-8x-moe", arch: "llama", layers: 4, embd: 256, heads: 8, kv: 2, ff: 256, experts: 8 },
];
const VOCAB = byteVocabulary();
const N_VOCAB = VOCAB.find((kv) => kv.key === "tokenizer.ggml.tokens").value.items.length;

function tensorsOf(m) {
  const hd = m.embd / m.heads;
  const t = [
    ["token_embd.weight", [m.embd, N_VOCAB]],
    ["output_norm.weight", [m.embd]],
  ];
  if (!m.tied) t.push(["output.weight", [m.embd, N_VOCAB]]);
  for (let i = 0; i < m.layers; i++) {
    const b = `blk.${i}.`;
    t.push([`${b}attn_norm.weight`, [m.embd]]);
    if (m.qkv) t.push([`${b}attn_qkv.weight`, [m.embd, (m.heads + 2 * m.kv) * hd]]);
    else {
      t.push([`${b}attn_q.weight`, [m.embd, m.heads * hd]]);
      t.push([`${b}attn_k.weight`, [m.embd, m.kv * hd]]);
      t.push([`${b}attn_v.weight`, [m.embd, m.kv * hd]]);
    }
    if (m.arch === "qwen2")
      for (const x of ["q", "k", "v"]) t.push([`${b}attn_${x}.bias`, [(x === "q" ? m.heads : m.kv) * hd]]);
    if (m.arch === "qwen3") for (const x of ["q", "k"]) t.push([`${b}attn_${x}_norm.weight`, [hd]]);
    t.push([`${b}attn_output.weight`, [m.heads * hd, m.embd]]);
    t.push([`${b}ffn_norm.weight`, [m.embd]]);
    if (m.experts) {
      t.push([`${b}ffn_gate_inp.weight`, [m.embd, m.experts]]);
      t.push([`${b}ffn_gate_exps.weight`, [m.embd, m.ff, m.experts]]);
      t.push([`${b}ffn_up_exps.weight`, [m.embd, m.ff, m.experts]]);
      t.push([`${b}ffn_down_exps.weight`, [m.ff, m.embd, m.experts]]);
    } else if (m.qkv) {
      t.push([`${b}ffn_up.weight`, [m.embd, 2 * m.ff]]);
      t.push([`${b}ffn_down.weight`, [m.ff, m.embd]]);
    } else {
      t.push([`${b}ffn_gate.weight`, [m.embd, m.ff]]);
      t.push([`${b}ffn_up.weight`, [m.embd, m.ff]]);
      t.push([`${b}ffn_down.weight`, [m.ff, m.embd]]);
    }
  }
  return t.map(([name, dims]) => ({ name, dims }));
}

function metadataOf(m) {
  const u32 = (key, value) => ({ key: `${m.arch}.${key}`, type: GgufValueType.UINT32, value });
  const f32 = (key, value) => ({ key: `${m.arch}.${key}`, type: GgufValueType.FLOAT32, value });
  const hd = m.embd / m.heads;
  return [
    { key: "general.architecture", type: GgufValueType.STRING, value: m.arch },
    { key: "general.name", type: GgufValueType.STRING, value: `quantize-mixes ${m.id}` },
    { key: "general.file_type", type: GgufValueType.UINT32, value: 1 },
    u32("context_length", 2048),
    u32("embedding_length", m.embd),
    u32("block_count", m.layers),
    u32("feed_forward_length", m.ff),
    u32("attention.head_count", m.heads),
    u32("attention.head_count_kv", m.kv),
    u32("attention.key_length", hd),
    u32("attention.value_length", hd),
    u32("rope.dimension_count", hd),
    f32("rope.freq_base", 10000),
    f32("attention.layer_norm_rms_epsilon", 1e-6),
    u32("vocab_size", N_VOCAB),
    ...(m.experts ? [u32("expert_count", m.experts), u32("expert_used_count", 2)] : []),
    ...VOCAB,
  ];
}

/** Random values (std 0.02; norms near 1), F16 for matrices, F32 for vectors and the MoE router. */
function dataOf(t, seed) {
  let s = seed >>> 0 || 1;
  const n = t.dims.reduce((a, b) => a * b, 1);
  const values = new Float32Array(n);
  const norm = t.name.endsWith("norm.weight");
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    values[i] = (norm ? 1 : 0) + ((s >>> 0) / 2 ** 32 - 0.5) * 0.07;
  }
  const f16 = t.dims.length > 1 && !t.name.includes("ffn_gate_inp");
  return {
    type: f16 ? GgmlType.F16 : GgmlType.F32,
    bytes: f16 ? quantize(GgmlType.F16, values) : new Uint8Array(values.buffer),
  };
}

const dir = mkdtempSync(join(tmpdir(), "quantize-mixes-"));
const result = {
  about:
    "Tensor types llama.cpp's llama-quantize (the llama.cpp source in shared/device/llamacpp/llama.cpp-src.tar.xz, " +
    "the commit node-llama-cpp 3.21.1 bundles) writes for small synthetic F16 models, no imatrix unless the run says --imatrix. " +
    "Made by: node scripts/fidelity/quantize-mixes-vectors.mjs /path/to/llama-quantize " +
    "(which runs llama-quantize [--pure] [--imatrix ONES.gguf] IN.gguf OUT.gguf MIX 2 per model and mix; " +
    "--imatrix, an imatrix of equal sums for every matrix but token_embd, for the mixes that need one). " +
    "Per model: its metadata facts and tensors (name, dims; vectors are F32, matrices F16); " +
    "per mix: general.file_type, the type most matrices got, and every matrix that got another.",
  models: {},
};
try {
  for (const [k, m] of MODELS.entries()) {
    const tensors = tensorsOf(m);
    const input = join(dir, `${m.id}.gguf`);
    const written = tensors.map((t, i) => ({ ...t, ...dataOf(t, (k + 1) * 7919 + i * 104729) }));
    await writeGguf(
      input,
      metadataOf(m),
      written.map((t) => ({ name: t.name, type: t.type, dims: t.dims, data: t.bytes })),
    );
    const entry = {
      facts: { arch: m.arch, layers: m.layers, heads: m.heads, kvHeads: m.kv, experts: m.experts ?? 0 },
      tensors: written.map((t) => [t.name, t.dims, t.type === GgmlType.F16 ? "F16" : "F32"]),
      mixes: {},
    };
    const imatrixPath = join(dir, `${m.id}.imatrix.gguf`);
    const sums = new Map(
      written
        .filter((t) => t.type === GgmlType.F16 && t.name !== "token_embd.weight")
        .map((t) => {
          const nMat = t.dims[2] ?? 1;
          return [
            t.name,
            { nCols: t.dims[0], sums: new Array(t.dims[0] * nMat).fill(1), counts: new Array(nMat).fill(1) },
          ];
        }),
    );
    writeFileSync(imatrixPath, encodeImatrix(sums, { datasets: ["ones"], chunkCount: 1, chunkSize: 1 }));
    const mixes = m.only ?? QUANT_MIXES;
    const runs = [...mixes.map((mix) => [mix, false]), ...PURE_MIXES.map((mix) => [mix, true])];
    for (const [mix, pure] of runs) {
      const output = join(dir, `${m.id}-${mix}.gguf`);
      const imatrix = IMATRIX_MIXES.includes(mix);
      const args = [
        ...(pure ? ["--pure"] : []),
        ...(imatrix ? ["--imatrix", imatrixPath] : []),
        input,
        output,
        mix,
        "2",
      ];
      execFileSync(bin, args, { stdio: ["ignore", "ignore", "pipe"], maxBuffer: 64 << 20 });
      const file = await readGguf(output);
      const matrices = file.tensors.filter((t) => t.dims.filter((d) => d > 1).length >= 2);
      const count = new Map();
      for (const t of matrices) count.set(t.typeName, (count.get(t.typeName) ?? 0) + 1);
      const most = [...count.entries()].sort((a, b) => b[1] - a[1])[0][0];
      const other = Object.fromEntries(
        matrices.filter((t) => t.typeName !== most).map((t) => [t.name, t.typeName]),
      );
      const vectors = [...new Set(file.tensors.filter((t) => !matrices.includes(t)).map((t) => t.typeName))];
      entry.mixes[`${mix}${pure ? " --pure" : ""}${imatrix ? " --imatrix" : ""}`] = {
        fileType: file.metadata.integer("general.file_type"),
        most,
        other,
        vectors,
      };
      rmSync(output);
      console.error(
        `${m.id} ${mix}${pure ? " --pure" : ""}${imatrix ? " --imatrix" : ""}: ${most} + ${Object.keys(other).length} others`,
      );
    }
    result.models[m.id] = entry;
    rmSync(input);
    rmSync(imatrixPath);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
writeFileSync(outPath, `${JSON.stringify(result, null, 1)}\n`);
// In the repository's JSON style (what biome check wants), when biome is installed.
try {
  execFileSync("node_modules/.bin/biome", ["format", "--write", outPath], { stdio: "ignore" });
} catch {}
console.error(`wrote ${outPath}`);
