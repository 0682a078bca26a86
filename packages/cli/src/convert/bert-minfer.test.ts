// minfer on the converted tiny BERT-family checkpoints against the float64 forward pass with
// transformers' semantics (hf-reference-bert.ts: exact erf GELU, sentence-transformers pooling):
// the pooled, normalised embeddings of every text, minfer's own tokenizer giving the reference's
// ids, and a cross-encoder's scores with transformers' token types (the document's segment 1).
// Measured (2026-12-05): F32 cosine ≥ 0.99999999999995 and scores within 9e-8 (minfer's exact
// GELU_ERF and F32 encoder K/V); F16 weights: cosine ≥ 0.9999993, scores within 1e-3.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { Context, embed, Model, rerankInput } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TINY_BERT_CASES, type TinyBertReferenceFile, tinyBertGguf } from "./tiny-bert.js";

let runtime: DeviceRuntime;
let tmp = "";
beforeAll(async () => {
  runtime = await cpuBackend.devices()[0]!.init({ threads: 2 });
  tmp = mkdtempSync(join(tmpdir(), "minfer-bert-minfer-"));
});
afterAll(() => {
  runtime?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

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

const CASES = TINY_BERT_CASES;

describe("minfer on converted BERT-family checkpoints against transformers' float64 semantics", () => {
  for (const c of CASES)
    for (const type of ["f32", "f16"]) {
      it(`${c.name} (${c.class}), ${type.toUpperCase()}`, async () => {
        const path = await tinyBertGguf(c.name, join(tmp, type), type);
        const ref = JSON.parse(
          readFileSync(path.replace(/\.gguf$/, ".reference.json"), "utf8"),
        ) as TinyBertReferenceFile;
        const model = await Model.load(path, { runtime });
        const ctx = new Context(model, { embeddings: true, nSeqMax: 8, nCtx: 512 });
        try {
          expect(ctx.pooling).toBe(ref.pooling);
          if (ref.embeddings) {
            for (const e of ref.embeddings) expect(model.tokenizer.encode(e.text), e.text).toEqual(e.ids);
            const ours = await embed(
              ctx,
              ref.embeddings.map((e) => e.text),
            );
            ref.embeddings.forEach((e, i) => {
              expect(cosine(ours[i]!.rows[0]!, e.normalized), e.text).toBeGreaterThan(
                type === "f32" ? 0.9999999 : 0.9999,
              );
            });
          } else {
            const pairs = ref.scores!;
            const inputs = pairs.map((p) => rerankInput(model, p.query, p.document));
            pairs.forEach((p, i) => {
              const input = inputs[i]!;
              const x = (Array.isArray(input) ? { tokens: input } : input) as {
                tokens: number[];
                tokenTypes?: number[];
              };
              expect(x.tokens, p.document).toEqual(p.ids);
              expect(x.tokenTypes ?? x.tokens.map(() => 0)).toEqual(p.types);
            });
            const ours = await embed(ctx, inputs);
            pairs.forEach((p, i) => {
              const diff = Math.abs(ours[i]!.rows[0]![0]! - p.scoreTypes[0]!);
              expect(diff, p.document).toBeLessThan(type === "f32" ? 1e-5 : 1e-2);
            });
          }
        } finally {
          ctx.dispose();
          model.dispose();
        }
      });
    }
});
