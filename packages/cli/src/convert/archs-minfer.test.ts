// minfer on the converted tiny checkpoints of every architecture (tiny-configs.json) against a
// float64 forward pass with transformers' semantics on the checkpoint's own tensors
// (hf-reference.ts, the oracle archs-llamacpp.test.ts holds llama.cpp to): F32 weights and KV, a
// 24-token prompt (past the 16-token sliding windows) and greedy steps, the same argmax at every
// step and logits within float32 rounding of the reference's range.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { Context, Model } from "@minfer/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertCheckpoint } from "./convert.js";
import { ArchReference } from "./hf-reference.js";
import { TINY_CASES, tinyCheckpoint } from "./tiny-checkpoint.js";

type Runtime = Awaited<ReturnType<ReturnType<typeof cpuBackend.devices>[number]["init"]>>;

const PROMPT = [
  1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203, 29889, 13, 1576, 3186, 338, 263, 2107, 5446,
  29892, 322, 445, 385, 1243,
];
const STEPS = 8;

let tmp = "";
let runtime: Runtime | undefined;
beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-convert-minfer-"));
  runtime = await cpuBackend.devices()[0]!.init({ threads: 1 });
});
afterAll(() => {
  runtime?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("minfer on the converted checkpoints against transformers' semantics", () => {
  for (const c of TINY_CASES) {
    it(`${c.name} (${c.class}), F32: ${STEPS} greedy steps, same argmax, logits within 1e-5 of their range`, async () => {
      const ck = await tinyCheckpoint(c.name, join(tmp, c.name));
      const path = join(tmp, `${c.name}.gguf`);
      await convertCheckpoint(ck.dir, path, { type: "f32" });
      const model = await Model.load(path, { runtime: runtime! });
      const ctx = new Context(model, { nCtx: 64, kvDtype: "f32" });
      const ref = new ArchReference(ck);
      try {
        let next: number[] = PROMPT;
        let worst = 0;
        for (let step = 0; step < STEPS; step++) {
          const got = await ctx.eval(next);
          const want = ref.eval(next);
          let lo = Number.POSITIVE_INFINITY;
          let hi = Number.NEGATIVE_INFINITY;
          let best = 0;
          let gotBest = 0;
          let maxD = 0;
          for (let i = 0; i < want.length; i++) {
            lo = Math.min(lo, want[i]!);
            hi = Math.max(hi, want[i]!);
            if (want[i]! > want[best]!) best = i;
            if (got[i]! > got[gotBest]!) gotBest = i;
            maxD = Math.max(maxD, Math.abs(got[i]! - want[i]!));
          }
          worst = Math.max(worst, maxD / (hi - lo));
          expect(gotBest, `step ${step}: argmax`).toBe(best);
          next = [best];
        }
        expect(worst).toBeLessThan(1e-5);
      } finally {
        ctx.dispose();
        model.dispose();
      }
    }, 180_000);
  }
});
