#!/usr/bin/env node
// Summarizes a V8 CPU profile (node --cpu-prof; e.g. the server's from serve-streams
// --serve-node-flag --cpu-prof): the functions with the most self time and the most total time.
//   node scripts/cpuprofile-summary.mjs FILE.cpuprofile [SELF_ROWS=30] [TOTAL_ROWS=40]
import { readFileSync } from "node:fs";

const [file, selfRows = "30", totalRows = "40"] = process.argv.slice(2);
if (!file) {
  console.error("usage: cpuprofile-summary.mjs FILE.cpuprofile [SELF_ROWS] [TOTAL_ROWS]");
  process.exit(2);
}
const prof = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n) => {
  const f = n.callFrame;
  return `${f.functionName || "(anonymous)"} ${f.url.split("/").slice(-2).join("/")}:${f.lineNumber + 1}`;
};
const self = new Map();
const total = new Map();
let sum = 0;
for (let i = 0; i < prof.samples.length; i++) {
  const dt = prof.timeDeltas[i] ?? 0;
  sum += dt;
  const leaf = byId.get(prof.samples[i]);
  self.set(name(leaf), (self.get(name(leaf)) ?? 0) + dt);
  const seen = new Set();
  for (let id = prof.samples[i]; id !== undefined; id = parent.get(id)) {
    const k = name(byId.get(id));
    if (seen.has(k)) continue; // recursion counts once
    seen.add(k);
    total.set(k, (total.get(k) ?? 0) + dt);
  }
}
const table = (m, rows) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(rows))
    .map(([k, v]) => `${(v / 1000).toFixed(1).padStart(9)} ms  ${k}`)
    .join("\n");
console.log(
  `${(sum / 1000).toFixed(0)} ms sampled\n-- self\n${table(self, selfRows)}\n-- total\n${table(total, totalRows)}`,
);
