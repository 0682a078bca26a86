// minfer's encoders (bert, nomic-bert) and embedding poolings against llama.cpp on the same files:
// random-weight models with the real BERT (bge) WordPiece vocabulary, written by minfer's GGUF
// writer in llama.cpp's layout, embedded by both (llama.cpp through node-llama-cpp's prebuilt CPU
// build) for several texts, pooled as the file's pooling_type says. Then a classifier head (rank
// pooling) scored on the token sequence llama.cpp builds for a (query, document) pair.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { Context, embed, Model } from "@minfer/engine";
import {
  type GgufKV,
  GgufValueType,
  readGguf,
  synthesizeLayout,
  synthVocabSize,
  writeGguf,
} from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { synthLayout } from "@minfer/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures as FIXTURES } from "./test-helpers.js";

type Llama = Awaited<ReturnType<typeof import("node-llama-cpp")["getLlama"]>>;
type LlamaToken = import("node-llama-cpp").Token;

const VOCAB = join(FIXTURES, "vocab/ggml-vocab-bert-bge.gguf");
const SHAPE = {
  nLayer: 2,
  nEmbd: 64,
  nHead: 4,
  nHeadKv: 4,
  nFf: 128,
  contextLength: 128,
  ropeFreqBase: 10000,
  rmsEps: 1e-12,
  tiedOutput: false,
};
const TEXTS = [
  "hello world",
  "The quick brown fox jumps over the lazy dog.",
  "a",
  "I believe the meaning of life is to find your gift.",
];
const POOLING_IDS = { mean: 1, cls: 2, last: 3, rank: 4 } as const;

let llama: Llama;
let runtime: DeviceRuntime;
let tmp = "";

beforeAll(async () => {
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  runtime = await cpuBackend.devices()[0]!.init({ threads: 2 });
  tmp = mkdtempSync(join(tmpdir(), "minfer-embed-llamacpp-"));
});
afterAll(async () => {
  await llama?.dispose();
  runtime?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A random-weight encoder file with the bge vocabulary, pooled as `pooling`, optionally with a classifier head. */
async function encoderFile(arch: string, pooling: keyof typeof POOLING_IDS, head = false): Promise<string> {
  const vocab = (await readGguf(VOCAB)).metadata;
  const base = synthLayout(arch, SHAPE, synthVocabSize(vocab));
  const metadata: GgufKV[] = base.metadata.map((kv) =>
    kv.key === `${arch}.pooling_type` ? { ...kv, value: POOLING_IDS[pooling] } : kv,
  );
  const e = SHAPE.nEmbd;
  const extra = head
    ? [
        { name: "cls.weight", dims: [e, e] },
        { name: "cls.bias", dims: [e] },
        { name: "cls.output.weight", dims: [e, 1] },
        { name: "cls.output.bias", dims: [1] },
      ]
    : [];
  const layout = { ...base, metadata, tensors: [...base.tensors, ...extra] };
  const path = join(tmp, `${arch}-${pooling}${head ? "-head" : ""}.gguf`);
  await writeScaled(path, synthesizeLayout(layout, { type: "f32", seed: 11, vocab }));
  return path;
}

/**
 * Writes a synthesized model with weights of a trained model's scale (the synthesizer's std 0.02
 * makes every text's embedding nearly the same): matrices ~ N(0, 1/fan_in)·2, norm weights ~ 1 ± 0.1,
 * biases ~ N(0, 0.1).
 */
async function writeScaled(path: string, m: ReturnType<typeof synthesizeLayout>): Promise<void> {
  const r = rng(7);
  const tensors = m.tensors.map((t) => {
    const n = t.dims.reduce((a, b) => a * b, 1);
    const norm = t.name.includes("norm") && t.name.endsWith(".weight");
    const std = t.dims.length === 1 ? 0.1 : 2 / Math.sqrt(t.dims[0]!);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = (norm ? 1 : 0) + std * gauss(r);
    return { ...t, data: new Uint8Array(v.buffer) };
  });
  await writeGguf(path, m.metadata, tensors);
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 4294967296;
  };
}

function gauss(r: () => number): number {
  return Math.sqrt(-2 * Math.log(r())) * Math.cos(2 * Math.PI * r());
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! ** 2;
    nb += b[i]! ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

describe("encoders and poolings against llama.cpp", () => {
  for (const [arch, pooling] of [
    ["bert", "mean"],
    ["bert", "cls"],
    ["bert", "last"],
    ["nomic-bert", "mean"],
  ] as const) {
    it(`${arch}, ${pooling} pooling: the same embeddings (cosine ≥ 0.99999) for ${TEXTS.length} texts decoded together`, async () => {
      const path = await encoderFile(arch, pooling);
      const model = await Model.load(path, { runtime });
      const ctx = new Context(model, { embeddings: true, nSeqMax: 4, nCtx: 256 });
      const lm = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
      try {
        expect(ctx.pooling).toBe(pooling);
        const ours = await embed(ctx, TEXTS);
        const ec = await lm.createEmbeddingContext({ contextSize: 128, threads: 2 });
        const vectors: (readonly number[])[] = [];
        for (let i = 0; i < TEXTS.length; i++) {
          // the same tokens on both sides ([CLS] … [SEP] from minfer's WordPiece, checked against
          // llama.cpp's vectors in the tokenizer package)
          const ids = model.tokenizer.encode(TEXTS[i]!);
          expect(lm.tokenize(TEXTS[i]!, false)).toEqual(ids.slice(1, -1));
          vectors.push((await ec.getEmbeddingFor(ids as LlamaToken[])).vector);
        }
        await ec.dispose();
        for (let i = 0; i < TEXTS.length; i++) {
          expect(ours[i]!.nTokens).toBe(model.tokenizer.encode(TEXTS[i]!).length);
          expect(cosine(ours[i]!.rows[0]!, vectors[i]!)).toBeGreaterThan(0.99999);
        }
        // and distinct texts give distinct embeddings (the check is not vacuous)
        expect(cosine(ours[0]!.rows[0]!, ours[1]!.rows[0]!)).toBeLessThan(0.9999);
      } finally {
        await lm.dispose();
        ctx.dispose();
        model.dispose();
      }
    });
  }

  it("bert with a classifier head, rank pooling: llama.cpp's relevance (its sigmoid) for each (query, document)", async () => {
    const path = await encoderFile("bert", "rank", true);
    const model = await Model.load(path, { runtime });
    const ctx = new Context(model, { embeddings: true, nSeqMax: 4, nCtx: 256 });
    const lm = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    try {
      const rc = await lm.createRankingContext({ contextSize: 128, threads: 2 });
      const query = "what is machine learning";
      const docs = TEXTS;
      const theirs = await rc.rankAll(query, docs);
      await rc.dispose();
      // node-llama-cpp's pair: BOS, query, EOS, SEP, document, EOS (each where the vocabulary has it)
      const t = lm.tokens;
      const pair = (d: string) => [
        ...(t.bos == null ? [] : [t.bos]),
        ...lm.tokenize(query, false),
        ...(t.eos == null ? [] : [t.eos]),
        ...(t.sep == null ? [] : [t.sep]),
        ...lm.tokenize(d, false),
        ...(t.eos == null ? [] : [t.eos]),
      ];
      const ours = await embed(
        ctx,
        docs.map((d) => pair(d).map(Number)),
      );
      const spread = Math.max(...theirs) - Math.min(...theirs);
      expect(spread, "the documents score differently").toBeGreaterThan(1e-4);
      // (llama.cpp's CPU GELU rounds its input and output to F16 — ggml-cpu's GGML_GELU_FP16 table —
      // which moves a score by about 1e-3 at these weights; minfer computes it in F32, as
      // transformers does: the float64 check is the converter's, hf-reference-bert.ts)
      for (let i = 0; i < docs.length; i++) {
        const p = 1 / (1 + Math.exp(-ours[i]!.rows[0]![0]!));
        expect(Math.abs(p - theirs[i]!)).toBeLessThan(2e-3);
      }
      const order = (x: readonly number[]) => x.map((_, i) => i).sort((a, b) => x[b]! - x[a]!);
      expect(order(ours.map((o) => o.rows[0]![0]!))).toEqual(order(theirs));
    } finally {
      await lm.dispose();
      ctx.dispose();
      model.dispose();
    }
  });
});

describe("a decoder's embeddings", () => {
  it("stories260K, last pooling: llama.cpp's embedding (its last token's normed hidden state) for texts decoded together", async () => {
    const path = join(FIXTURES, "models/stories260K.gguf");
    const model = await Model.load(path, { runtime });
    const ctx = new Context(model, { embeddings: true, pooling: "last", nSeqMax: 4, nCtx: 256 });
    const lm = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    try {
      const texts = ["Once upon a time", "The cat sat on the mat and", "Lily"];
      const ours = await embed(ctx, texts);
      // (the file names no pooling: llama.cpp then returns the last token's row)
      const ec = await lm.createEmbeddingContext({ contextSize: 128, threads: 2 });
      for (let i = 0; i < texts.length; i++) {
        const theirs = (await ec.getEmbeddingFor(model.tokenizer.encode(texts[i]!) as LlamaToken[])).vector;
        expect(ours[i]!.rows[0]!.length).toBe(model.hparams.nEmbd);
        expect(cosine(ours[i]!.rows[0]!, theirs)).toBeGreaterThan(0.99999);
      }
      await ec.dispose();
    } finally {
      await lm.dispose();
      ctx.dispose();
      model.dispose();
    }
  });
});

describe("a decoder reranker", () => {
  it("qwen3 with a classifier head (Qwen3-Reranker's layout), rank pooling: llama.cpp's softmax over the labels at the last token", async () => {
    const vocab = (await readGguf(join(FIXTURES, "vocab/ggml-vocab-qwen2.gguf"))).metadata;
    const shape = { ...SHAPE, nHeadKv: 2, ropeFreqBase: 1e6, rmsEps: 1e-6, tiedOutput: true };
    const base = synthLayout("qwen3", shape, synthVocabSize(vocab));
    const metadata: GgufKV[] = [
      ...base.metadata,
      { key: "qwen3.pooling_type", type: GgufValueType.UINT32, value: POOLING_IDS.rank },
      {
        key: "qwen3.classifier.output_labels",
        type: GgufValueType.ARRAY,
        value: { itemType: GgufValueType.STRING, items: ["yes", "no"] },
      },
    ];
    const layout = {
      ...base,
      metadata,
      tensors: [...base.tensors, { name: "cls.output.weight", dims: [SHAPE.nEmbd, 2] }],
    };
    const path = join(tmp, "qwen3-rank.gguf");
    await writeScaled(path, synthesizeLayout(layout, { type: "f32", seed: 4, vocab }));
    const model = await Model.load(path, { runtime });
    const ctx = new Context(model, { embeddings: true, nSeqMax: 4, nCtx: 256 });
    const lm = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    try {
      expect(ctx.pooling).toBe("rank");
      expect(ctx.outputWidth).toBe(2);
      const ids = TEXTS.map((t) => model.tokenizer.encode(t));
      const ours = await embed(ctx, ids);
      const ec = await lm.createEmbeddingContext({ contextSize: 128, threads: 2 });
      for (let i = 0; i < ids.length; i++) {
        const theirs = (await ec.getEmbeddingFor(ids[i] as LlamaToken[])).vector;
        expect(theirs).toHaveLength(2);
        // (probabilities; the two engines' F16 K/V and product rounding differ at these large weights)
        for (let j = 0; j < 2; j++) expect(Math.abs(ours[i]!.rows[0]![j]! - theirs[j]!)).toBeLessThan(1e-3);
      }
      await ec.dispose();
      const spread =
        Math.max(...ours.map((o) => o.rows[0]![0]!)) - Math.min(...ours.map((o) => o.rows[0]![0]!));
      expect(spread, "the texts score differently").toBeGreaterThan(1e-2);
    } finally {
      await lm.dispose();
      ctx.dispose();
      model.dispose();
    }
  });
});

describe("encoder contexts refuse what cannot work", () => {
  it("an encoder without embeddings, a sequence longer than one micro-batch, a position past the table, position shifts", async () => {
    const path = await encoderFile("bert", "mean");
    const model = await Model.load(path, { runtime });
    try {
      expect(() => new Context(model, {})).toThrow(/embedding model/);
      const ctx = new Context(model, { embeddings: true, nUbatch: 16, nCtx: 128 });
      try {
        await expect(embed(ctx, [new Array(17).fill(1000)])).rejects.toThrow(/more than the 16/);
        await expect(ctx.decode({ tokens: [1000], pos: [SHAPE.contextLength] })).rejects.toThrow(
          /past the model's 128 positions/,
        );
        await expect(ctx.decode({ tokens: [1000, 1001], tokenTypes: [0, 2] })).rejects.toThrow(
          /token type 2/,
        );
        expect(() => ctx.seqAdd(0, 0, -1, 4)).toThrow(/seqAdd: bert is an encoder/);
        expect(() => ctx.seqDiv(0, 0, -1, 2)).toThrow(/seqDiv: bert is an encoder/);
      } finally {
        ctx.dispose();
      }
    } finally {
      model.dispose();
    }
  });
});
