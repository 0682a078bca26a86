#!/usr/bin/env node
// Encode throughput of minfer's tokenizer beside llama.cpp's (node-llama-cpp, same vocab GGUF,
// same process) on a few MB of mixed text. Usage: node bench/encode.bench.mjs [VOCAB...] [--mb N]
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readGgufSync } from "@minfer/gguf";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { Tokenizer } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = process.env.MINFER_FIXTURES ?? resolve(here, "../../../../shared/fixtures");
const args = process.argv.slice(2);
const mbAt = args.indexOf("--mb");
const mb = mbAt >= 0 ? Number(args.splice(mbAt, 2)[1]) : 4;
const vocabs = args.length > 0 ? args : ["qwen2", "llama-spm"];

// Mixed text: the tokenizer test inputs (code, CJK, emoji, whitespace runs, numbers) and a
// pseudo-random mix of English words, digits and punctuation, repeated to the size asked.
function mixedText(bytes) {
  const inp = readFileSync(resolve(fixtures, "vocab/ggml-vocab-qwen35.gguf.inp"), "utf8").replaceAll(
    "__ggml_vocab_test__",
    "",
  );
  const words =
    "the of and to in is was that for on as with by at from his her they we this be have an or but not are".split(
      " ",
    );
  let seed = 42;
  const rand = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 4294967296;
  };
  const parts = [];
  let size = 0;
  while (size < bytes) {
    let s = inp;
    for (let i = 0; i < 2000; i++) {
      const r = rand();
      s +=
        r < 0.8
          ? ` ${words[Math.floor(rand() * words.length)]}`
          : r < 0.9
            ? ` ${Math.floor(rand() * 100000)}`
            : r < 0.95
              ? "."
              : "\n";
    }
    parts.push(s);
    size += Buffer.byteLength(s);
  }
  return parts.join("");
}

function time(fn, runs = 3) {
  fn();
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    ms.push(performance.now() - t0);
  }
  return Math.min(...ms);
}

const text = mixedText(mb * 1e6);
const mbytes = Buffer.byteLength(text) / 1e6;
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.disabled });
console.log(`${mbytes.toFixed(2)} MB of mixed text, best of 3 runs, node ${process.version}`);
for (const name of vocabs) {
  const path = resolve(fixtures, `vocab/ggml-vocab-${name}.gguf`);
  const tok = Tokenizer.fromMetadata(readGgufSync(path).metadata);
  const model = await llama.loadModel({ modelPath: path, vocabOnly: true });
  let ours;
  let theirs;
  const tOurs = time(() => {
    ours = tok.encode(text, { addSpecial: false });
  });
  const tTheirs = time(() => {
    theirs = model.tokenize(text, false);
  });
  const same = ours.length === theirs.length && ours.every((id, i) => id === theirs[i]);
  console.log(
    `${name.padEnd(12)} minfer ${(mbytes / (tOurs / 1000)).toFixed(2).padStart(7)} MB/s   llama.cpp ${(mbytes / (tTheirs / 1000)).toFixed(2).padStart(7)} MB/s   ` +
      `ratio ${(tTheirs / tOurs).toFixed(2)}x   ${ours.length} tokens, ${same ? "identical ids" : "IDS DIFFER"}`,
  );
  await model.dispose();
}
await llama.dispose();

// Event-loop responsiveness: the longest stretch without a timer tick while encodeAsync runs
// on 10 MB (the bound is about 50 ms).
const big = mixedText(10e6);
for (const name of vocabs) {
  const tok = Tokenizer.fromMetadata(
    readGgufSync(resolve(fixtures, `vocab/ggml-vocab-${name}.gguf`)).metadata,
  );
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 1);
  const t0 = performance.now();
  await tok.encodeAsync(big, { addSpecial: false });
  const total = performance.now() - t0;
  clearInterval(timer);
  worst = Math.max(worst, performance.now() - last);
  console.log(
    `${name.padEnd(12)} encodeAsync of ${(Buffer.byteLength(big) / 1e6).toFixed(1)} MB: ${(total / 1000).toFixed(2)} s, longest event-loop stall ${worst.toFixed(1)} ms`,
  );
}
