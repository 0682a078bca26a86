// The proof that the new architectures' layout is llama.cpp's: each tiny checkpoint
// (tiny-configs.json) converted to F32 and F16 is loaded by llama.cpp (node-llama-cpp's prebuilt
// CPU binary, which refuses a file whose keys or tensors its loader does not find with the shapes
// it derives) and evaluates a prompt longer than the sliding windows, then greedy steps, to finite,
// non-constant logits. Then, on the F32 files, llama.cpp's logits against a float64 forward pass
// with transformers' semantics on the checkpoint's own tensors (hf-reference.ts): the same argmax
// at every step and logits within a small tolerance, which checks what the layout means.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertCheckpoint } from "./convert.js";
import { ArchReference } from "./hf-reference.js";
import { TINY_CASES, tinyCheckpoint } from "./tiny-checkpoint.js";

type Llama = Awaited<ReturnType<typeof import("node-llama-cpp")["getLlama"]>>;
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
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-llamacpp-"));
});
afterAll(async () => {
  await llama?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** 24 prompt tokens (past the 16-token sliding windows), ids valid in every fixture vocabulary. */
const PROMPT = [
  1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203, 29889, 13, 1576, 3186, 338, 263, 2107, 5446,
  29892, 322, 445, 385, 1243,
];
const STEPS = 4;

describe.skipIf(!llama)(
  `converted tiny checkpoints load and run in llama.cpp${llama ? "" : ` (skipped: ${unavailable})`}`,
  () => {
    for (const c of TINY_CASES) {
      for (const type of ["f32", "f16"]) {
        it(`${c.name} (${c.class}), ${type.toUpperCase()}: a ${PROMPT.length}-token prompt and ${STEPS} greedy steps, finite logits`, async () => {
          const ck = await tinyCheckpoint(c.name, join(tmp, `${c.name}-${type}`));
          const path = join(tmp, `${c.name}-${type}.gguf`);
          await convertCheckpoint(ck.dir, path, { type });
          const model = await llama!.loadModel({ modelPath: path, gpuLayers: 0 });
          try {
            const ctx = await model.createContext({ contextSize: 64, batchSize: PROMPT.length, threads: 1 });
            try {
              const seq = ctx.getSequence();
              let next: number[] = PROMPT;
              const seen: number[] = [];
              for (let step = 0; step < STEPS; step++) {
                const res = await seq.controlledEvaluate(
                  next.map((t, k) =>
                    k === next.length - 1 ? [t as Token, { generateNext: { logits: true } }] : (t as Token),
                  ),
                );
                const logits = res.at(-1)?.next?.logits;
                expect(logits, "llama.cpp returned logits").toBeDefined();
                const values = [...logits!.values()];
                expect(values.length).toBe(ck.case.config.vocab_size);
                expect(values.every(Number.isFinite), "finite").toBe(true);
                const max = Math.max(...values);
                expect(max - Math.min(...values), "not constant").toBeGreaterThan(1e-3);
                const best = [...logits!].find(([, v]) => v === max)![0];
                seen.push(best);
                next = [best];
              }
              expect(seen.length).toBe(STEPS);
            } finally {
              await ctx.dispose();
            }
          } finally {
            await model.dispose();
          }
        }, 120_000);
      }
    }
  },
);

/**
 * Max |Δlogit| allowed, as a fraction of the reference's logit range: float32 rounding, except
 * where ggml's CPU GELU (Gemma) is tabulated in F16 (measured: ≤ 2.2e-4; others ≤ 5.3e-7).
 */
const tolerance = (cls: string) => (cls.startsWith("Gemma") ? 1e-3 : 1e-5);

describe.skipIf(!llama)(
  `llama.cpp on the converted files against transformers' semantics${llama ? "" : ` (skipped: ${unavailable})`}`,
  () => {
    for (const c of TINY_CASES) {
      it(`${c.name}, F32: the prompt and ${STEPS} steps, same argmax, logits within ${tolerance(c.class)} of their range`, async () => {
        const ck = await tinyCheckpoint(c.name, join(tmp, `${c.name}-ref`));
        const path = join(tmp, `${c.name}-ref.gguf`);
        await convertCheckpoint(ck.dir, path, { type: "f32" });
        const model = await llama!.loadModel({ modelPath: path, gpuLayers: 0 });
        const ref = new ArchReference(ck);
        try {
          const ctx = await model.createContext({
            contextSize: 64,
            batchSize: PROMPT.length,
            threads: 1,
            flashAttention: false,
            experimentalKvCacheKeyType: "F32",
            experimentalKvCacheValueType: "F32",
          });
          try {
            const seq = ctx.getSequence();
            let next: number[] = PROMPT;
            let worst = 0;
            for (let step = 0; step < STEPS; step++) {
              const res = await seq.controlledEvaluate(
                next.map((t, k) =>
                  k === next.length - 1 ? [t as Token, { generateNext: { logits: true } }] : (t as Token),
                ),
              );
              const got = res.at(-1)!.next!.logits!;
              const want = ref.eval(next);
              let lo = Number.POSITIVE_INFINITY;
              let hi = Number.NEGATIVE_INFINITY;
              let best = 0;
              for (let i = 0; i < want.length; i++) {
                lo = Math.min(lo, want[i]!);
                hi = Math.max(hi, want[i]!);
                if (want[i]! > want[best]!) best = i;
              }
              let gotBest = -1;
              let gotMax = Number.NEGATIVE_INFINITY;
              let maxD = 0;
              for (const [t, v] of got) {
                maxD = Math.max(maxD, Math.abs(v - want[t]!));
                if (v > gotMax) [gotMax, gotBest] = [v, t];
              }
              worst = Math.max(worst, maxD / (hi - lo));
              expect(gotBest, `step ${step}: argmax`).toBe(best);
              next = [best];
            }
            expect(worst).toBeLessThan(tolerance(c.class));
          } finally {
            await ctx.dispose();
          }
        } finally {
          await model.dispose();
        }
      }, 180_000);
    }
  },
);
