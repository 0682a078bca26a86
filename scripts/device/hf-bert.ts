// Issue 25's acceptance on the GPU machine: tiny BERT-family checkpoints made by transformers
// (scripts/hf-fidelity/reference_bert.py), converted by `minfer convert` to F32 and run by minfer
// on the CPU and with every layer on CUDA, against sentence-transformers' embeddings (cosine) and a
// cross-encoder's logits (|Δ|), with minfer's tokenizer checked against transformers' ids.
//   node dist/hf-bert.js prep DIR         writes DIR/cases.json and each case's config, tokenizer
//                                         and pooling files (then: python3 reference_bert.py DIR)
//   node dist/hf-bert.js compare DIR OUT  converts and compares (--cpu-only: without CUDA);
//                                         OUT/hf-bert.json, and the GGUFs with transformers' outputs
//                                         (OUT/NAME-f32.gguf, NAME.json) for bert_vs_llamacpp.py
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cpu } from "../../packages/backend-cpu/src/index.js";
import { type CudaRuntime, backend as cuda } from "../../packages/backend-cuda/src/index.js";
import { convertCheckpoint } from "../../packages/cli/src/convert/convert.js";
import {
  TINY_BERT_PAIRS,
  TINY_BERT_TEXTS,
  tinyBertCase,
  tinyBertCheckpoint,
} from "../../packages/cli/src/convert/tiny-bert.js";
import { Context, embed, Model, rerankInput } from "../../packages/engine/src/index.js";

/** The cases transformers builds without remote code (nomic-bert needs trust_remote_code). */
const CASES = ["bert", "bert-cls", "bert-reranker", "xlm-roberta", "xlm-roberta-reranker"];
const COSINE_BAR = 0.99999;
const SCORE_BAR = 1e-4;

interface Ref {
  name: string;
  by: string;
  embeddings?: { text: string; ids: number[]; embedding: number[] }[];
  scores?: { query: string; document: string; ids: number[]; types: number[]; logits: number[] }[];
}

const [mode, dir, out] = process.argv.slice(2).filter((a) => !a.startsWith("--")) as [
  string,
  string,
  string | undefined,
];
if (mode === "prep") {
  const cases = [];
  for (const name of CASES) {
    await tinyBertCheckpoint(name, join(dir, name));
    const c = tinyBertCase(name);
    cases.push({
      name,
      class: c.class,
      pooling: c.pooling,
      seed: c.seed,
      texts: TINY_BERT_TEXTS,
      pairs: TINY_BERT_PAIRS,
    });
  }
  writeFileSync(join(dir, "cases.json"), JSON.stringify(cases, null, 1));
  console.log(`hf-bert: ${cases.length} cases written under ${dir}`);
  process.exit(0);
}
if (mode !== "compare" || !out) throw new Error("usage: hf-bert.js prep DIR | compare DIR OUT");

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

// (--cpu-only: the CPU alone, to try the script on a machine without a GPU)
const devices: ("cpu" | "cuda")[] = process.argv.includes("--cpu-only") ? ["cpu"] : ["cpu", "cuda"];
const cpuRt = await cpu.devices()[0]!.init();
let gpuRt: CudaRuntime | undefined;
if (devices.includes("cuda")) {
  const gpuDev = cuda.devices()[0];
  if (!gpuDev) throw new Error(`no CUDA device: ${cuda.diagnostics().join("; ")}`);
  gpuRt = (await gpuDev.init()) as CudaRuntime;
}
mkdirSync(out, { recursive: true });
const rows: Record<string, unknown>[] = [];
let bad = 0;
for (const name of CASES) {
  let ref: Ref;
  try {
    ref = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));
  } catch {
    rows.push({ model: name, ok: false, error: "no reference (reference_bert.py did not write it)" });
    bad++;
    continue;
  }
  const path = join(out, `${name}-f32.gguf`);
  await convertCheckpoint(join(dir, name), path, { type: "f32" });
  copyFileSync(join(dir, `${name}.json`), join(out, `${name}.json`));
  for (const device of devices) {
    const probe = await Model.load(path, { runtime: cpuRt });
    const nLayer = probe.hparams.nLayer;
    probe.dispose();
    const model = await Model.load(path, {
      runtime: cpuRt,
      ...(device === "cuda" && gpuRt ? { offload: { runtime: gpuRt, layers: nLayer } } : {}),
    });
    const ctx = new Context(model, { embeddings: true, nSeqMax: 8, nCtx: 512 });
    try {
      if (ref.embeddings) {
        const tokensOk = ref.embeddings.every(
          (e) => JSON.stringify(model.tokenizer.encode(e.text)) === JSON.stringify(e.ids),
        );
        const ours = await embed(
          ctx,
          ref.embeddings.map((e) => e.text),
        );
        const worst = Math.min(...ref.embeddings.map((e, i) => cosine(ours[i]!.rows[0]!, e.embedding)));
        const ok = tokensOk && worst >= COSINE_BAR;
        if (!ok) bad++;
        rows.push({ model: name, by: ref.by, device, pooling: ctx.pooling, tokensOk, minCosine: worst, ok });
      } else {
        const pairs = ref.scores!;
        const inputs = pairs.map((p) => rerankInput(model, p.query, p.document));
        const tokensOk = pairs.every((p, i) => {
          const input = inputs[i]!;
          const x = (Array.isArray(input) ? { tokens: input } : input) as {
            tokens: number[];
            tokenTypes?: number[];
          };
          return (
            JSON.stringify(x.tokens) === JSON.stringify(p.ids) &&
            JSON.stringify(x.tokenTypes ?? x.tokens.map(() => 0)) === JSON.stringify(p.types)
          );
        });
        const ours = await embed(ctx, inputs);
        const maxDiff = Math.max(...pairs.map((p, i) => Math.abs(ours[i]!.rows[0]![0]! - p.logits[0]!)));
        const ok = tokensOk && maxDiff <= SCORE_BAR;
        if (!ok) bad++;
        rows.push({
          model: name,
          by: ref.by,
          device,
          pooling: ctx.pooling,
          tokensOk,
          maxScoreDiff: maxDiff,
          ok,
        });
      }
    } catch (e) {
      bad++;
      rows.push({ model: name, device, ok: false, error: String((e as Error).stack ?? e) });
    } finally {
      ctx.dispose();
      model.dispose();
    }
  }
}
writeFileSync(join(out, "hf-bert.json"), JSON.stringify(rows, null, 1));
for (const r of rows) console.log(JSON.stringify(r));
console.log(bad === 0 ? "hf-bert: every run within the bars" : `hf-bert: ${bad} run(s) outside the bars`);
gpuRt?.dispose();
cpuRt.dispose();
process.exit(bad === 0 ? 0 : 1);
