// End to end: converted checkpoints run by minfer (@minfer/engine, CPU backend) against
// (1) a float64 forward pass with Hugging Face's semantics on the checkpoint's own weights
//     (test-helpers.ts HfReference: NeoX RoPE on unpermuted Q/K), which is what catches a wrong
//     tensor mapping or a missing/wrong Llama Q/K permutation, and
// (2) llama.cpp (node-llama-cpp's prebuilt CPU binary) on the same GGUF: the same greedy tokens.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { Context, Model } from "@minfer/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareEngines } from "../fidelity/compare.js";
import { fixtures } from "../test-helpers.js";
import { convertCheckpoint } from "./convert.js";
import {
  type Arch,
  type Checkpoint,
  type FixtureVocab,
  HfReference,
  TINY,
  writeCheckpoint,
} from "./test-helpers.js";

type Llama = Awaited<ReturnType<typeof import("node-llama-cpp")["getLlama"]>>;
type Runtime = Awaited<ReturnType<ReturnType<typeof cpuBackend.devices>[number]["init"]>>;

const STEPS = 32;
const PROMPT = "Once upon a time, in a land far away";
const CASES: { arch: Arch; vocab: FixtureVocab; tied: boolean; headDim?: number; shards?: 1 | 2 }[] = [
  { arch: "llama", vocab: "llama-bpe", tied: false, shards: 2 },
  { arch: "qwen2", vocab: "qwen2", tied: false },
  { arch: "qwen3", vocab: "qwen2", tied: true, headDim: 32 },
];

let llama: Llama | undefined;
let unavailable = "";
try {
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
} catch (e) {
  unavailable = (e as Error).message.split("\n")[0]!;
}

let tmp = "";
let runtime: Runtime | undefined;
const made = new Map<string, Promise<{ ck: Checkpoint; path: string }>>();

/** The checkpoint of a case, converted to `type` (made once). */
function converted(c: (typeof CASES)[number], type: string): Promise<{ ck: Checkpoint; path: string }> {
  const key = `${c.arch}-${type}`;
  let p = made.get(key);
  if (!p) {
    p = (async () => {
      const ck = await writeCheckpoint(join(tmp, `${c.arch}-${type}`), {
        arch: c.arch,
        vocab: c.vocab,
        vocabPath: join(fixtures, `vocab/ggml-vocab-${c.vocab}.gguf`),
        tied: c.tied,
        shards: c.shards ?? 1,
        seed: 7,
        shape: c.headDim ? { ...TINY, headDim: c.headDim, explicitHeadDim: true } : TINY,
      });
      const path = join(tmp, `${c.arch}-${type}.gguf`);
      await convertCheckpoint(ck.dir, path, { type });
      return { ck, path };
    })();
    made.set(key, p);
  }
  return p;
}

function argmax(l: ArrayLike<number>): number {
  let b = 0;
  for (let i = 1; i < l.length; i++) if (l[i]! > l[b]!) b = i;
  return b;
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-e2e-"));
  runtime = await cpuBackend.devices()[0]!.init({ threads: 1 });
});
afterAll(async () => {
  await llama?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("converted checkpoints: minfer against Hugging Face semantics (float64 reference)", () => {
  for (const c of CASES) {
    it(`${c.arch}${c.tied ? " (tied)" : ""}, F32: ${STEPS} greedy tokens identical, logits within 1e-3`, async () => {
      const { ck, path } = await converted(c, "f32");
      const model = await Model.load(path, { runtime: runtime! });
      const ctx = new Context(model, { nCtx: 128, kvDtype: "f32" });
      try {
        const ref = new HfReference(ck);
        let next = model.tokenizer.encode(PROMPT);
        let maxD = 0;
        const tokens: number[] = [];
        for (let step = 0; step < STEPS; step++) {
          const m = await ctx.eval(next);
          const r = ref.eval(next);
          expect(m.length).toBe(r.length);
          for (let i = 0; i < r.length; i++) maxD = Math.max(maxD, Math.abs(m[i]! - r[i]!));
          const t = argmax(r);
          expect(argmax(m), `step ${step}`).toBe(t);
          tokens.push(t);
          next = [t];
        }
        expect(maxD).toBeLessThan(1e-3);
        expect(new Set(tokens).size).toBeGreaterThan(1);
      } finally {
        ctx.dispose();
        model.dispose();
      }
    }, 120_000);
  }
});

describe.skipIf(!llama)(
  `converted checkpoints: minfer against llama.cpp${llama ? "" : ` (skipped: ${unavailable})`}`,
  () => {
    for (const c of CASES) {
      for (const type of ["f32", "q8_0"]) {
        it(`${c.arch}${c.tied ? " (tied)" : ""}, ${type.toUpperCase()}: same greedy tokens over ${STEPS} steps`, async () => {
          const { path } = await converted(c, type);
          const model = await Model.load(path, { runtime: runtime! });
          const lm = await llama!.loadModel({ modelPath: path, gpuLayers: 0 });
          try {
            const r = await compareEngines(model, lm, {
              prompt: model.tokenizer.encode(PROMPT),
              steps: STEPS,
              nCtx: 128,
              kv: "f32",
              fullEvery: type === "f32" ? 8 : 0,
              threads: 1,
            });
            const why = `disagreements ${JSON.stringify(r.disagreements)}`;
            if (type === "f32") {
              expect(r.agree, why).toBe(STEPS);
              expect(r.fullMaxDLogit).toBeLessThan(1e-4);
            } else {
              // Both engines round activations to int8 blocks for Q8_0 matmuls; near-ties may flip.
              expect(r.agree / STEPS, why).toBeGreaterThanOrEqual(0.9);
              expect(r.maxDLogit).toBeLessThan(0.05);
            }
          } finally {
            model.dispose();
            await lm.dispose();
          }
        }, 120_000);
      }
    }
  },
);
