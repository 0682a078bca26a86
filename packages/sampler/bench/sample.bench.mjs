#!/usr/bin/env node
// Time per Sampler.sample call on a 152k vocabulary (Qwen2's size): each stage of the chain on its
// own, and a typical llama.cpp-like chain; a peaked and a flat distribution. A figure to record in
// docs/PERFORMANCE.md, not a test. (The grammar's cost is in the grammar's own bench.)
//   pnpm --filter @minfer/sampler build && node packages/sampler/bench/sample.bench.mjs
import { Sampler } from "../dist/index.js";

const n = 152_064;
function logits(spread, seed) {
  let x = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    out[i] = ((x / 2 ** 32) * 2 - 1) * spread;
  }
  return out;
}
const off = { topK: 0, topP: 1, minP: 0 };
// DRY needs token texts; synthetic ones: every 50th id holds a newline (a sequence breaker).
const tokenText = (id) => (id % 50 === 0 ? "\n" : `t${id}`);
const cases = [
  ["greedy", { temperature: 0 }],
  ["defaults (top-k 40, top-p 0.95, min-p 0.05, temp 0.8)", {}],
  ["top-k 40 + top-p 0.95 (min-p 0)", { minP: 0 }],
  ["top-p 0.95 only", { ...off, topP: 0.95 }],
  ["min-p 0.05 only", { ...off, minP: 0.05 }],
  ["typical 0.9 only (full sort)", { ...off, typicalP: 0.9 }],
  ["top-n-sigma 1 only", { ...off, topNSigma: 1 }],
  ["XTC (p 1, threshold 0.1) after top-k 40", { minP: 0, topP: 1, xtcProbability: 1 }],
  ["no cut (top-k 0, top-p 1, min-p 0)", off],
  [
    "penalties (repeat 1.1, freq 0.1, presence 0.1; last 64) + defaults",
    { repeatPenalty: 1.1, frequencyPenalty: 0.1, presencePenalty: 0.1 },
  ],
  ["DRY 0.8 (history 1024) + defaults", { dryMultiplier: 0.8, tokenText }],
  [
    "logit bias (10 ids) + defaults",
    { logitBias: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [i * 977, -1])) },
  ],
  ["mirostat v2 (tau 5)", { mirostat: 2 }],
  ["mirostat v1 (tau 5)", { mirostat: 1 }],
  [
    "llama.cpp-like: penalties + DRY + top-k 40 + min-p 0.05 + temp",
    { repeatPenalty: 1.1, dryMultiplier: 0.8, tokenText, topK: 40, topP: 1, minP: 0.05 },
  ],
  ["sampleWithLogprobs(5) + defaults", {}, 5],
];
// A history of 1024 tokens with repeats, for the penalties and DRY.
const history = Array.from({ length: 1024 }, (_, i) => ((i * 7919) % 300) + (i % 3));
console.log("| setting | distribution | ms per call |\n| --- | --- | ---: |");
for (const [name, opts, nProbs] of cases) {
  for (const [dist, spread] of [
    ["peaked (logits ±20)", 20],
    ["flat (logits ±0.5)", 0.5],
  ]) {
    const v = logits(spread, 7);
    const s = new Sampler({ seed: 1, ...opts });
    s.acceptPrompt(history);
    const call = nProbs === undefined ? () => s.sample(v) : () => s.sampleWithLogprobs(v, nProbs);
    for (let i = 0; i < 5; i++) call();
    const calls = name.includes("full sort") || name.includes("no cut") ? 10 : 50;
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) call();
    console.log(`| ${name} | ${dist} | ${((performance.now() - t0) / calls).toFixed(3)} |`);
  }
}
