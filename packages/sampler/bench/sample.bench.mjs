#!/usr/bin/env node
// Time per Sampler.sample call on a 152k vocabulary (Qwen2's size), for each cut setting and a
// peaked and a flat distribution. A figure to record in docs/PERFORMANCE.md, not a test.
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
const cases = [
  ["greedy", { temperature: 0 }],
  ["defaults (top-k 40, top-p 0.95, temp 0.8)", {}],
  ["top-p 0.95 only (top-k 0)", { topK: 0 }],
  ["no cut (top-k 0, top-p 1)", { topK: 0, topP: 1 }],
];
console.log("| setting | distribution | ms per call |\n| --- | --- | ---: |");
for (const [name, opts] of cases) {
  for (const [dist, spread] of [
    ["peaked (logits ±20)", 20],
    ["flat (logits ±0.5)", 0.5],
  ]) {
    const v = logits(spread, 7);
    const s = new Sampler({ seed: 1, ...opts });
    for (let i = 0; i < 10; i++) s.sample(v);
    const calls = 100;
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) s.sample(v);
    console.log(`| ${name} | ${dist} | ${((performance.now() - t0) / calls).toFixed(3)} |`);
  }
}
