// Why a step of `minfer serve -np B` at B streams takes longer than a step of `minfer bench -npl B`
// (run on the GPU machine): the same model and the same B sequences decoding together, with each
// context option the server adds turned on one at a time. Per variant, B prompts of PP tokens
// prefilled, then STEPS decode calls of B tokens, each timed on the host (the call to its logits)
// and on the GPU (MINFER_CUDA_STEP_TIMES: events around each execute), and how the runtime ran
// them (replays polled on this thread, or handed to a worker).
//   node dist/cuda-serve-step.js OUT_DIR model.gguf [B=64] [PP=128] [STEPS=64]
// Variants:
//   bench       bench -npl's context (reuseLogits, a region of PP+TG cells a sequence), logits "all"
//   candidates  + the server's 64 candidate ids a row (Context.candidates), logits a boolean per row
//   cand-read   as candidates, and every row's candidates read as the server's sampler reads them
//   staggered   as candidates, the sequences at different depths (prompts of PP/2 .. 3·PP/2 tokens)
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cpu } from "../../packages/backend-cpu/src/index.js";
import { type CudaRuntime, backend as cuda } from "../../packages/backend-cuda/src/index.js";
import { Context, type ContextOptions, Model } from "../../packages/engine/src/index.js";
import { readGguf } from "../../packages/gguf/src/index.js";

const [out, path] = process.argv.slice(2) as [string, string];
const B = Number(process.argv[4] ?? 64);
const PP = Number(process.argv[5] ?? 128);
const STEPS = Number(process.argv[6] ?? 64);
process.env.MINFER_CUDA_STEP_TIMES ??= "1";
const cpuRt = await cpu.devices()[0]!.init();
const gpuRt = (await cuda.devices()[0]!.init()) as CudaRuntime;
const meta = (await readGguf(path)).metadata;
const nLayer = meta.integer(`${meta.architecture}.block_count`);
const model = await Model.load(path, { runtime: cpuRt, offload: { runtime: gpuRt, layers: nLayer } });
const nVocab = model.hparams.nVocab;
const tokenAt = (i: number, seq: number) => (i * 7919 + seq * 15485863 + 1) % nVocab;

interface Variant {
  name: string;
  options: ContextOptions;
  rowsFlag: boolean;
  readCandidates: boolean;
  staggered: boolean;
}
const perSlot = 2 * PP + 8 + STEPS;
const base: ContextOptions = { reuseLogits: true, nCtx: B * perSlot, nSeqMax: B, kvUnified: false };
const variants: Variant[] = [
  { name: "bench", options: base, rowsFlag: false, readCandidates: false, staggered: false },
  {
    name: "candidates",
    options: { ...base, candidates: 64 },
    rowsFlag: true,
    readCandidates: false,
    staggered: false,
  },
  {
    name: "cand-read",
    options: { ...base, candidates: 64 },
    rowsFlag: true,
    readCandidates: true,
    staggered: false,
  },
  {
    name: "staggered",
    options: { ...base, candidates: 64 },
    rowsFlag: true,
    readCandidates: true,
    staggered: true,
  },
];

const lines: string[] = [];
const say = (s: string) => {
  lines.push(s);
  console.log(s);
};
say(`${path}: B=${B} PP=${PP} STEPS=${STEPS}`);
say("variant      wall ms/step  GPU ms/step  host ms/step  replays on thread / timed executes");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const v of [...variants, variants[0]!]) {
  const ctx = new Context(model, v.options);
  try {
    // prompts: one decode call of all B (staggered: lengths PP/2 .. 3·PP/2)
    const lens = Array.from({ length: B }, (_, j) => (v.staggered ? Math.floor(PP / 2 + (j * PP) / B) : PP));
    const tokens: number[] = [];
    const seq: number[] = [];
    for (let j = 0; j < B; j++)
      for (let i = 0; i < lens[j]!; i++) {
        tokens.push(tokenAt(i, j));
        seq.push(j);
      }
    await ctx.decode({ tokens: Int32Array.from(tokens), seq: Int32Array.from(seq), logits: "last" });
    const seqs = Int32Array.from({ length: B }, (_, j) => j);
    const flags = Array.from({ length: B }, () => true);
    const step = new Int32Array(B);
    const walls: number[] = [];
    let sink = 0;
    const s0 = gpuRt.graphStats();
    for (let i = 0; i < STEPS; i++) {
      for (let j = 0; j < B; j++) step[j] = tokenAt(PP + i, j);
      const t0 = performance.now();
      const logits = await ctx.decode(
        v.rowsFlag
          ? { tokens: [...step], seq: [...seqs], logits: flags }
          : { tokens: step, seq: seqs, logits: "all" },
      );
      walls.push(performance.now() - t0);
      if (v.readCandidates)
        for (let r = 0; r < logits.count; r++) {
          const ids = logits.candidates(r);
          const row = logits.get(r);
          for (let k = 0; k < ids.length; k++) sink += row[ids[k]!]!;
        }
    }
    const s1 = gpuRt.graphStats();
    const t0 = s0.stepTimes!,
      t1 = s1.stepTimes!;
    const runs = t1.runs - t0.runs;
    const gpu = (t1.gpuMicros - t0.gpuMicros) / 1000 / STEPS;
    const host = (t1.executeMicros - t0.executeMicros) / 1000 / STEPS;
    const wall = walls.reduce((a, b) => a + b, 0) / STEPS;
    say(
      `${v.name.padEnd(12)} ${wall.toFixed(3).padStart(12)} ${gpu.toFixed(3).padStart(12)} ${host.toFixed(3).padStart(13)}  ${s1.threadReplays - s0.threadReplays} / ${runs}   (median wall ${median(walls).toFixed(3)}${Number.isNaN(sink) ? "; NaN read" : ""})`,
    );
  } finally {
    ctx.dispose();
  }
}
writeFileSync(join(out, "serve-step.txt"), `${lines.join("\n")}\n`);
model.dispose();
gpuRt.dispose();
cpuRt.dispose();
