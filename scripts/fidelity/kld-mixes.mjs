#!/usr/bin/env node
// Issue 22's quality bars, on one F16 model: for each of llama.cpp's named mixes, the file
// llama-quantize writes and the file `minfer gguf quantize` writes, each scored by both engines
// (llama-perplexity --kl-divergence and minfer perplexity --kl-divergence) against llama.cpp's F16
// base logits. Prints one row per mix and the two ratios the issue bounds by 1.05:
//   quantizer  KLD(minfer's file) / KLD(llama-quantize's file), the same engine scoring both;
//   engine     KLD of llama-quantize's file scored by minfer / scored by llama.cpp.
// Writes everything to OUT/results.json.
//
//   node scripts/fidelity/kld-mixes.mjs [LLAMA_BIN_DIR]      (default /tmp/llamacpp/build-cpu/bin)
//
// Environment (all optional): MODEL (default the built-in minfer-default-7m-f16.gguf), MIXES
// (default "Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS"), CTX (256),
// CHUNKS (64), THREADS (the machine's cores), TEXT / TEXT_COMMIT (see perplexity-common.mjs), OUT
// (default /tmp/minfer-kld-mixes), LLAMA_ARGS (default "-fa off"), MINFER_BIN, IMATRIX (an
// importance matrix passed to both quantizers as --imatrix FILE).
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { engines, fixedText, kldStats, run, show } from "./perplexity-common.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.argv[2] ?? "/tmp/llamacpp/build-cpu/bin";
const env = process.env;
const model = env.MODEL ?? join(root, "packages/cli/models/minfer-default-7m-f16.gguf");
const out = env.OUT ?? "/tmp/minfer-kld-mixes";
const mixes = (env.MIXES ?? "Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS")
  .split(/\s+/)
  .filter(Boolean);
const c = env.CTX ?? "256";
const threads = env.THREADS ?? String(availableParallelism());
const minferBin = env.MINFER_BIN ? resolve(env.MINFER_BIN) : join(root, "packages/cli/dist/bin.js");
const imatrix = env.IMATRIX ? ["--imatrix", resolve(env.IMATRIX)] : [];
const llamaArgs = (env.LLAMA_ARGS ?? "-fa off").split(/\s+/).filter(Boolean);
mkdirSync(out, { recursive: true });

const { llama, minfer } = engines({ bin, minferBin, threads, chunks: env.CHUNKS ?? "64", llamaArgs });
const text = fixedText(root, out, env.TEXT, env.TEXT_COMMIT);
const base = join(out, `base-f16-llama-c${c}.kld`);
llama(["-m", model, "-f", text, "-c", c, "-b", c, "--kl-divergence-base", base]);

const score = (file) => ({
  llama: kldStats(llama(["-m", file, "-c", c, "-b", c, "--kl-divergence-base", base, "--kl-divergence"])),
  minfer: kldStats(minfer(["-m", file, "--kl-divergence-base", base, "--kl-divergence"])),
});
const rows = [];
for (const mix of mixes) {
  const theirs = join(out, `llama-${mix}.gguf`);
  const ours = join(out, `minfer-${mix}.gguf`);
  show(["llama-quantize", ...imatrix, model, theirs, mix, threads]);
  run(join(bin, "llama-quantize"), [...imatrix, model, theirs, mix, threads]);
  show(["minfer", "gguf", "quantize", model, ours, mix, "-t", threads, ...imatrix]);
  run(process.execPath, [minferBin, "gguf", "quantize", model, ours, mix, "-t", threads, ...imatrix]);
  rows.push({ mix, llamaFile: score(theirs), minferFile: score(ours) });
}
writeFileSync(
  join(out, "results.json"),
  `${JSON.stringify({ model, text, ctx: c, threads, imatrix: env.IMATRIX ?? null, rows }, null, 2)}\n`,
);

const k = (s) => s.kld.value;
const f = (x) => x.toFixed(6);
console.log(
  "| mix | llama-quantize's file, llama.cpp | … minfer | minfer's file, llama.cpp | … minfer | quantizer ratio (llama.cpp / minfer scoring) | engine ratio |",
);
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows) {
  const qL = k(r.minferFile.llama) / k(r.llamaFile.llama);
  const qM = k(r.minferFile.minfer) / k(r.llamaFile.minfer);
  const e = k(r.llamaFile.minfer) / k(r.llamaFile.llama);
  console.log(
    `| ${r.mix} | ${f(k(r.llamaFile.llama))} | ${f(k(r.llamaFile.minfer))} | ${f(k(r.minferFile.llama))} | ` +
      `${f(k(r.minferFile.minfer))} | ${qL.toFixed(3)} / ${qM.toFixed(3)} | ${e.toFixed(3)} |`,
  );
}
