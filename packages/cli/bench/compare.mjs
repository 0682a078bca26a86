#!/usr/bin/env node
// `minfer bench` beside llama.cpp (through node-llama-cpp's prebuilt CPU binary) on the same
// files, thread count and test sizes, alternating the two engines per repetition so machine
// noise hits both alike. Prints a table (markdown) and, with --json, the raw figures.
//
//   node packages/cli/bench/compare.mjs [-p 128] [-n 64] [-t 2] [-r 3] [--json] MODEL.gguf…
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, "..", "dist", "bin.js");
const argv = process.argv.slice(2);
const opt = (flag, dflt) => {
  const i = argv.indexOf(flag);
  if (i < 0) return dflt;
  const v = Number(argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${flag} needs a positive integer`);
  argv.splice(i, 2);
  return v;
};
const nPrompt = opt("-p", 128);
const nGen = opt("-n", 64);
const threads = opt("-t", 2);
const reps = opt("-r", 3);
const json = argv.includes("--json");
const files = argv.filter((a) => a !== "--json");
if (files.length === 0) {
  console.error("usage: compare.mjs [-p N] [-n N] [-t N] [-r N] [--json] MODEL.gguf…");
  process.exit(2);
}

/** One `minfer bench` run (child process): tokens/s of pp and tg. */
function minfer(file) {
  const r = spawnSync(
    process.execPath,
    [bin, "bench", "-m", file, "-p", `${nPrompt}`, "-n", `${nGen}`, "-t", `${threads}`, "-r", "1", "--json"],
    { encoding: "utf8" },
  );
  if (r.status !== 0) throw new Error(`minfer bench failed: ${r.stderr}`);
  const rows = JSON.parse(r.stdout);
  const ts = (pred) => rows.find(pred).avg_ts;
  return { pp: ts((x) => x.n_prompt > 0), tg: ts((x) => x.n_gen > 0) };
}

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });

/** llama-bench's two tests through node-llama-cpp: pp = one batch of nPrompt tokens, tg = nGen single-token steps. */
async function llamacpp(model) {
  const ctx = await model.createContext({
    contextSize: nPrompt + nGen + 16,
    batchSize: Math.max(512, nPrompt),
    threads,
  });
  try {
    const seq = ctx.getSequence();
    const ids = Array.from({ length: nPrompt }, (_, i) => 100 + (i % 1000));
    const run = async () => {
      await seq.clearHistory();
      let t = performance.now();
      await seq.controlledEvaluate(
        ids.map((x, k) => (k === nPrompt - 1 ? [x, { generateNext: { token: true } }] : x)),
      );
      const pp = (nPrompt / (performance.now() - t)) * 1000;
      await seq.clearHistory();
      t = performance.now();
      for (let i = 0; i < nGen; i++)
        await seq.controlledEvaluate([[100 + i, { generateNext: { token: true } }]]);
      const tg = (nGen / (performance.now() - t)) * 1000;
      return { pp, tg };
    };
    await run(); // warmup, as llama-bench
    return await run();
  } finally {
    await ctx.dispose();
  }
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sd = (xs) => Math.sqrt(mean(xs.map((x) => (x - mean(xs)) ** 2)));
const fmt = (xs) => `${mean(xs).toFixed(1)} ± ${sd(xs).toFixed(1)}`;
const results = [];
for (const file of files) {
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  const m = { pp: [], tg: [] };
  const l = { pp: [], tg: [] };
  for (let r = 0; r < reps; r++) {
    const a = minfer(file);
    const b = await llamacpp(model);
    m.pp.push(a.pp);
    m.tg.push(a.tg);
    l.pp.push(b.pp);
    l.tg.push(b.tg);
  }
  await model.dispose();
  results.push({ file, threads, nPrompt, nGen, minfer: m, llamacpp: l });
}
await llama.dispose();

if (json) console.log(JSON.stringify(results, null, 1));
else {
  console.log(`| model | test | minfer t/s | llama.cpp t/s | ratio |`);
  console.log(`| --- | --- | ---: | ---: | ---: |`);
  for (const r of results) {
    const name = r.file.split("/").at(-1);
    for (const [test, k] of [
      [`pp${nPrompt}`, "pp"],
      [`tg${nGen}`, "tg"],
    ])
      console.log(
        `| ${name} | ${test} | ${fmt(r.minfer[k])} | ${fmt(r.llamacpp[k])} | ${(mean(r.minfer[k]) / mean(r.llamacpp[k])).toFixed(2)} |`,
      );
  }
  const pkg = join(dirname(createRequire(import.meta.url).resolve("node-llama-cpp")), "..", "package.json");
  const version = JSON.parse(readFileSync(pkg, "utf8")).version;
  console.log(
    `\n${threads} threads, ${reps} repetitions each, alternating engines; node-llama-cpp ${version}`,
  );
}
