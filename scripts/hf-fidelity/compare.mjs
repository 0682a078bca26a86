#!/usr/bin/env node
// minfer against transformers' float32 reference (reference.py's output): each Hugging Face
// checkpoint is converted by `minfer convert` to an F32 GGUF and run by @minfer/engine on the CPU
// backend (F32 KV cache). At every step both see transformers' greedy sequence (teacher forcing), so
// the logits of all 65 positions are compared; minfer's own argmax must equal transformers' greedy
// token at every step (identical greedy generation).
//
//   node scripts/hf-fidelity/compare.mjs REF_DIR TRAINED_HF_DIR [--json]
//   (REF_DIR holds trained.json, llama/, llama.json, qwen2/, qwen2.json and the .f32 logits)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const { backend } = await import(join(root, "packages/backend-cpu/dist/index.js"));
const { Context, Model } = await import(join(root, "packages/engine/dist/index.js"));

const [refDir, trainedDir] = process.argv.slice(2);
if (!refDir || !trainedDir) {
  console.error("usage: compare.mjs REF_DIR TRAINED_HF_DIR [--json]");
  process.exit(2);
}
const tmp = mkdtempSync(join(tmpdir(), "minfer-hf-fidelity-"));
const runtime = await backend.devices()[0].init({ threads: 2 });
const results = [];
for (const [name, hf] of [
  ["trained", trainedDir],
  ["llama", join(refDir, "llama")],
  ["qwen2", join(refDir, "qwen2")],
]) {
  const gguf = join(tmp, `${name}.gguf`);
  const c = spawnSync(
    process.execPath,
    [join(root, "packages/cli/dist/bin.js"), "convert", hf, "-o", gguf, "--type", "f32"],
    {
      encoding: "utf8",
    },
  );
  if (c.status !== 0) throw new Error(`convert ${hf}: ${c.stderr}`);
  const ref = JSON.parse(readFileSync(join(refDir, `${name}.json`), "utf8"));
  const model = await Model.load(gguf, { runtime });
  const V = ref.vocab;
  for (const p of ref.prompts) {
    const raw = readFileSync(join(refDir, p.logits));
    const want = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
    const rows = want.length / V;
    const ctx = new Context(model, { nCtx: 256, kvDtype: "f32" });
    const ids = model.tokenizer.encode(p.text, { addSpecial: true });
    let maxDiff = 0;
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    let greedySame = 0;
    let logits = await ctx.eval(p.prompt_ids);
    for (let r = 0; r < rows; r++) {
      const w = want.subarray(r * V, (r + 1) * V);
      let best = 0;
      for (let i = 0; i < V; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(logits[i] - w[i]));
        lo = Math.min(lo, w[i]);
        hi = Math.max(hi, w[i]);
        if (logits[i] > logits[best]) best = i;
      }
      if (r < p.greedy_ids.length) {
        if (best === p.greedy_ids[r]) greedySame++;
        logits = await ctx.eval([p.greedy_ids[r]]);
      }
    }
    ctx.dispose();
    results.push({
      model: name,
      prompt: p.text,
      promptIdsEqual: JSON.stringify(ids) === JSON.stringify(p.prompt_ids),
      steps: p.greedy_ids.length,
      greedySame,
      maxAbsDiff: maxDiff,
      logitRange: hi - lo,
      relative: maxDiff / (hi - lo),
    });
  }
  model.dispose();
}
runtime.dispose();
rmSync(tmp, { recursive: true, force: true });

if (process.argv.includes("--json")) console.log(JSON.stringify(results, null, 1));
else {
  console.log(
    "| model | prompt | prompt ids = transformers' | greedy steps identical | max abs Δlogit | logit range | relative |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const r of results)
    console.log(
      `| ${r.model} | ${r.prompt} | ${r.promptIdsEqual ? "yes" : "NO"} | ${r.greedySame} / ${r.steps} | ${r.maxAbsDiff.toExponential(2)} | ${r.logitRange.toFixed(1)} | ${r.relative.toExponential(2)} |`,
    );
}
const bad = results.filter((r) => !r.promptIdsEqual || r.greedySame !== r.steps || r.relative >= 1e-3);
if (bad.length > 0) {
  console.error(`compare: ${bad.length} run(s) outside the bar (identical greedy, relative Δlogit < 1e-3)`);
  process.exit(1);
}
