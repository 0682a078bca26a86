#!/usr/bin/env node
// Regenerates test/stories260K.llamacpp.golden.json: llama.cpp's greedy continuation of "Once upon a
// time" on ../shared/fixtures/models/stories260K.gguf (200 tokens, BOS + prompt as llama.cpp
// tokenizes it), with the top-5 logits of every step — the golden the engine's fidelity test
// compares with. Runs llama.cpp through node-llama-cpp's prebuilt CPU binary, 1 thread.
//   node packages/models/test/llamacpp-golden.mjs
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = process.env.MINFER_FIXTURES ?? resolve(here, "../../../../shared/fixtures");
const modelPath = resolve(fixtures, "models/stories260K.gguf");
const steps = 200;

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const ctx = await model.createContext({ contextSize: 512, batchSize: 512, threads: 1 });
const seq = ctx.getSequence();
const prompt = "Once upon a time";
const promptIds = [model.tokens.bos, ...model.tokenize(prompt, false)].map(Number);

const ids = [];
const top = [];
let next = promptIds;
for (let i = 0; i < steps; i++) {
  const res = await seq.controlledEvaluate(
    next.map((t, k) => (k === next.length - 1 ? [t, { generateNext: { probabilities: true } }] : t)),
  );
  const probs = res.at(-1).next.probabilities;
  // Greedy: the most probable token (ties: the lower id).
  const ranked = [...probs.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const chosen = Number(ranked[0][0]);
  top.push(ranked.slice(0, 5).map(([id, p]) => ({ id: Number(id), p: Number(p.toFixed(6)) })));
  ids.push(chosen);
  if (chosen === model.tokens.eos) break;
  next = [chosen];
}
const out = {
  _note:
    "llama.cpp greedy continuation (node-llama-cpp 3.22.1, CPU, 1 thread). Regenerate with test/llamacpp-golden.mjs.",
  model: "stories260K.gguf",
  prompt,
  promptIds,
  ids,
  text: model.detokenize(ids),
  top5: top,
};
writeFileSync(resolve(here, "stories260K.llamacpp.golden.json"), `${JSON.stringify(out, null, 1)}\n`);
console.log(`${ids.length} tokens: ${out.text.slice(0, 160)}…`);
await ctx.dispose();
await model.dispose();
await llama.dispose();
