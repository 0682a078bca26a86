#!/usr/bin/env node
// Issue 26's server bar on a device: `minfer serve -np 8` without speculation, with a draft model and
// with n-gram drafts, 8 concurrent greedy streams each; every stream's token ids must be the same in
// the three servers. Prints one line per server (the drafts counted) and exits 1 on a difference.
//
//   node scripts/device/spec-serve-check.mjs BIN.js TARGET.gguf DRAFT.gguf PROMPT.txt [extra serve flags…]
//
// (cuda-run.sh's spec-serve stage runs it with `-ngl all` on the bundle's CLI)
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const [bin, target, draft, promptFile, ...extra] = process.argv.slice(2);
if (!bin || !target || !draft || !promptFile) {
  console.error("usage: spec-serve-check.mjs BIN.js TARGET.gguf DRAFT.gguf PROMPT.txt [serve flags…]");
  process.exit(2);
}
// (at most 3000 characters: a slot holds 2048 tokens here)
const text = readFileSync(promptFile, "utf8").slice(0, 3000);
// eight prompts: the text cut at eight places, so the streams differ
const prompts = Array.from({ length: 8 }, (_, i) => text.slice(0, Math.floor((text.length * (i + 3)) / 10)));

/** Starts `minfer serve` on a free port; resolves with its URL and a stop function once it is ready. */
function serve(args) {
  const proc = spawn(process.execPath, [bin, "serve", "--port", "0", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  return new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      err += d;
      const m = /serve: ready on (http:\/\/\S+)/.exec(err);
      if (m) resolve({ url: m[1], stop: () => proc.kill("SIGKILL"), log: () => err });
    });
    proc.on("exit", (code) => reject(new Error(`minfer serve exited (${code}):\n${err.slice(-2000)}`)));
  });
}

async function streams(args) {
  const s = await serve(["-m", target, "-np", "8", "-c", "16384", ...extra, ...args]);
  try {
    const body = (prompt) =>
      JSON.stringify({ prompt, n_predict: 128, temperature: 0, return_tokens: true, cache_prompt: false });
    const rs = await Promise.all(
      prompts.map((p) =>
        fetch(`${s.url}/completion`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: body(p),
        }).then((r) => r.json()),
      ),
    );
    for (const r of rs)
      if (!Array.isArray(r.tokens)) throw new Error(`a stream failed: ${JSON.stringify(r).slice(0, 500)}`);
    const drafted = rs.reduce((a, r) => a + (r.timings?.draft_n ?? 0), 0);
    const accepted = rs.reduce((a, r) => a + (r.timings?.draft_n_accepted ?? 0), 0);
    return { tokens: rs.map((r) => r.tokens), drafted, accepted };
  } finally {
    s.stop();
  }
}

const plain = await streams([]);
let ok = true;
console.log(`plain: 8 streams, ${plain.tokens.reduce((a, t) => a + t.length, 0)} tokens`);
for (const spec of [
  ["-md", draft],
  ["--spec-type", "ngram"],
]) {
  const r = await streams(spec);
  const same = r.tokens.map((t, i) => JSON.stringify(t) === JSON.stringify(plain.tokens[i]));
  ok &&= same.every(Boolean);
  console.log(
    `${spec.join(" ")}: ${same.filter(Boolean).length}/8 streams the same tokens; ${r.accepted}/${r.drafted} drafts accepted`,
  );
}
process.exit(ok ? 0 : 1);
