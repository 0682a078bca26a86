#!/usr/bin/env node
// The host's sampling of one serving step: R rows of a 152k vocabulary in one buffer (the logits a
// decode step copies back), each row sampled by its own Sampler (llama.cpp-like defaults) on its
// K candidate ids, as minfer serve does. "cold": the CPU caches flushed by a 64 MB pass first (as
// after a device copy into the buffer), "warm": sampled again at once. Medians of ROUNDS
// steps. A figure for docs/PERFORMANCE.md, not a test.
//   pnpm --filter @minfer/sampler build && node packages/sampler/bench/candidates.bench.mjs [R] [K] [ROUNDS]
import { LLAMA_CPP_SAMPLING, Sampler } from "../dist/index.js";

const n = 152_064;
const R = Number(process.argv[2] ?? 64);
const K = Number(process.argv[3] ?? 64);
const ROUNDS = Number(process.argv[4] ?? 15);

const data = new Float32Array(n * R);
let x = 12345;
for (let i = 0; i < data.length; i++) {
  x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
  data[i] = ((x / 2 ** 32) * 2 - 1) * 8;
}
// Each row's K best ids, best first, lower id first on ties (what the graph's TOP_K gives).
const ids = [];
for (let r = 0; r < R; r++) {
  const row = data.subarray(r * n, (r + 1) * n);
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((a, b) => (row[b] === row[a] ? a - b : row[b] - row[a]));
  ids.push(Int32Array.from(order.slice(0, K)));
}
// llama-server's defaults, which minfer serve applies to a request that sets none
const samplers = Array.from({ length: R }, (_, r) => new Sampler({ ...LLAMA_CPP_SAMPLING, seed: r }));
const evict = new Float32Array((64 << 20) / 4);

function step() {
  let t = 0;
  const t0 = process.hrtime.bigint();
  for (let r = 0; r < R; r++) t += samplers[r].sample(data.subarray(r * n, (r + 1) * n), ids[r]);
  return [Number(process.hrtime.bigint() - t0) / 1e3, t];
}
const median = (a) => [...a].sort((p, q) => p - q)[a.length >> 1];
const cold = [];
const warm = [];
for (let i = 0; i < ROUNDS; i++) {
  for (let j = 0; j < evict.length; j += 16) evict[j] += 1;
  cold.push(step()[0]);
  warm.push(step()[0]);
}
console.log(
  `${R} rows × ${n} logits, ${K} candidate ids a row, llama-server's defaults: cold ${median(cold).toFixed(0)} µs, ` +
    `warm ${median(warm).toFixed(0)} µs a step (medians of ${ROUNDS}; on the ids: ` +
    `${samplers.reduce((a, s) => a + s.candidateStats.onIds, 0)} of ${2 * ROUNDS * R} samples)`,
);
