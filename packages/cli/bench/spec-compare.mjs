#!/usr/bin/env node
// Speculative decoding, minfer beside llama.cpp on the same target/draft pair, prompt, token
// count and threads: each engine's generation with a draft model (or n-gram lookup) against its
// own generation without, greedy, rounds interleaved (the engines alternate who goes first), medians.
// llama.cpp runs as its own programs: llama-completion (without) and llama-speculative-simple (with).
//
//   node packages/cli/bench/spec-compare.mjs --llama DIR -m TARGET.gguf [-md DRAFT.gguf | --ngram]
//        [-f PROMPT.txt | -p TEXT] [-n 128] [-t 2] [-r 3] [--draft-max 16,3] [--ngl all] [--bin BIN.js] [--json]
//
// DIR holds llama.cpp's binaries (built with -DLLAMA_BUILD_EXAMPLES=ON). --draft-max takes a comma
// list: llama.cpp runs once per value (its default is 3; minfer's 16 with the adaptive depth) and
// the best of them is what minfer is compared with.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const take = (flag, dflt) => {
  const i = args.indexOf(flag);
  if (i < 0) return dflt;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const has = (flag) => {
  const i = args.indexOf(flag);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
};
const llamaDir = take("--llama");
// --bin: another minfer CLI (the GPU machine's bundle, .device/cuda/dist/bin.js)
const bin = take("--bin", join(here, "..", "dist", "bin.js"));
const target = take("-m");
const draft = take("-md");
const ngram = has("--ngram");
const promptFile = take("-f");
const prompt = promptFile ? readFileSync(promptFile, "utf8") : take("-p", "Once upon a time");
const nGen = Number(take("-n", "128"));
const threads = Number(take("-t", "2"));
const rounds = Number(take("-r", "3"));
const draftMaxes = take("--draft-max", "16,3").split(",").map(Number);
const ngl = take("--ngl");
const json = has("--json");
if (!llamaDir || !target || (!draft && !ngram) || (draft && ngram) || args.length > 0) {
  console.error(
    "usage: spec-compare.mjs --llama DIR -m TARGET.gguf (-md DRAFT.gguf | --ngram) [-f FILE | -p TEXT] [-n N] [-t N] [-r N] [--draft-max A,B] [--ngl all] [--json]",
  );
  process.exit(2);
}
const env = { ...process.env, LD_LIBRARY_PATH: `${llamaDir}:${process.env.LD_LIBRARY_PATH ?? ""}` };
const gpu = ngl !== undefined && ngl !== "0";
const run = (cmd, argv) => {
  const r = spawnSync(cmd, argv, { encoding: "utf8", env, maxBuffer: 64 << 20 });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(`${cmd} ${argv.join(" ")} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return `${r.stdout}\n${r.stderr}`;
};

/** minfer bench's speculative test: its plain and speculative t/s, acceptance (one round). */
function minfer() {
  const spec = draft ? ["-md", draft] : ["--spec-type", "ngram"];
  const out = run(process.execPath, [
    bin,
    "bench",
    "-m",
    target,
    ...spec,
    "--spec-prompt",
    prompt,
    "-n",
    `${nGen}`,
    "-t",
    `${threads}`,
    "-r",
    "1",
    "--json",
    ...(ngl !== undefined ? ["-ngl", ngl] : []),
  ]);
  const r = JSON.parse(out.slice(out.indexOf("{"), out.lastIndexOf("}") + 1));
  return { plain: r.plain_ts, spec: r.spec_ts, accept: r.accept_rate, identical: r.identical };
}

const common = [
  "-m",
  target,
  "-p",
  prompt,
  "-n",
  `${nGen}`,
  "--temp",
  "0",
  "-t",
  `${threads}`,
  "-c",
  "4096",
  "--ignore-eos",
  ...(gpu ? ["-ngl", "99"] : ["-ngl", "0"]),
];
/** llama-completion without speculation: eval t/s. */
function llamaPlain() {
  const out = run(join(llamaDir, "llama-completion"), [...common, "-no-cnv", "--no-display-prompt"]);
  const m =
    /eval time =\s*[\d.]+ ms \/\s*\d+ runs\s*\(\s*[\d.]+ ms per token,\s*([\d.]+) tokens per second\)/.exec(
      out
        .split("\n")
        .filter((l) => !l.includes("prompt eval"))
        .join("\n"),
    );
  if (!m) throw new Error(`no eval speed in llama-completion's output:\n${out.slice(-1500)}`);
  return Number(m[1]);
}
/** llama-speculative-simple: decoded t/s and acceptance. */
function llamaSpec(nMax) {
  // (this llama.cpp's spellings: --draft-max became --spec-draft-n-max; n-gram drafts are --spec-ngram-simple-size-m long)
  const spec = draft
    ? ["-md", draft, "--spec-type", "draft-simple", "--spec-draft-ngl", gpu ? "99" : "0"]
    : ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-m", `${nMax}`];
  const sizes = draft ? ["--spec-draft-n-max", `${nMax}`, "--spec-draft-n-min", "0"] : [];
  const out = run(join(llamaDir, "llama-speculative-simple"), [...common, ...spec, ...sizes]);
  const speed = /decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t\/s/.exec(out);
  const acc = /accept\s+=\s+([\d.]+)%/.exec(out);
  if (!speed) throw new Error(`no decode speed in llama-speculative-simple's output:\n${out.slice(-1500)}`);
  return { spec: Number(speed[1]), accept: acc ? Number(acc[1]) / 100 : 0 };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const samples = { minferPlain: [], minferSpec: [], minferAccept: [], llamaPlain: [], identical: true };
for (const n of draftMaxes) samples[`llamaSpec${n}`] = [];
for (let r = 0; r < rounds; r++) {
  const steps = [
    () => {
      const m = minfer();
      samples.minferPlain.push(m.plain);
      samples.minferSpec.push(m.spec);
      samples.minferAccept.push(m.accept);
      if (!m.identical) samples.identical = false;
    },
    () => {
      samples.llamaPlain.push(llamaPlain());
      for (const n of draftMaxes) samples[`llamaSpec${n}`].push(llamaSpec(n));
    },
  ];
  if (r % 2) steps.reverse();
  for (const s of steps) s();
}
const mPlain = median(samples.minferPlain);
const mSpec = median(samples.minferSpec);
const lPlain = median(samples.llamaPlain);
const rows = [
  ["minfer", "plain", mPlain, 1, ""],
  [
    "minfer",
    `spec (draft-max 16, adaptive)`,
    mSpec,
    mSpec / mPlain,
    `${(100 * median(samples.minferAccept)).toFixed(1)}%`,
  ],
  ["llama.cpp", "plain (llama-completion)", lPlain, 1, ""],
  ...draftMaxes.map((n) => {
    const s = median(samples[`llamaSpec${n}`].map((x) => x.spec));
    const a = median(samples[`llamaSpec${n}`].map((x) => x.accept));
    return [
      "llama.cpp",
      `spec (llama-speculative-simple, draft-max ${n})`,
      s,
      s / lPlain,
      `${(100 * a).toFixed(1)}%`,
    ];
  }),
];
if (json)
  console.log(
    JSON.stringify(
      { target, draft: draft ?? null, ngram, nGen, threads, rounds, ngl: ngl ?? "0", samples },
      null,
      2,
    ),
  );
console.log(
  `target ${target}, ${draft ? `draft ${draft}` : "n-gram lookup"}, ${nGen} tokens, ${threads} threads, ${gpu ? `GPU (-ngl ${ngl})` : "CPU"}, medians of ${rounds} rounds`,
);
console.log("| engine | run | t/s | speedup over its own plain | accepted |");
console.log("| --- | --- | ---: | ---: | ---: |");
for (const [e, what, ts, sp, acc] of rows)
  console.log(`| ${e} | ${what} | ${ts.toFixed(2)} | ${sp.toFixed(2)}x | ${acc} |`);
const best = Math.max(
  ...rows.filter((r) => r[0] === "llama.cpp" && r[1].startsWith("spec")).map((r) => r[3]),
);
console.log(
  `minfer's speedup ${(mSpec / mPlain).toFixed(2)}x against llama.cpp's best ${best.toFixed(2)}x` +
    `${samples.identical ? "" : " (warning: a speculative run's tokens differed from minfer's plain run)"}`,
);
