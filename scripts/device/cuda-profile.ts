// Where a decode step's time goes on the GPU (run on the GPU machine): the model with every
// layer on CUDA, per-op times of one single-token step, of one 512-token micro-batch and of one
// step of 16 sequences (events between the nodes, captured with them into one graph), summed by op; and, without
// profiling, the mean wall time of a decode step (1 and 16 sequences) against the time inside
// execute (the rest is host work: JavaScript, copies).
//   node dist/cuda-profile.js OUT_DIR model.gguf
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cpu } from "../../packages/backend-cpu/src/index.js";
import { type CudaRuntime, backend as cuda } from "../../packages/backend-cuda/src/index.js";
import { Context, Model } from "../../packages/engine/src/index.js";
import { readGguf } from "../../packages/gguf/src/index.js";
import type { TimingReport } from "../../packages/scheduler/src/index.js";

const [out, path] = process.argv.slice(2) as [string, string];
const cpuRt = await cpu.devices()[0]!.init();
const gpuRt = (await cuda.devices()[0]!.init()) as CudaRuntime;
const meta = (await readGguf(path)).metadata;
const nLayer = meta.integer(`${meta.architecture}.block_count`);
const model = await Model.load(path, { runtime: cpuRt, offload: { runtime: gpuRt, layers: nLayer } });
const tokens = (n: number, salt: number) =>
  Int32Array.from({ length: n }, (_, i) => (i * 7919 + salt * 104729 + 1) % model.hparams.nVocab);

function byOp(r: TimingReport): string {
  const sums = new Map<string, { us: number; n: number }>();
  for (const row of r.rows) {
    const s = sums.get(row.op) ?? { us: 0, n: 0 };
    s.us += row.micros;
    s.n++;
    sums.set(row.op, s);
  }
  return [...sums.entries()]
    .sort((a, b) => b[1].us - a[1].us)
    .map(
      ([op, s]) =>
        `${op.padEnd(14)} ${s.us.toFixed(0).padStart(8)} µs  ×${s.n}  (${((100 * s.us) / r.totalMicros).toFixed(1)}%)`,
    )
    .join("\n");
}

const lines: string[] = [];
const prof = new Context(model, { nCtx: 1024, profile: true });
await prof.decode({ tokens: tokens(512, 1), logits: "last" });
const pp = prof.lastTiming.reports![0]!;
lines.push(`== pp512 (one micro-batch), total ${(pp.totalMicros / 1000).toFixed(2)} ms`, byOp(pp));
for (let i = 0; i < 4; i++) await prof.decode({ tokens: tokens(1, 2 + i), logits: "last" });
const tg = prof.lastTiming.reports![0]!;
lines.push(
  `== one decode step at depth 516, total ${(tg.totalMicros / 1000).toFixed(3)} ms`,
  byOp(tg),
  tg.format(),
);
prof.dispose();

// 16 sequences decoding together (as `minfer serve -np 16` steps them): each with a 100-token
// prompt, then one step of 16 tokens, profiled, and 32 plain steps timed.
const streams = 16;
const multi = new Context(model, { nCtx: streams * 256, nSeqMax: streams, kvUnified: false, profile: true });
for (let s = 0; s < streams; s++)
  await multi.decode({ tokens: tokens(100, 200 + s), seq: s, logits: "none" });
const step = (i: number) => ({
  tokens: tokens(streams, 300 + i),
  seq: Array.from({ length: streams }, (_, s) => s),
  pos: Array.from({ length: streams }, () => 100 + i),
  logits: "all" as const,
});
for (let i = 0; i < 3; i++) await multi.decode(step(i));
const ms = multi.lastTiming.reports![0]!;
lines.push(
  `== one step of ${streams} sequences at depth ~100, total ${(ms.totalMicros / 1000).toFixed(3)} ms`,
  byOp(ms),
);
multi.dispose();
const multiPlain = new Context(model, { nCtx: streams * 256, nSeqMax: streams, kvUnified: false });
for (let s = 0; s < streams; s++)
  await multiPlain.decode({ tokens: tokens(100, 200 + s), seq: s, logits: "none" });
let mTotal = 0;
let mCompute = 0;
let graphsBefore = gpuRt.graphStats();
for (let i = 0; i < 32; i++) {
  await multiPlain.decode(step(i));
  if (i < 2) {
    graphsBefore = gpuRt.graphStats();
    continue; // new shapes: graph build, capture
  }
  mTotal += multiPlain.lastTiming.totalMs;
  mCompute += multiPlain.lastTiming.computeMs;
}
// whether the 30 timed steps replayed a captured graph or captured (or launched directly) each time
const graphsAfter = gpuRt.graphStats();
const delta = {
  replays: graphsAfter.graphReplays - graphsBefore.graphReplays,
  captures: graphsAfter.graphCaptures - graphsBefore.graphCaptures,
  failures: graphsAfter.graphFailures - graphsBefore.graphFailures,
  lastGraphError: graphsAfter.lastGraphError,
};
lines.push(
  `== ${streams} sequences without profiling: ${(mTotal / 30).toFixed(3)} ms per step, ${(mCompute / 30).toFixed(3)} ms in execute+copies, graphs over the 30 steps ${JSON.stringify(delta)}`,
);
multiPlain.dispose();

const plain = new Context(model, { nCtx: 1024 });
await plain.decode({ tokens: tokens(64, 9), logits: "last" });
let total = 0;
let compute = 0;
const steps = 128;
for (let i = 0; i < steps; i++) {
  await plain.decode({ tokens: tokens(1, 100 + i), logits: "last" });
  total += plain.lastTiming.totalMs;
  compute += plain.lastTiming.computeMs;
}
lines.splice(
  0,
  0,
  `== decode without profiling: ${(total / steps).toFixed(3)} ms per step, ${(compute / steps).toFixed(3)} ms in execute+copies, graphs ${JSON.stringify(gpuRt.graphStats())}`,
);
plain.dispose();
const text = lines.join("\n");
console.log(text.split("\n").slice(0, 80).join("\n"));
writeFileSync(join(out, "profile.txt"), text);
model.dispose();
gpuRt.dispose();
cpuRt.dispose();
