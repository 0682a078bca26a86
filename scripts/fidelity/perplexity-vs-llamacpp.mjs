#!/usr/bin/env node
// minfer perplexity beside llama.cpp's llama-perplexity on one text and one model (issue 21):
//   1. perplexity of the F16 file by both, at each -c of CTXS, and of an F32 copy (F32 K/V);
//   2. llama.cpp's F16 base logits (--kl-divergence-base), the F16 file quantized by llama-quantize
//      to Q8_0, Q4_0 and Q4_K_M, then --kl-divergence of each file (F16 too) by both engines
//      against that one base file; and the F32 copy against llama.cpp's F32 base;
//   3. the reverse direction: minfer writes the F16 base file, llama-perplexity --kl-divergence reads
//      it (and minfer too), and the two base files' headers and tokens are compared byte for byte;
// and prints the side-by-side table (and writes it as JSON to OUT/results.json).
//
//   node scripts/fidelity/perplexity-vs-llamacpp.mjs [LLAMA_BIN_DIR]
//
// LLAMA_BIN_DIR holds llama-perplexity and llama-quantize (default /tmp/llamacpp/build-cpu/bin; a
// CPU build: cmake -B build-cpu -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DLLAMA_CURL=OFF, then
// ninja -C build-cpu llama-perplexity llama-quantize). Run it after building the packages.
// Environment (all optional):
//   MODEL    the F16 GGUF (default: the built-in packages/cli/models/minfer-default-7m-f16.gguf)
//   TEXT     the text file (default: the repository's README.md and docs/*.md at commit TEXT_COMMIT,
//            in that order, concatenated as `git show` prints them: written to OUT/text.txt)
//   TEXT_COMMIT  default e035ce2 (2026-12-02)
//   OUT      working folder (default /tmp/minfer-perplexity); the base files are ~67 MB each
//   CTXS     the -c values of step 1 (default "128,256"); KLD_CTX the -c of steps 2-3 (default 256)
//   CHUNKS   --chunks for every run (default 64)
//   THREADS  -t for both engines (default: the machine's cores)
//   NGL      -ngl for both engines (default: none, the CPU)
//   LLAMA_ARGS  extra llama-perplexity flags (default "-fa off": the attention path minfer implements)
//   MINFER_BIN  minfer's bin.js (default packages/cli/dist/bin.js; on the GPU machine the bundle's
//            .device/cuda/dist/bin.js, as `cuda-run.sh ppl-llamacpp` runs it)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { engines, finalPpl, fixedText, kldStats, run, show } from "./perplexity-common.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.argv[2] ?? "/tmp/llamacpp/build-cpu/bin";
const env = process.env;
const model = env.MODEL ?? join(root, "packages/cli/models/minfer-default-7m-f16.gguf");
const out = env.OUT ?? "/tmp/minfer-perplexity";
const ctxs = (env.CTXS ?? "128,256").split(",").map(Number);
const kldCtx = Number(env.KLD_CTX ?? 256);
const chunks = env.CHUNKS ?? "64";
const threads = env.THREADS ?? String(availableParallelism());
const ngl = env.NGL ? ["-ngl", env.NGL] : [];
const llamaArgs = (env.LLAMA_ARGS ?? "-fa off").split(/\s+/).filter(Boolean);
const minferBin = env.MINFER_BIN ? resolve(env.MINFER_BIN) : join(root, "packages/cli/dist/bin.js");
mkdirSync(out, { recursive: true });

const { llama, minfer } = engines({ bin, minferBin, threads, chunks, ngl, llamaArgs });
const text = fixedText(root, out, env.TEXT, env.TEXT_COMMIT ?? "e035ce2");

const results = {
  model,
  text,
  chunks: Number(chunks),
  threads: Number(threads),
  llamaArgs,
  ppl: [],
  kld: [],
  reverse: [],
};

// 1. Perplexity of the F16 file; then of an F32 copy with F32 K/V on both sides, where the two
//    engines' arithmetic agrees to float32 rounding (with F16 weights or an F16 cache, llama.cpp's
//    CPU also rounds the activations to F16 and minfer does not: docs/FIDELITY.md).
for (const c of ctxs) {
  const l = finalPpl(llama(["-m", model, "-f", text, "-c", String(c), "-b", String(c)]));
  const m = finalPpl(minfer(["-m", model, "-f", text, "-c", String(c)]));
  results.ppl.push({ file: "F16", kv: "f16", ctx: c, llama: l, minfer: m, relDiff: m.ppl / l.ppl - 1 });
}
const c = String(kldCtx);
const f32 = join(out, "model-f32.gguf");
show(["llama-quantize", model, f32, "F32", threads]);
run(join(bin, "llama-quantize"), [model, f32, "F32", threads]);
{
  const l = finalPpl(llama(["-m", f32, "-f", text, "-c", c, "-b", c, "-ctk", "f32", "-ctv", "f32"]));
  const m = finalPpl(minfer(["-m", f32, "-f", text, "-c", c, "--kv-type", "f32"]));
  results.ppl.push({ file: "F32", kv: "f32", ctx: kldCtx, llama: l, minfer: m, relDiff: m.ppl / l.ppl - 1 });
}

// 2. llama.cpp's F16 base; the quantized files; KLD by both engines against that base.
const llamaBase = join(out, `base-f16-llama-c${c}.kld`);
llama(["-m", model, "-f", text, "-c", c, "-b", c, "--kl-divergence-base", llamaBase]);
const files = [["F16", model]];
for (const type of ["Q8_0", "Q4_0", "Q4_K_M"]) {
  const file = join(out, `model-${type.toLowerCase()}.gguf`);
  show(["llama-quantize", model, file, type, threads]);
  run(join(bin, "llama-quantize"), [model, file, type, threads]);
  files.push([type, file]);
}
const kldBoth = (file, base, llamaKv = [], minferKv = []) => ({
  llama: kldStats(
    llama(["-m", file, "-c", c, "-b", c, ...llamaKv, "--kl-divergence-base", base, "--kl-divergence"]),
  ),
  minfer: kldStats(minfer(["-m", file, ...minferKv, "--kl-divergence-base", base, "--kl-divergence"])),
});
for (const [type, file] of files) results.kld.push({ type, ...kldBoth(file, llamaBase) });

// 2b. The statistics themselves: the F32 copy with F32 K/V against llama.cpp's base of that same
//     configuration, where both engines' logits agree to float32 rounding.
const f32Base = join(out, `base-f32-llama-c${c}.kld`);
const kv32 = ["-ctk", "f32", "-ctv", "f32"];
llama(["-m", f32, "-f", text, "-c", c, "-b", c, ...kv32, "--kl-divergence-base", f32Base]);
results.f32 = [{ type: "F32 (KV f32)", ...kldBoth(f32, f32Base, kv32, ["--kv-type", "f32"]) }];

// 3. The reverse: minfer's F16 base, read by llama.cpp (and by minfer), compared with llama.cpp's.
const minferBase = join(out, `base-f16-minfer-c${c}.kld`);
const wrote = finalPpl(minfer(["-m", model, "-f", text, "-c", c, "--kl-divergence-base", minferBase]));
for (const [type, file] of files.filter(([t]) => t === "F16" || t === "Q4_0"))
  results.reverse.push({ type, ...kldBoth(file, minferBase) });
const a = readFileSync(llamaBase);
const b = readFileSync(minferBase);
const nChunk = a.readInt32LE(16);
const nVocab = a.readInt32LE(12);
const headerAndTokens = 20 + 4 * kldCtx * nChunk;
const sameTokens =
  a.length === b.length && a.subarray(0, headerAndTokens).equals(b.subarray(0, headerAndTokens));
// The rows: how often the two files hold the same uint16 step, and the largest difference of the
// log-probabilities they encode where both resolve them (above their clamp).
const stride = 2 * Math.ceil(nVocab / 2) + 4;
let sameSteps = 0;
let steps = 0;
let maxDLogp = 0;
if (sameTokens)
  for (let at = headerAndTokens; at < a.length; at += 2 * stride) {
    const sa = a.readFloatLE(at);
    const ma = a.readFloatLE(at + 4);
    const sb = b.readFloatLE(at);
    const mb = b.readFloatLE(at + 4);
    for (let i = 0; i < nVocab; i++) {
      const qa = a.readUInt16LE(at + 8 + 2 * i);
      const qb = b.readUInt16LE(at + 8 + 2 * i);
      steps++;
      if (qa === qb) sameSteps++;
      if (qa > 0 && qb > 0) maxDLogp = Math.max(maxDLogp, Math.abs(sa * qa + ma - (sb * qb + mb)));
    }
  }
results.minferBase = {
  ppl: wrote,
  bytes: b.length,
  sameSizeHeaderAndTokensAsLlama: sameTokens,
  sameSteps: steps ? sameSteps / steps : 0,
  maxDLogp,
};
writeFileSync(join(out, "results.json"), `${JSON.stringify(results, null, 2)}\n`);

// The tables.
const f = (x, d) => x.toFixed(d);
const pm = (m, d) => `${f(m.value, d)} ± ${f(m.unc, d)}`;
const lines = [];
lines.push(`Perplexity of ${model.split("/").pop()}, --chunks ${chunks}, -t ${threads}`);
lines.push("| weights | KV | -c | llama.cpp PPL | minfer PPL | minfer / llama.cpp − 1 |");
lines.push("|---|---|---:|---:|---:|---:|");
for (const r of results.ppl)
  lines.push(
    `| ${r.file} | ${r.kv} | ${r.ctx} | ${f(r.llama.ppl, 4)} ± ${f(r.llama.unc, 4)} | ${f(r.minfer.ppl, 4)} ± ${f(r.minfer.unc, 4)} | ${r.relDiff.toExponential(2)} |`,
  );
const head =
  "| file | engine | PPL(Q) | PPL(base) | mean KLD | max KLD | mean Δp % | RMS Δp % | same top p % |";
const rule = "|---|---|---:|---:|---:|---:|---:|---:|---:|";
const row = (name, engine, s) =>
  `| ${name} | ${engine} | ${pm(s.pplQ, 4)} | ${f(s.pplBase.value, 4)} | ${pm(s.kld, 6)} | ${f(s.maxKld, 6)} | ${pm(s.dp, 3)} | ${pm(s.rmsDp, 3)} | ${pm(s.sameTop, 3)} |`;
const table = (rows) => {
  lines.push(head, rule);
  for (const r of rows) lines.push(row(r.type, "llama.cpp", r.llama), row(r.type, "minfer", r.minfer));
};
lines.push(
  "",
  `Against llama.cpp's F16 base logits (-c ${c}): each file run by llama-perplexity and by minfer`,
);
table(results.kld);
lines.push(
  "",
  `Against minfer's F16 base logits (minfer perplexity --kl-divergence-base: PPL ${f(wrote.ppl, 4)} ± ${f(wrote.unc, 4)}; ` +
    `size, header and tokens ${sameTokens ? "identical to" : "DIFFERENT FROM"} llama.cpp's file; ` +
    `${f(100 * results.minferBase.sameSteps, 2)}% of the uint16 steps equal, largest |Δ log p| where both resolve it ${maxDLogp.toExponential(2)})`,
);
table(results.reverse);
lines.push("", `F32 weights and K/V against llama.cpp's base of the same configuration (-c ${c})`);
table(results.f32);
console.log(lines.join("\n"));
if (!sameTokens) process.exitCode = 1;
