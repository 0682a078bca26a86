#!/usr/bin/env node
// Whether a verification step leaves the target's later logits exactly as plain decoding does
// (what greedy token identity under speculation needs): decodes PROMPT and then the greedy
// continuation one token at a time, and again with a verification at step S (the step's token and
// K rejected drafts in one decode, the drafts then removed with seqRm), and prints the largest
// logit difference at step AT and the top two tokens with their margin. A difference of 0 at every
// S and K: the products and attention give each column the same bits whatever the batch; a small
// difference (rounding of another summation order, carried through the cache) can flip a greedy
// token where two logits are close.
//
// With --accept the K drafts are the greedy continuation instead, and it prints the largest
// difference of the verification's K + 1 rows from plain decoding's rows of those steps (0: every
// query of a verification gets a one-token decode's bits).
//
//   node packages/cli/bench/spec-invariance.mjs MODEL.gguf PROMPT.txt [AT [S,… [K,…]]] [-t N] [-ngl N|all] [--variant] [--accept]
//   (default AT 68, S 2,20,40,60, K 1,4; CPU, 2 threads; -ngl: that many layers on the first CUDA
//   device; the verification decodes with batchInvariant as the speculator's do, or without it with
//   --variant)
import { readFileSync } from "node:fs";
import { backend as cpu } from "@minfer/backend-cpu";
import { backend as cuda } from "@minfer/backend-cuda";
import { Context, Model } from "@minfer/engine";
import { readGguf } from "@minfer/gguf";
import { architecture } from "@minfer/models";

const args = process.argv.slice(2);
const take = (flag, dflt) => {
  const i = args.indexOf(flag);
  if (i < 0) return dflt;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const threads = Number(take("-t", "2"));
const ngl = take("-ngl", "0");
const variant = args.indexOf("--variant");
if (variant >= 0) args.splice(variant, 1);
const acceptAt = args.indexOf("--accept");
if (acceptAt >= 0) args.splice(acceptAt, 1);
const accept = acceptAt >= 0;
const [file, promptFile, atArg = "68", stepsArg = "2,20,40,60", draftsArg = "1,4"] = args;
if (!file || !promptFile) {
  console.error(
    "usage: spec-invariance.mjs MODEL.gguf PROMPT.txt [AT [S,… [K,…]]] [-t N] [-ngl N|all] [--variant] [--accept]",
  );
  process.exit(2);
}
const runtime = await cpu.devices()[0].init({ threads });
const cudaDevice = ngl === "0" ? undefined : cuda.devices()[0];
if (ngl !== "0" && !cudaDevice) {
  console.error(`spec-invariance: -ngl ${ngl} needs a CUDA device, and none is usable here`);
  process.exit(2);
}
const gpu = await cudaDevice?.init();
const header = await readGguf(file);
const nLayer = architecture(header.metadata.architecture).loadHparams(header.metadata).nLayer;
const model = await Model.load(file, {
  runtime,
  file: header,
  ...(gpu
    ? { offload: { runtime: gpu, layers: ngl === "all" ? nLayer : Math.min(Number(ngl), nLayer) } }
    : {}),
});
console.log(
  `devices: ${model.placement.describe()}${variant >= 0 ? "; verifications without batchInvariant" : ""}`,
);
const prompt = model.tokenizer.encode(readFileSync(promptFile, "utf8"), {
  addSpecial: true,
  parseSpecial: true,
});
const at = Number(atArg);
const argmax = (l) => {
  let best = 0;
  for (let i = 1; i < l.length; i++) if (l[i] > l[best]) best = i;
  return best;
};
const top2 = (l) => {
  const a = argmax(l);
  let b = a === 0 ? 1 : 0;
  for (let i = 0; i < l.length; i++) if (i !== a && l[i] > l[b]) b = i;
  return `${a} over ${b} by ${(l[a] - l[b]).toFixed(5)}`;
};

/**
 * The logits after `at` greedy tokens, and each step's (`rows[i]`: after token i); at step `s` a
 * verification with `k` drafts: rejected ones, or (--accept) the greedy continuation, whose rows
 * are `verified`.
 */
async function logitsAt(s, k, greedy) {
  const ctx = new Context(model, { nCtx: Math.max(1024, prompt.length + at + 64) });
  let row = (await ctx.decode({ tokens: prompt, seq: 0, logits: "last" })).last();
  const tokens = [];
  const rows = [];
  let verified = [];
  for (let i = 0; i < at; i++) {
    const id = greedy ? greedy[i] : argmax(row);
    tokens.push(id);
    if (i === s) {
      const pos = ctx.used();
      const drafts = accept ? greedy.slice(i + 1, i + 1 + k) : Array(k).fill(greedy[i + 1] === 7 ? 8 : 7);
      const lg = await ctx.decode({
        tokens: [id, ...drafts],
        seq: 0,
        logits: "all",
        batchInvariant: variant < 0,
      });
      verified = drafts.map((_, j) => lg.get(j + 1).slice());
      verified.unshift(lg.get(0).slice());
      row = verified[0];
      ctx.seqRm(0, pos + 1, -1);
    } else {
      row = (await ctx.decode({ tokens: [id], seq: 0, logits: "last" })).last().slice();
    }
    rows.push(row);
  }
  ctx.dispose();
  return { row, rows, tokens, verified };
}

/** The largest elementwise difference of two logit rows. */
const largest = (a, b) => {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
};

const plain = await logitsAt(-1, 0, undefined);
console.log(`${file}: after ${at} greedy tokens, plain decoding: ${top2(plain.row)}`);
for (const s of stepsArg.split(",").map(Number))
  for (const k of draftsArg.split(",").map(Number)) {
    if (accept && s + k >= at) {
      console.log(`  ${k} accepted draft(s) at step ${s}: past step ${at}, skipped`);
      continue;
    }
    const { row, verified } = await logitsAt(s, k, plain.tokens);
    if (accept) {
      let d = 0;
      for (let j = 0; j < verified.length; j++) d = Math.max(d, largest(verified[j], plain.rows[s + j]));
      console.log(
        `  ${k} accepted draft(s) at step ${s}: largest difference of its ${k + 1} rows ${d.toExponential(2)}, after ${at} steps ${largest(row, plain.row).toExponential(2)}`,
      );
      continue;
    }
    console.log(
      `  ${k} rejected draft(s) at step ${s}: ${top2(row)}, largest difference ${largest(row, plain.row).toExponential(2)}`,
    );
  }
model.dispose();
gpu?.dispose();
runtime.dispose();
