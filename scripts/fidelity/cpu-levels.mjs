#!/usr/bin/env node
// How far two correct implementations of the same model drift apart on random weights: greedy
// decoding of one GGUF with the CPU backend at two SIMD levels (different summation orders and
// exp polynomials, each checked against the float64 reference by the op-conformance suite), then
// top-1 agreement with both fed the first run's tokens. The same measure as
// scripts/device/cuda-fidelity.ts uses for CUDA against the CPU, so the two can be read side by side.
//   node scripts/fidelity/cpu-levels.mjs MODEL.gguf [LEVEL_A=avx512] [LEVEL_B=scalar] [STEPS=64]
// (after the packages are built: npm test or node scripts/setup.mjs)
import { backend as cpu } from "../../packages/backend-cpu/dist/index.js";
import { Context, greedy, Model } from "../../packages/engine/dist/index.js";
import { argmax } from "../../packages/sampler/dist/index.js";

const [path, levelA = "avx512", levelB = "scalar", stepsArg = "64"] = process.argv.slice(2);
if (!path) {
  console.error("usage: cpu-levels.mjs MODEL.gguf [LEVEL_A] [LEVEL_B] [STEPS]");
  process.exit(2);
}
const steps = Number(stepsArg);
const open = async (simd) => {
  const runtime = await cpu.devices()[0].init({ threads: 1, simd });
  const model = await Model.load(path, { runtime });
  return { runtime, model, ctx: new Context(model, { nCtx: 256 }) };
};
const a = await open(levelA);
const b = await open(levelB);
const prompt = a.model.tokenizer.encode("Once upon a time", { addSpecial: true });
const never = () => false;
const ga = await greedy(a.ctx, prompt, steps, never);
const gb = await greedy(b.ctx, prompt, steps, never);
let identical = 0;
while (identical < ga.length && ga[identical] === gb[identical]) identical++;
a.ctx.clear();
b.ctx.clear();
let la = await a.ctx.eval(prompt);
let lb = await b.ctx.eval(prompt);
let agree = 0;
let maxDiff = 0;
for (const t of ga) {
  if (argmax(la) === argmax(lb)) agree++;
  for (let i = 0; i < la.length; i++) maxDiff = Math.max(maxDiff, Math.abs(la[i] - lb[i]));
  la = await a.ctx.eval([t]);
  lb = await b.ctx.eval([t]);
}
console.log(
  `${path}: ${levelA} vs ${levelB}: identical ${identical}/${ga.length} greedy tokens, ` +
    `teacher-forced top-1 ${(agree / ga.length).toFixed(4)}, max logit difference ${maxDiff.toPrecision(3)}`,
);
for (const x of [a, b]) {
  x.ctx.dispose();
  x.model.dispose();
  x.runtime.dispose();
}
