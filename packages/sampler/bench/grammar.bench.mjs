#!/usr/bin/env node
// Per-token cost of a GBNF grammar constraint on the qwen2 vocabulary (151,936 tokens): allows() of
// one token (the sampler's common path), mask() of the whole vocabulary (the slow path; cold = the
// first walk of a state's trie, cached = a state met again), and accept(). A figure to record in
// docs/PERFORMANCE.md, not a test.
//   pnpm --filter @minfer/sampler build && pnpm --filter @minfer/tokenizer build && node packages/sampler/bench/grammar.bench.mjs
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readGgufSync } from "@minfer/gguf";
import { Tokenizer } from "@minfer/tokenizer";
import { Grammar } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = process.env.MINFER_FIXTURES ?? resolve(here, "../../../../shared/fixtures");
let t0 = performance.now();
const tok = Tokenizer.fromMetadata(readGgufSync(join(fixtures, "vocab", "ggml-vocab-qwen2.gguf")).metadata);
const loadMs = performance.now() - t0;

// Each case: a grammar and texts that bring it to a state (tokenized with the vocabulary).
const cases = [
  ["json", ["", '{"name": "', '{"name": "Ada", "age": ', '{"a": [1, {"b": [true, ']],
  ["arithmetic", ["", "(x1 +2", "(x1 +2)*3 = "]],
  ["c", ["int main(){", "int main(){while(i<"]],
  ["japanese", ["", "こんにちは"]],
];

function timeIt(fn, minMs = 200) {
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < minMs) {
    fn();
    n++;
    now = performance.now();
  }
  return ((now - start) * 1000) / n; // µs per call
}

const logits = new Float32Array(tok.size);
const rows = [];
t0 = performance.now();
Grammar.parse('root ::= "x"').constraint(tok); // builds the vocabulary's token trie (cached per vocab)
const trieMs = performance.now() - t0;
for (const [name, prefixes] of cases) {
  const g = Grammar.parse(readFileSync(join(fixtures, "grammars", `${name}.gbnf`), "utf8"));
  for (const prefix of prefixes) {
    const ids = tok.encode(prefix);
    const c = g.constraint(tok);
    for (const id of ids) c.accept(id);
    // The very first mask() of a new constraint: the trie walk also fills the matcher's caches.
    const t1 = performance.now();
    c.mask(logits);
    const firstMs = performance.now() - t1;
    // allows(): a sampled token (one that is allowed) and one that is not, from a fresh constraint
    // (no mask cached: the walk of that token's bytes alone).
    const fresh = g.constraint(tok);
    for (const id of ids) fresh.accept(id);
    logits.fill(0);
    c.mask(logits);
    const allowed = [];
    for (let i = 0; i < logits.length; i++) if (logits[i] === 0) allowed.push(i);
    const yes = allowed[Math.floor(allowed.length / 2)];
    const no = logits.indexOf(-Infinity);
    const allowsUs = timeIt(() => fresh.allows(yes));
    const allowsNoUs = timeIt(() => fresh.allows(no));
    const coldUs = timeIt(() => {
      c.clearMaskCache();
      c.mask(logits);
    });
    const cachedUs = timeIt(() => c.mask(logits));
    const acceptUs =
      timeIt(() => {
        c.reset();
        for (const id of ids) c.accept(id);
        c.accept(yes);
      }) /
      (ids.length + 1);
    rows.push([
      name,
      JSON.stringify(prefix),
      allowed.length,
      firstMs,
      allowsUs,
      allowsNoUs,
      coldUs / 1000,
      cachedUs / 1000,
      acceptUs,
    ]);
  }
}

console.log(
  `qwen2 vocabulary: ${tok.size} tokens; load ${loadMs.toFixed(0)} ms; token trie built in ${trieMs.toFixed(0)} ms (once per vocab)`,
);
console.log(
  "| grammar | state (text so far) | allowed tokens | first mask() ms | allows() allowed µs | allows() refused µs | mask() cold ms | mask() cached ms | accept() µs/token |",
);
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const [g, s, n, first, a, an, mc, mw, acc] of rows) {
  console.log(
    `| ${g} | ${s} | ${n} | ${first.toFixed(2)} | ${a.toFixed(2)} | ${an.toFixed(2)} | ${mc.toFixed(2)} | ${mw.toFixed(3)} | ${acc.toFixed(2)} |`,
  );
}
