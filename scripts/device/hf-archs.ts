// The acceptance of issue 20 on the GPU machine: each tiny checkpoint transformers built
// (scripts/hf-fidelity/reference_archs.py: random init, float32, eager attention) gets the
// tokenizer files of its case, is converted by `minfer convert` to F32 and run by minfer with the
// CPU alone and with every layer on CUDA (F32 KV): the last prompt position's logits against
// transformers' (max |Δ| relative to their range) and minfer's own greedy continuation against
// transformers' greedy tokens, for each of the three prompts.
//   node dist/hf-archs.js REF_DIR OUT_DIR      (MINFER_FIXTURES: where vocab/ggml-vocab-*.gguf are)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cpu } from "../../packages/backend-cpu/src/index.js";
import { type CudaRuntime, backend as cuda } from "../../packages/backend-cuda/src/index.js";
import { convertCheckpoint } from "../../packages/cli/src/convert/convert.js";
import { TINY_CASES, writeTokenizerFiles } from "../../packages/cli/src/convert/tiny-checkpoint.js";
import { Context, Model } from "../../packages/engine/src/index.js";
import { argmax } from "../../packages/sampler/src/index.js";

const [refDir, out] = process.argv.slice(2) as [string, string];
interface Ref {
  name: string;
  prompts: { prompt_ids: number[]; greedy_ids: number[]; last_logits: number[] }[];
}
const cpuRt = await cpu.devices()[0]!.init();
const gpuDev = cuda.devices()[0];
if (!gpuDev) throw new Error(`no CUDA device: ${cuda.diagnostics().join("; ")}`);
const gpuRt = (await gpuDev.init()) as CudaRuntime;

const rows: Record<string, unknown>[] = [];
let bad = 0;
for (const c of TINY_CASES) {
  let ref: Ref;
  try {
    ref = JSON.parse(readFileSync(join(refDir, `${c.name}.json`), "utf8"));
  } catch {
    rows.push({ model: c.name, error: "no reference (reference_archs.py did not write it)" });
    bad++;
    continue;
  }
  const dir = join(refDir, c.name);
  await writeTokenizerFiles(dir, c);
  const path = join(out, `${c.name}-f32.gguf`);
  await convertCheckpoint(dir, path, { type: "f32" });
  for (const device of ["cpu", "cuda"] as const) {
    // Every layer and the output on the GPU (the block count from the file's own hparams).
    const layers = device === "cuda" ? await Model.load(path, { runtime: cpuRt }) : undefined;
    const nLayer = layers?.hparams.nLayer ?? 0;
    layers?.dispose();
    const loaded = await Model.load(path, {
      runtime: cpuRt,
      ...(device === "cuda" ? { offload: { runtime: gpuRt, layers: nLayer } } : {}),
    });
    for (const p of ref.prompts) {
      const ctx = new Context(loaded, { nCtx: 128, kvDtype: "f32" });
      let logits = await ctx.eval(p.prompt_ids);
      let lo = Number.POSITIVE_INFINITY;
      let hi = Number.NEGATIVE_INFINITY;
      let maxD = 0;
      p.last_logits.forEach((w, i) => {
        lo = Math.min(lo, w);
        hi = Math.max(hi, w);
        maxD = Math.max(maxD, Math.abs(w - logits[i]!));
      });
      const greedy: number[] = [];
      for (let s = 0; s < p.greedy_ids.length; s++) {
        const t = argmax(logits);
        greedy.push(t);
        logits = await ctx.eval([t]);
      }
      ctx.dispose();
      let same = 0;
      while (same < greedy.length && greedy[same] === p.greedy_ids[same]) same++;
      const relative = maxD / (hi - lo);
      const ok = same === greedy.length && relative < 1e-4;
      if (!ok) bad++;
      rows.push({ model: c.name, device, steps: greedy.length, identical: same, maxAbs: maxD, relative, ok });
    }
    loaded.dispose();
  }
}
writeFileSync(join(out, "hf-archs.json"), JSON.stringify(rows, null, 1));
for (const r of rows) console.log(JSON.stringify(r));
console.log(
  bad === 0 ? "hf-archs: every run identical to transformers" : `hf-archs: ${bad} run(s) outside the bar`,
);
gpuRt.dispose();
cpuRt.dispose();
process.exit(bad === 0 ? 0 : 1);
