// Where a decode step's time goes on the GPU (run on the GPU machine): the model with every
// layer on CUDA, per-op times of one single-token step, of one 512-token micro-batch and of one
// step of each count of sequences (events between the nodes, captured with them into one graph), summed by op; and, without
// profiling, the mean wall time of a decode step (1 and B sequences) against the time inside
// execute (the rest is host work: JavaScript, copies).
//   node dist/cuda-profile.js OUT_DIR model.gguf [B,… [PP [DEPTH [REGIONS]]]]
// DEPTH > 0: also a 512-token micro-batch and a decode step after DEPTH tokens of context,
// profiled by op, and the same two timed without profiling (wall against GPU time).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cpu } from "../../packages/backend-cpu/src/index.js";
import { type CudaRuntime, backend as cuda } from "../../packages/backend-cuda/src/index.js";
import { Context, Model } from "../../packages/engine/src/index.js";
import { readGguf } from "../../packages/gguf/src/index.js";
import type { TimingReport } from "../../packages/scheduler/src/index.js";

const [out, path] = process.argv.slice(2) as [string, string];
// every execute timed natively (GPU time between events, host time inside execute): see stepLine
process.env.MINFER_CUDA_STEP_TIMES ??= "1";
const cpuRt = await cpu.devices()[0]!.init();
const gpuRt = (await cuda.devices()[0]!.init()) as CudaRuntime;

// Host time of the runtime's calls as JavaScript awaits them (writes and reads are synchronous
// copies; execute hands the program to a worker thread and resolves when the stream is done).
const calls = { write: 0, execute: 0, read: 0, executeWithIo: 0 };
for (const name of ["write", "execute", "read", "executeWithIo"] as const) {
  const f = (gpuRt[name] as (...a: unknown[]) => Promise<unknown>).bind(gpuRt);
  (gpuRt as unknown as Record<string, unknown>)[name] = async (...a: unknown[]) => {
    const t = performance.now();
    try {
      return await f(...a);
    } finally {
      calls[name] += performance.now() - t;
    }
  };
}
type Snap = {
  calls: typeof calls;
  times: NonNullable<ReturnType<CudaRuntime["graphStats"]>["stepTimes"]>;
  host: ReturnType<CudaRuntime["replayHostTimes"]>;
};
const snap = (): Snap => ({
  calls: { ...calls },
  times: gpuRt.graphStats().stepTimes ?? { runs: 0, gpuMicros: 0, executeMicros: 0, launchMicros: 0 },
  host: gpuRt.replayHostTimes(),
});
// The replayed steps' side of a stepLine: the JavaScript thread's phases (ReplayHostTimes) and the
// GPU time of their uploads and downloads, per replayed step.
function replayLine(a: Snap, b: Snap): string {
  const n = (b.host?.replays ?? 0) - (a.host?.replays ?? 0);
  if (n <= 0 || !a.host || !b.host) return "";
  const d = (k: keyof NonNullable<Snap["host"]>) => (b.host![k] - a.host![k]) / n;
  const us = (k: "uploadMicros" | "downloadMicros" | "uploadEnqueueMicros" | "graphLaunchMicros") =>
    ((b.times[k] ?? 0) - (a.times[k] ?? 0)) / n / 1000;
  const between = b.host.betweens - a.host.betweens;
  return (
    `; replayed steps (${n}): before the launch ${d("prepMs").toFixed(3)}, launchReplay ${d("launchMs").toFixed(3)} ` +
    `(until the graph's launch ${us("uploadEnqueueMicros").toFixed(3)}, in it ${us("graphLaunchMicros").toFixed(3)}), ` +
    `launch to done ${d("waitMs").toFixed(3)} (${d("polls").toFixed(1)} polls; GPU uploads ${us("uploadMicros").toFixed(3)}, ` +
    `downloads ${us("downloadMicros").toFixed(3)}), done to return ${d("resumeMs").toFixed(3)}, caller between steps ` +
    `${between > 0 ? ((b.host.betweenMs - a.host.betweenMs) / between).toFixed(3) : "-"} ms`
  );
}
// Per step between two snapshots: where the wall time of a decode step went.
function stepLine(a: Snap, b: Snap, steps: number, wallMs: number): string {
  const per = (x: number) => (x / steps).toFixed(3);
  const runs = b.times.runs - a.times.runs;
  const gpu = (b.times.gpuMicros - a.times.gpuMicros) / 1000;
  return (
    `wall ${per(wallMs)} ms per step; executeWithIo awaited ${per(b.calls.executeWithIo - a.calls.executeWithIo)} ` +
    `(writes, execute and reads in one call; within it or apart:) writes ${per(b.calls.write - a.calls.write)}, execute awaited ` +
    `${per(b.calls.execute - a.calls.execute)} (inside it: ${per((b.times.executeMicros - a.times.executeMicros) / 1000)}, ` +
    `until launched ${per((b.times.launchMicros - a.times.launchMicros) / 1000)}), reads ${per(b.calls.read - a.calls.read)}; ` +
    `GPU ${per(gpu)} (${runs} executes timed), so the GPU waits ${per(wallMs - gpu)} ms a step` +
    replayLine(a, b)
  );
}
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

// At depth: where a 512-token micro-batch and a decode step go after DEPTH tokens.
const depth = Number(process.argv[6] ?? 0);
if (depth > 0) {
  const fill = async (c: Context) => {
    for (let p = 0; p < depth; p += 512)
      await c.decode({ tokens: tokens(Math.min(512, depth - p), 40 + p), logits: "none" });
  };
  const deep = new Context(model, { nCtx: depth + 1024, profile: true });
  await fill(deep);
  await deep.decode({ tokens: tokens(512, 7), logits: "last" });
  const dpp = deep.lastTiming.reports![0]!;
  lines.push(`== pp512 at depth ${depth}, total ${(dpp.totalMicros / 1000).toFixed(2)} ms`, byOp(dpp));
  for (let i = 0; i < 3; i++) await deep.decode({ tokens: tokens(1, 8 + i), logits: "last" });
  const dtg = deep.lastTiming.reports![0]!;
  lines.push(
    `== one decode step at depth ${depth + 515}, total ${(dtg.totalMicros / 1000).toFixed(3)} ms`,
    byOp(dtg),
  );
  deep.dispose();
  const plainDeep = new Context(model, { nCtx: depth + 1024, reuseLogits: true });
  await fill(plainDeep);
  // 512-token batches at depth: each one removed again (seqRm) so the next sees the same depth
  const ppMs: number[] = [];
  for (let i = 0; i < 4; i++) {
    const a = snap();
    const t0 = performance.now();
    await plainDeep.decode({ tokens: tokens(512, 50 + i), logits: "last" });
    const wall = performance.now() - t0;
    if (i > 0) ppMs.push(wall);
    if (i === 3) lines.push(`== pp512 at depth ${depth} without profiling: ${stepLine(a, snap(), 1, wall)}`);
    plainDeep.seqRm(0, depth, -1);
  }
  lines.push(`   pp512 wall ms (3 runs): ${ppMs.map((x) => x.toFixed(2)).join(", ")}`);
  await plainDeep.decode({ tokens: tokens(1, 60), logits: "last" });
  await plainDeep.decode({ tokens: tokens(1, 61), logits: "last" });
  const a = snap();
  const t0 = performance.now();
  for (let i = 0; i < 32; i++) await plainDeep.decode({ tokens: tokens(1, 62 + i), logits: "last" });
  lines.push(
    `== decode at depth ${depth} without profiling: ${stepLine(a, snap(), 32, performance.now() - t0)}`,
  );
  plainDeep.dispose();
}

// Several sequences decoding together (as `minfer serve -np B` and `minfer bench -npl B` step them):
// for each B of the third argument (default "16,64") each sequence gets a prompt of the fourth
// argument's tokens (default 128, bench -npl's), then one step of B tokens is profiled and 32 plain steps are timed.
const streamCounts = (process.argv[4] ?? "16,64").split(",").map(Number);
const promptLen = Number(process.argv[5] ?? 128);
for (const streams of streamCounts) {
  const step = (i: number) => ({
    tokens: tokens(streams, 300 + i),
    seq: Array.from({ length: streams }, (_, s) => s),
    pos: Array.from({ length: streams }, () => promptLen + i),
    logits: "all" as const,
  });
  const prompts = async (c: Context) => {
    for (let s = 0; s < streams; s++)
      await c.decode({ tokens: tokens(promptLen, 200 + s), seq: s, logits: "none" });
  };
  // (REGIONS: contexts of that many 256-cell regions, as bench -npl 1,4,16,64 makes one of 64)
  const regions = Math.max(streams, Number(process.argv[7] ?? 0));
  const shape = { nCtx: regions * 256, nSeqMax: regions, kvUnified: false } as const;
  const multi = new Context(model, { ...shape, profile: true });
  await prompts(multi);
  for (let i = 0; i < 3; i++) await multi.decode(step(i));
  const ms = multi.lastTiming.reports![0]!;
  lines.push(
    `== one step of ${streams} sequences at depth ~${promptLen}, total ${(ms.totalMicros / 1000).toFixed(3)} ms`,
    byOp(ms),
  );
  multi.dispose();
  const multiPlain = new Context(model, { ...shape, reuseLogits: true });
  await prompts(multiPlain);
  let mTotal = 0;
  let mCompute = 0;
  let graphsBefore = gpuRt.graphStats();
  let mSnap = snap();
  for (let i = 0; i < 32; i++) {
    await multiPlain.decode(step(i));
    if (i < 2) {
      graphsBefore = gpuRt.graphStats();
      mSnap = snap();
      continue; // new shapes: graph build, capture
    }
    mTotal += multiPlain.lastTiming.totalMs;
    mCompute += multiPlain.lastTiming.computeMs;
  }
  // whether the 30 timed steps replayed a captured graph or captured (or launched directly) each time
  const graphsAfter = gpuRt.graphStats();
  const delta = {
    replays: graphsAfter.graphReplays - graphsBefore.graphReplays,
    // of the replays, those launched from the JavaScript thread (executeWithIo's fast path; the rest
    // went through a worker thread, which costs a hand-off each way)
    threadReplays: graphsAfter.threadReplays - graphsBefore.threadReplays,
    captures: graphsAfter.graphCaptures - graphsBefore.graphCaptures,
    failures: graphsAfter.graphFailures - graphsBefore.graphFailures,
    lastGraphError: graphsAfter.lastGraphError,
  };
  lines.push(
    `== ${streams} sequences without profiling: ${(mTotal / 30).toFixed(3)} ms per step, ${(mCompute / 30).toFixed(3)} ms in execute+copies, graphs over the 30 steps ${JSON.stringify(delta)}`,
    `   ${stepLine(mSnap, snap(), 30, mTotal)}`,
  );
  multiPlain.dispose();
}

// The logits read of a step of B sequences on its own: B rows of the vocabulary from a device
// buffer (what the executor reads after each step), and a zero-filled host array of that size.
for (const rows of [1, 16, 64]) {
  const bytes = rows * model.hparams.nVocab * 4;
  const buf = gpuRt.allocate(bytes, "logits-read");
  const readMs: number[] = [];
  const allocMs: number[] = [];
  for (let i = 0; i < 12; i++) {
    const t0 = performance.now();
    await gpuRt.read(buf, 0, bytes);
    const t1 = performance.now();
    const a = new Uint8Array(bytes);
    const t2 = performance.now();
    a[bytes - 1] = 1;
    if (i >= 2) {
      readMs.push(t1 - t0);
      allocMs.push(t2 - t1);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  lines.push(
    `== read of ${rows} logits rows (${(bytes / 1e6).toFixed(1)} MB): ${med(readMs).toFixed(3)} ms median; new Uint8Array of that size ${med(allocMs).toFixed(3)} ms`,
  );
  buf.dispose();
}

const plain = new Context(model, { nCtx: 1024, reuseLogits: true });
await plain.decode({ tokens: tokens(64, 9), logits: "last" });
await plain.decode({ tokens: tokens(1, 99), logits: "last" }); // captures the step's graph
let total = 0;
let compute = 0;
const steps = 128;
const s0 = snap();
const w0 = performance.now();
for (let i = 0; i < steps; i++) {
  await plain.decode({ tokens: tokens(1, 100 + i), logits: "last" });
  total += plain.lastTiming.totalMs;
  compute += plain.lastTiming.computeMs;
}
const loopMs = performance.now() - w0;
lines.splice(
  0,
  0,
  `== decode without profiling: ${(total / steps).toFixed(3)} ms per step, ${(compute / steps).toFixed(3)} ms in execute+copies, graphs ${JSON.stringify(gpuRt.graphStats())}`,
  `   ${stepLine(s0, snap(), steps, loopMs)} (wall: the loop's, decode calls back to back)`,
);
plain.dispose();
const text = lines.join("\n");
console.log(text.split("\n").slice(0, 80).join("\n"));
writeFileSync(join(out, "profile.txt"), text);
model.dispose();
gpuRt.dispose();
cpuRt.dispose();
