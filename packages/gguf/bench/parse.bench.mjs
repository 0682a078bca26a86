#!/usr/bin/env node
// Parse time of a GGUF header: minfer against @huggingface/gguf (a JavaScript GGUF reader) on the
// same file, same process. Usage: node bench/parse.bench.mjs [FILE] [RUNS]
// Default file: the qwen2 vocabulary (151,936 tokens, 151,387 merges) from ../shared/fixtures.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gguf } from "@huggingface/gguf";
import { parseGguf, readGguf } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = process.env.MINFER_FIXTURES ?? resolve(here, "../../../../shared/fixtures");
const file = process.argv[2] ?? resolve(fixtures, "vocab/ggml-vocab-qwen2.gguf");
const runs = Number(process.argv[3] ?? 15);

async function time(label, fn) {
  for (let i = 0; i < 3; i++) await fn(); // warm up
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)];
  console.log(
    `${label.padEnd(42)} median ${median.toFixed(1).padStart(7)} ms   min ${ms[0].toFixed(1).padStart(7)} ms`,
  );
  return median;
}

const bytes = new Uint8Array(readFileSync(file));
const info = parseGguf(bytes);
console.log(
  `${file}: ${bytes.length} bytes, ${info.metadata.size} keys, ${info.tensors.length} tensors, ${runs} runs, node ${process.version}`,
);
const ours = await time("minfer readGguf(path)", () => readGguf(file));
await time("minfer parseGguf(bytes)", () => parseGguf(bytes));
const peer = await time("@huggingface/gguf gguf(path, allowLocalFile)", () =>
  gguf(file, { allowLocalFile: true, computeParametersCount: false }),
);
console.log(`ratio (peer / minfer, from a path): ${(peer / ours).toFixed(2)}x`);
