#!/usr/bin/env node
// The host time of a batched decode step: B sequences in their own regions of the KV cache (what
// `minfer serve -np B` and `minfer bench -npl B` run), each with a PP-token prompt, then steps of one
// token per sequence with every row's logits; prints the mean time per step, the part inside the
// backend's execute and copies, and the rest (JavaScript: cells, spans, graph lookup, bookkeeping).
// On a small model on the CPU the rest is what a GPU step pays on the host too.
//
//   node packages/cli/bench/host-step.mjs MODEL.gguf [B,… [PP [STEPS]]]     (default 16,64 128 50)
import { backend as cpu } from "@minfer/backend-cpu";
import { Context, Model } from "@minfer/engine";

const [path, bs = "16,64", ppArg = "128", stepsArg = "50"] = process.argv.slice(2);
if (!path) {
  console.error("usage: host-step.mjs MODEL.gguf [B,… [PP [STEPS]]]");
  process.exit(2);
}
const pp = Number(ppArg);
const steps = Number(stepsArg);
const runtime = await cpu.devices()[0].init({ threads: 2 });
const model = await Model.load(path, { runtime });
const tokens = (n, salt) =>
  Int32Array.from({ length: n }, (_, i) => (i * 7919 + salt * 104729 + 1) % model.hparams.nVocab);
for (const b of bs.split(",").map(Number)) {
  const ctx = new Context(model, { nCtx: b * 256, nSeqMax: b, kvUnified: false, reuseLogits: true });
  for (let s = 0; s < b; s++) await ctx.decode({ tokens: tokens(pp, s), seq: s, logits: "none" });
  const seq = Int32Array.from({ length: b }, (_, j) => j);
  let total = 0;
  let compute = 0;
  const warm = 5;
  for (let i = 0; i < warm + steps; i++) {
    await ctx.decode({ tokens: tokens(b, 1000 + i), seq, logits: "all" });
    if (i < warm) continue;
    total += ctx.lastTiming.totalMs;
    compute += ctx.lastTiming.computeMs;
  }
  const f = (ms) => (ms / steps).toFixed(3);
  console.log(
    `B=${b} (${b * 256} cells, prompts of ${pp}): ${f(total)} ms per step, ${f(compute)} ms in execute and copies, host ${f(total - compute)} ms`,
  );
  ctx.dispose();
}
model.dispose();
runtime.dispose();
