// The proof that the BERT-family conversions are llama.cpp's layout and mean what transformers
// computes: each tiny checkpoint (tiny-bert-configs.json) converted to F32 and F16 is loaded by
// llama.cpp (node-llama-cpp's prebuilt CPU binary, which refuses a file whose keys or tensors its
// loader does not find with the shapes it derives); llama.cpp's tokenizer on the file gives the ids
// of reference tokenizers written from transformers' semantics; and llama.cpp's pooled embeddings
// (or reranker scores) on those ids match a float64 forward pass with transformers' semantics on
// the checkpoint's own tensors (hf-reference-bert.ts).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  TINY_BERT_CASES,
  TINY_BERT_PAIRS,
  TINY_BERT_TEXTS,
  type TinyBertReferenceFile,
  tinyBertGguf,
} from "./tiny-bert.js";

type Llama = Awaited<ReturnType<typeof import("node-llama-cpp")["getLlama"]>>;
type LlamaModel = Awaited<ReturnType<Llama["loadModel"]>>;
type Token = import("node-llama-cpp").Token;

let llama: Llama | undefined;
let unavailable = "";
try {
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
} catch (e) {
  unavailable = (e as Error).message.split("\n")[0]!;
}

let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-bert-"));
});
afterAll(async () => {
  await llama?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
}

/** The smallest cosine allowed: F32 weights differ from the reference by float32 rounding and tanh GELU. */
const MIN_COSINE: Record<string, number> = { f32: 0.9999, f16: 0.9999 };

async function withModel<T>(path: string, f: (m: LlamaModel) => Promise<T>): Promise<T> {
  const model = await llama!.loadModel({ modelPath: path, gpuLayers: 0 });
  try {
    return await f(model);
  } finally {
    await model.dispose();
  }
}

/** llama.cpp's raw classifier output for `ids` (node-llama-cpp's ranking context before its sigmoid). */
async function rawScore(model: LlamaModel, ids: number[]): Promise<number> {
  const ctx = await model.createRankingContext({ contextSize: 64, batchSize: 64, threads: 1 });
  try {
    // The ranking context evaluates ids and applies a sigmoid; invert it for the head's logit.
    // biome-ignore lint/suspicious/noExplicitAny: node-llama-cpp's per-input evaluation is internal
    const p: number = await (ctx as any)._evaluateRankingForInput(ids as Token[]);
    return Math.log(p / (1 - p));
  } finally {
    await ctx.dispose();
  }
}

describe.skipIf(!llama)(
  `converted tiny BERT-family checkpoints in llama.cpp${llama ? "" : ` (skipped: ${unavailable})`}`,
  () => {
    for (const c of TINY_BERT_CASES) {
      for (const type of ["f32", "f16"]) {
        it(`${c.name} (${c.class}), ${type.toUpperCase()}: llama.cpp loads it, tokenizes as transformers, and ${c.pooling ? `its ${c.pooling}-pooled embeddings` : "its reranker scores"} match the float64 reference`, async () => {
          const path = await tinyBertGguf(c.name, tmp, type);
          const ref = JSON.parse(
            readFileSync(path.replace(/\.gguf$/, ".reference.json"), "utf8"),
          ) as TinyBertReferenceFile;
          await withModel(path, async (model) => {
            if (c.pooling) {
              const ctx = await model.createEmbeddingContext({ contextSize: 64, batchSize: 64, threads: 1 });
              try {
                const cosines: number[] = [];
                for (const e of ref.embeddings!) {
                  // llama.cpp's own tokenizer on the file: the reference ids without the specials.
                  expect(
                    model.tokenize(e.text, false),
                    `llama.cpp's tokens of ${JSON.stringify(e.text)}`,
                  ).toEqual(e.ids.slice(1, -1));
                  const got = (await ctx.getEmbeddingFor(e.ids as Token[])).vector;
                  expect(got.length).toBe(e.pooled.length);
                  cosines.push(cosine(got, e.pooled));
                }
                console.log(
                  `${c.name} ${type}: cosine to the reference ${cosines.map((x) => x.toFixed(7)).join(" ")}`,
                );
                expect(Math.min(...cosines)).toBeGreaterThanOrEqual(MIN_COSINE[type]!);
                expect(ref.embeddings!.length).toBe(TINY_BERT_TEXTS.length);
              } finally {
                await ctx.dispose();
              }
            } else {
              const diffs: string[] = [];
              for (const s of ref.scores!) {
                const got = await rawScore(model, s.ids);
                const want = s.score[0]!;
                diffs.push(`${got.toFixed(5)} vs ${want.toFixed(5)}`);
                expect(
                  Math.abs(got - want),
                  `score of ${JSON.stringify([s.query, s.document])}`,
                ).toBeLessThan(type === "f32" ? 2e-3 : 5e-3);
              }
              console.log(`${c.name} ${type}: llama.cpp vs reference scores ${diffs.join("; ")}`);
              expect(ref.scores!.length).toBe(TINY_BERT_PAIRS.length);
            }
          });
        }, 120_000);
      }
    }
  },
);
