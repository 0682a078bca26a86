#!/usr/bin/env node
// `minfer bench` of two builds of minfer on the same files, alternating the builds per repetition
// so machine noise hits both alike; medians. For "does this change cost anything":
//
//   node packages/cli/bench/versions.mjs [-p 128] [-n 64] [-t 2] [-r 5] [--json] A/bin.js B/bin.js MODEL.gguf…
import { spawnSync } from "node:child_process";

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
const reps = opt("-r", 5);
const json = argv.includes("--json");
const [binA, binB, ...files] = argv.filter((a) => a !== "--json");
if (!binA || !binB || files.length === 0) {
  console.error("usage: versions.mjs [-p N] [-n N] [-t N] [-r N] [--json] A/bin.js B/bin.js MODEL.gguf…");
  process.exit(2);
}

/** One `minfer bench` run of `bin` (child process): tokens/s of pp and tg. */
function bench(bin, file) {
  const args = [
    bin,
    "bench",
    "-m",
    file,
    "-p",
    `${nPrompt}`,
    "-n",
    `${nGen}`,
    "-t",
    `${threads}`,
    "-r",
    "1",
    "--json",
  ];
  const r = spawnSync(process.execPath, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${bin} bench failed: ${r.stderr}`);
  const rows = JSON.parse(r.stdout);
  const ts = (pred) => rows.find(pred).avg_ts;
  return { pp: ts((x) => x.n_prompt > 0), tg: ts((x) => x.n_gen > 0) };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const out = [];
for (const file of files) {
  const runs = { a: [], b: [] };
  for (let r = 0; r < reps; r++) {
    // Alternate which build goes first, so a slow start or a drifting machine is shared.
    const order = r % 2 ? ["b", "a"] : ["a", "b"];
    for (const k of order) runs[k].push(bench(k === "a" ? binA : binB, file));
  }
  for (const test of ["pp", "tg"]) {
    const a = median(runs.a.map((x) => x[test]));
    const b = median(runs.b.map((x) => x[test]));
    out.push({
      file,
      test: test === "pp" ? `pp${nPrompt}` : `tg${nGen}`,
      a,
      b,
      ratio: b / a,
      samplesA: runs.a.map((x) => x[test]),
      samplesB: runs.b.map((x) => x[test]),
    });
  }
}
if (json) console.log(JSON.stringify(out, null, 1));
else {
  console.log(`A = ${binA}\nB = ${binB}\n${reps} alternating repetitions, ${threads} threads, medians\n`);
  console.log("| file | test | A t/s | B t/s | B / A |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const r of out)
    console.log(
      `| ${r.file.split("/").pop()} | ${r.test} | ${r.a.toFixed(1)} | ${r.b.toFixed(1)} | ${r.ratio.toFixed(3)} |`,
    );
}
