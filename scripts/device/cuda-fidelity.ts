// Fidelity of the CUDA backend against the CPU backend on the same files (run on the GPU
// machine): for each model, greedy decoding for STEPS tokens with every layer on the GPU and
// with the CPU alone, the number of identical leading tokens, and the top-1 agreement when both
// are fed the CPU's tokens (teacher forcing). With --golden FILE (stories260K's llama.cpp
// greedy continuation, packages/models/test/stories260K.llamacpp.golden.json) the first model's
// GPU continuation is also compared with llama.cpp's.
//   node dist/cuda-fidelity.js OUT_DIR [--golden FILE] model.gguf …
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cpu } from "../../packages/backend-cpu/src/index.js";
import { type CudaRuntime, backend as cuda } from "../../packages/backend-cuda/src/index.js";
import { Context, greedy, Model } from "../../packages/engine/src/index.js";
import { argmax } from "../../packages/sampler/src/index.js";

const STEPS = 64;
const PROMPT = "Once upon a time";
const args = process.argv.slice(2);
const out = args.shift()!;
let golden: { promptIds: number[]; ids: number[] } | undefined;
const gi = args.indexOf("--golden");
if (gi >= 0) {
  golden = JSON.parse(readFileSync(args[gi + 1]!, "utf8"));
  args.splice(gi, 2);
}

const cpuRt = await cpu.devices()[0]!.init();
const gpuDev = cuda.devices()[0];
if (!gpuDev) throw new Error(`no CUDA device: ${cuda.diagnostics().join("; ")}`);
const gpuRt = (await gpuDev.init()) as CudaRuntime;

interface Row {
  model: string;
  identical: number;
  steps: number;
  top1: number;
  maxAbsLogitDiff: number;
  cpuText: string;
  gpuText: string;
  /** Nodes of the prompt's graph per device and op (profiled once): where the layers really ran. */
  placement?: Record<string, Record<string, number>>;
  golden?: string;
  graphs?: unknown;
}
const rows: Row[] = [];

async function placementOf(model: Model, prompt: number[]) {
  const p = new Context(model, { nCtx: 256, profile: true });
  try {
    await p.eval(prompt);
    const out: Record<string, Record<string, number>> = {};
    for (const r of p.lastTiming.reports ?? [])
      for (const row of r.rows) {
        const d = out[row.device] ?? {};
        d[row.op] = (d[row.op] ?? 0) + 1;
        out[row.device] = d;
      }
    return out;
  } finally {
    p.dispose();
  }
}
for (const [i, path] of args.entries()) {
  const onCpu = await Model.load(path, { runtime: cpuRt });
  const onGpu = await Model.load(path, {
    runtime: cpuRt,
    offload: { runtime: gpuRt, layers: onCpu.hparams.nLayer },
  });
  const a = new Context(onCpu, { nCtx: 256 });
  const b = new Context(onGpu, { nCtx: 256 });
  try {
    const prompt =
      i === 0 && golden ? golden.promptIds : onCpu.tokenizer.encode(PROMPT, { addSpecial: true });
    const never = () => false;
    const ca = await greedy(a, prompt, STEPS, never);
    const cb = await greedy(b, prompt, STEPS, never);
    let identical = 0;
    while (identical < ca.length && ca[identical] === cb[identical]) identical++;
    // Teacher forcing on the CPU's tokens: top-1 agreement and the largest logit difference.
    a.clear();
    b.clear();
    let agree = 0;
    let maxDiff = 0;
    let la = await a.eval(prompt);
    let lb = await b.eval(prompt);
    for (let s = 0; s < ca.length; s++) {
      if (argmax(la) === argmax(lb)) agree++;
      for (let k = 0; k < la.length; k++) maxDiff = Math.max(maxDiff, Math.abs(la[k]! - lb[k]!));
      la = await a.eval([ca[s]!]);
      lb = await b.eval([ca[s]!]);
    }
    const row: Row = {
      model: path,
      identical,
      steps: ca.length,
      top1: agree / ca.length,
      maxAbsLogitDiff: maxDiff,
      cpuText: onCpu.tokenizer.decode(ca),
      gpuText: onGpu.tokenizer.decode(cb),
      graphs: gpuRt.graphStats(),
      placement: await placementOf(onGpu, prompt),
    };
    if (i === 0 && golden) {
      b.clear();
      const g = await greedy(b, golden.promptIds, golden.ids.length, never);
      let same = 0;
      while (same < g.length && g[same] === golden.ids[same]) same++;
      row.golden = `${same}/${golden.ids.length} tokens equal llama.cpp's greedy continuation`;
    }
    rows.push(row);
    console.log(JSON.stringify(row));
  } catch (e) {
    rows.push({
      model: path,
      identical: -1,
      steps: 0,
      top1: 0,
      maxAbsLogitDiff: 0,
      cpuText: "",
      gpuText: String((e as Error).stack),
    });
    console.log(`${path}: ${(e as Error).stack}`);
  } finally {
    a.dispose();
    b.dispose();
    onCpu.dispose();
    onGpu.dispose();
  }
}
writeFileSync(join(out, "fidelity.json"), JSON.stringify(rows, null, 2));
gpuRt.dispose();
cpuRt.dispose();
