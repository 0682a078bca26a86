#!/usr/bin/env node
// Serving benchmark: `minfer serve` (OpenAI-compatible HTTP server, a child process) beside llama.cpp
// (node-llama-cpp's prebuilt CPU binary, K sequences of one context, in this process) on the same
// GGUF, thread count, context per stream, greedy sampling and number of generated tokens.
//
// Measures (a) aggregate generation tokens/s and the mean time to first token with K concurrent
// streams (different ~100-token prompts), (b) the second turn's time to first token of a
// conversation (turn 1 ~300 tokens + its answer + a short new part) with and without prefix reuse.
// Engines alternate per repetition so machine noise hits both alike.
//
//   node packages/server/bench/serve-bench.mjs [-m MODEL.gguf]… [-t 2] [-n 64] [--streams 1,4,16]
//        [--ctx 512] [-r 1] [--prompt 100] [--turn 300] [--skip-llama] [--bin FILE] [--ngl V] [--json]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer as netServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
let bin = join(root, "packages", "cli", "dist", "bin.js");
const USAGE =
  "usage: serve-bench.mjs [-m MODEL.gguf]… [-t N] [-n N] [--streams 1,4,16] [--ctx N] [-r N]\n" +
  "                       [--prompt N] [--turn N] [--skip-llama] [--json] [MODEL.gguf…]";

// ---------------------------------------------------------------- arguments
const argv = process.argv.slice(2);
if (argv.includes("-h") || argv.includes("--help")) {
  console.log(`${USAGE}

  -m FILE         a GGUF model (repeatable; also positional). Default: a qwen2-0.5b q4_0 model with
                  random weights, written by \`minfer gguf synth\` into a temporary folder
  -t N            CPU threads of both engines (default 2)
  -n N            tokens generated per stream (default 64; the end of generation token may stop earlier)
  --streams LIST  concurrent stream counts (default 1,4,16)
  --ctx N         context tokens per stream (default 512); minfer gets -np K -c K*N
  -r N            repetitions, engines alternating (default 1)
  --prompt N      approximate prompt tokens per stream (default 100)
  --turn N        approximate turn-1 prompt tokens of the second-turn test (default 300)
  --skip-llama    minfer only
  --bin FILE      the minfer CLI to run (default: packages/cli/dist/bin.js of this checkout)
  --ngl V         -ngl for minfer serve (layers on the GPU: a count, all, auto)
  --json          the raw figures as JSON instead of the table`);
  process.exit(0);
}
const take = (flag) => {
  const i = argv.indexOf(flag);
  if (i < 0) return undefined;
  if (i + 1 >= argv.length) throw new Error(`${flag} needs a value`);
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
};
const int = (flag, dflt) => {
  const s = take(flag);
  if (s === undefined) return dflt;
  const v = Number(s);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${flag} needs a positive integer, got ${s}`);
  return v;
};
const flag = (name) => {
  const i = argv.indexOf(name);
  if (i >= 0) argv.splice(i, 1);
  return i >= 0;
};
const threads = int("-t", 2);
const nGen = int("-n", 64);
const ctxPerStream = int("--ctx", 512);
const reps = int("-r", 1);
const promptTokens = int("--prompt", 100);
const turnTokens = int("--turn", 300);
const streamsArg = take("--streams") ?? "1,4,16";
const streamCounts = streamsArg.split(",").map((s) => {
  const v = Number(s);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--streams needs positive integers, got ${streamsArg}`);
  return v;
});
const skipLlama = flag("--skip-llama");
// --bin FILE: the minfer CLI to serve with (a bundled one on the GPU machine); --ngl V: passed to
// `minfer serve` as -ngl (layers on the GPU).
bin = take("--bin") ?? bin;
const ngl = take("--ngl");
const json = flag("--json");
const files = [];
for (let m = take("-m"); m !== undefined; m = take("-m")) files.push(m);
for (const a of argv) {
  if (a.startsWith("-")) {
    console.error(`unknown option ${a}\n${USAGE}`);
    process.exit(2);
  }
  files.push(a);
}
if (!existsSync(bin)) {
  console.error(`${bin} is missing: build first (node scripts/setup.mjs, or pnpm build)`);
  process.exit(2);
}
const log = (s) => process.stderr.write(`serve-bench: ${s}\n`);

// ---------------------------------------------------------------- cleanup: the child servers always die
const children = new Set();
let tmpDir;
function killAll() {
  for (const c of children) {
    try {
      c.kill("SIGKILL");
    } catch {}
  }
  children.clear();
  if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
  tmpDir = undefined;
}
process.on("exit", killAll);
for (const [sig, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
  ["SIGHUP", 129],
]) {
  process.on(sig, () => {
    log(`${sig}: stopping the servers`);
    killAll();
    process.exit(code);
  });
}

// ---------------------------------------------------------------- the default model
if (files.length === 0) {
  tmpDir = mkdtempSync(join(tmpdir(), "serve-bench-"));
  const out = join(tmpDir, "qwen2-0.5b-q4_0.gguf");
  const vocab = join(root, "..", "shared", "fixtures", "vocab", "ggml-vocab-qwen2.gguf");
  const vocabArgs = existsSync(vocab) ? ["--vocab", vocab] : [];
  if (vocabArgs.length === 0) log(`no ${vocab}: the default model gets 259 byte tokens`);
  log(`writing ${out} (random weights, qwen2-0.5b shapes, q4_0)`);
  const r = spawnSync(
    process.execPath,
    [
      bin,
      "gguf",
      "synth",
      "--arch",
      "qwen2",
      "--preset",
      "qwen2-0.5b",
      "--type",
      "q4_0",
      ...vocabArgs,
      "-o",
      out,
    ],
    { encoding: "utf8", stdio: ["ignore", "ignore", "pipe"] },
  );
  if (r.status !== 0) throw new Error(`minfer gguf synth failed: ${r.stderr}`);
  files.push(out);
}

// ---------------------------------------------------------------- prompts
const WORDS = (
  "the of and to in is that it was for on are as with his they at be this from have or by one had not " +
  "but what all were when we there can an your which their said if do will each about how up out them " +
  "then she many some so these would other into has more her two like him see time could no make than " +
  "first been its who now people my made over did down only way find use may water long little very after " +
  "words called just where most know get through back much before go good new write our used me man too " +
  "any day same right look think also around another came come work three word must because does part even " +
  "place well such here take why things help put years different away again off went old number great tell " +
  "men say small every found still between name should home big give air line set own under read last never"
).split(" ");

/** Deterministic text of about `tokens` tokens (common words are one token each), unique per seed. */
function text(tokens, seed) {
  let s = (seed * 2654435761 + 12345) >>> 0;
  const rnd = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
  for (let i = 0; i < 8; i++) rnd();
  const out = [];
  let sentence = 0;
  for (let i = 0; i < tokens - 1; i++) {
    let w = WORDS[rnd() % WORDS.length];
    if (sentence === 0) w = w[0].toUpperCase() + w.slice(1);
    sentence++;
    if (sentence >= 8 + (rnd() % 6) && i < tokens - 3) {
      w += ".";
      sentence = 0;
      i++; // the period is a token of its own
    }
    out.push(w);
  }
  return `${out.join(" ")}.`;
}
let promptSeed = 1;
const nextPrompt = (tokens) => text(tokens, promptSeed++);
const secondTurnPart = (seed) => `\n\nQuestion: ${text(24, seed)} Answer:`;

// ---------------------------------------------------------------- statistics and formatting
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
const sd = (xs) => Math.sqrt(mean(xs.map((x) => (x - mean(xs)) ** 2)));
const fmt = (xs, digits = 1) =>
  xs.length === 0
    ? "—"
    : xs.length === 1
      ? xs[0].toFixed(digits)
      : `${mean(xs).toFixed(digits)} ± ${sd(xs).toFixed(digits)}`;

// ---------------------------------------------------------------- the minfer server
const serveHelp = spawnSync(process.execPath, [bin, "serve", "--help"], { encoding: "utf8" }).stdout ?? "";
const hasParallel = /(^|\s)-np\b|--parallel\b/.test(serveHelp);
if (!hasParallel) log("`minfer serve` has no -np yet: its one slot runs the streams one after another");

function freePort() {
  return new Promise((resolve, reject) => {
    const s = netServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts `minfer serve` with `slots` slots of `ctx` tokens each; resolves when /health answers 200. */
async function startServer(file, slots, ctx) {
  const port = await freePort();
  const args = [bin, "serve", "-m", file, "--port", `${port}`, "-t", `${threads}`];
  if (ngl !== undefined) args.push("-ngl", ngl);
  if (hasParallel) args.push("-np", `${slots}`, "-c", `${slots * ctx}`);
  else args.push("-c", `${ctx}`);
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let output = "";
  const keep = (d) => {
    output = (output + d).slice(-4000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  let exited = false;
  const done = new Promise((resolve) =>
    child.on("exit", (code, sig) => {
      exited = true;
      children.delete(child);
      resolve(code ?? sig);
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (exited) throw new Error(`minfer serve exited before it was ready:\n${output}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`minfer serve not healthy after 120 s:\n${output}`);
    }
    try {
      const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      if (r.status === 200) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  const banner = output
    .split("\n")
    .filter((l) => /slot|context/.test(l))
    .join("; ");
  return {
    url,
    args: args.slice(1).join(" "),
    banner,
    async stop() {
      if (exited) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await done;
      clearTimeout(t);
    },
  };
}

/**
 * One streaming /v1/completions request. Returns the time to the first chunk with a choice (ms,
 * from `t0`), the end time, the text and the usage (completion tokens counted from chunks when the
 * server sends no usage).
 */
async function complete(url, prompt, maxTokens, extra = {}, t0 = performance.now()) {
  const body = {
    prompt,
    max_tokens: maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    ...extra,
  };
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(600_000),
  });
  if (!res.ok) {
    const err = new Error(`HTTP ${res.status}: ${await res.text()}`);
    err.status = res.status;
    throw err;
  }
  const decoder = new TextDecoder();
  let buf = "";
  let first;
  let out = "";
  let chunks = 0;
  let usage;
  for await (const part of res.body) {
    buf += decoder.decode(part, { stream: true });
    for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") continue;
        const msg = JSON.parse(data);
        if (msg.error) throw new Error(`stream error: ${JSON.stringify(msg.error)}`);
        if (msg.usage) usage = msg.usage;
        const c = msg.choices?.[0];
        if (c && c.finish_reason == null) {
          first ??= performance.now();
          chunks++;
          out += c.text ?? "";
        }
      }
    }
  }
  const end = performance.now();
  return {
    ttft: (first ?? end) - t0,
    end,
    text: out,
    completionTokens: usage?.completion_tokens ?? chunks,
    promptTokens: usage?.prompt_tokens,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens,
  };
}

/** K concurrent streams on one server: aggregate tok/s, mean TTFT. */
async function minferStreams(url, prompts) {
  const t0 = performance.now();
  const rs = await Promise.all(prompts.map((p) => complete(url, p, nGen, {}, t0)));
  const wall = Math.max(...rs.map((r) => r.end)) - t0;
  const tokens = rs.reduce((a, r) => a + r.completionTokens, 0);
  return {
    tps: (tokens / wall) * 1000,
    ttft: mean(rs.map((r) => r.ttft)),
    tokens,
    promptTokens: mean(rs.map((r) => r.promptTokens ?? Number.NaN)),
  };
}

// ---------------------------------------------------------------- llama.cpp through node-llama-cpp
let llama;
let LlamaCompletion;
let llamaVersion;
if (!skipLlama) {
  const nlc = await import("node-llama-cpp");
  LlamaCompletion = nlc.LlamaCompletion;
  llama = await nlc.getLlama({ gpu: false, build: "never", logLevel: nlc.LlamaLogLevel.error });
  const pkg = join(dirname(createRequire(import.meta.url).resolve("node-llama-cpp")), "..", "package.json");
  llamaVersion = JSON.parse(readFileSync(pkg, "utf8")).version;
}

const llamaGen = { temperature: 0, repeatPenalty: false };
/** node-llama-cpp's thread figures of the last context (its `threads` is a hint). */
let llamaThreads;

/** K sequences of one context decoding together: aggregate tok/s, mean TTFT. */
async function llamaStreams(lctx, prompts) {
  const seqs = lctx.seqs;
  await Promise.all(seqs.map((s) => s.clearHistory()));
  const t0 = performance.now();
  const rs = await Promise.all(
    prompts.map(async (p, i) => {
      let first;
      let n = 0;
      await lctx.comps[i].generateCompletion(p, {
        ...llamaGen,
        maxTokens: nGen,
        onToken: (toks) => {
          first ??= performance.now();
          n += toks.length;
        },
      });
      const end = performance.now();
      return { ttft: (first ?? end) - t0, end, n, promptTokens: lctx.model.tokenize(p).length };
    }),
  );
  const wall = Math.max(...rs.map((r) => r.end)) - t0;
  const tokens = rs.reduce((a, r) => a + r.n, 0);
  return {
    tps: (tokens / wall) * 1000,
    ttft: mean(rs.map((r) => r.ttft)),
    tokens,
    promptTokens: mean(rs.map((r) => r.promptTokens)),
  };
}

async function llamaContext(model, k, ctx) {
  const context = await model.createContext({ sequences: k, contextSize: ctx, batchSize: 512, threads });
  const seqs = Array.from({ length: k }, () => context.getSequence());
  const comps = seqs.map((s) => new LlamaCompletion({ contextSequence: s }));
  llamaThreads = { ideal: context.idealThreads, max: llama.maxThreads };
  return { model, context, seqs, comps };
}

/** The tokens of `seq`'s state that `text` would reuse (their common prefix). */
function llamaCommonPrefix(model, seq, text) {
  const state = seq.contextTokens;
  const toks = model.tokenize(text);
  if (state.length > 0 && model.tokens.bos != null && state[0] === model.tokens.bos && toks[0] !== state[0])
    toks.unshift(model.tokens.bos);
  let i = 0;
  while (i < state.length && i < toks.length && state[i] === toks[i]) i++;
  return i;
}

// ---------------------------------------------------------------- second-turn TTFT
const turnMax = 8; // the second turn only needs its first token
const turnCtx = Math.max(ctxPerStream, Math.ceil((turnTokens * 1.3 + 2 * nGen + 64 + turnMax) / 256) * 256);

/** One conversation on minfer: turn 1, then turn 2 with reuse, then turn 2 without. */
async function minferSecondTurn(url, seed, noReuse) {
  const p1 = text(turnTokens, 100_000 + seed);
  const t1 = await complete(url, p1, nGen);
  const p2 = p1 + t1.text + secondTurnPart(200_000 + seed);
  const reuse = await complete(url, p2, turnMax);
  let fresh;
  if (noReuse.method === "cache_prompt") fresh = await complete(url, p2, turnMax, { cache_prompt: false });
  else {
    // One slot: another prompt in between pushes the conversation out of the cache.
    await complete(url, text(64, 300_000 + seed), 1);
    fresh = await complete(url, p2, turnMax);
  }
  return {
    reuse: reuse.ttft,
    noReuse: fresh.ttft,
    cachedReuse: reuse.cachedTokens ?? Number.NaN,
    cachedNoReuse: fresh.cachedTokens ?? Number.NaN,
    promptTokens: reuse.promptTokens ?? Number.NaN,
  };
}

/** The same conversation on llama.cpp: turn 2 on the same sequence, then on a cleared one. */
async function llamaSecondTurn(lctx, seed) {
  const [seq] = lctx.seqs;
  const [comp] = lctx.comps;
  const ttftOf = async (p) => {
    const t0 = performance.now();
    let first;
    await comp.generateCompletion(p, {
      ...llamaGen,
      maxTokens: turnMax,
      onToken: () => {
        first ??= performance.now();
      },
    });
    return (first ?? performance.now()) - t0;
  };
  await seq.clearHistory();
  const p1 = text(turnTokens, 100_000 + seed);
  const a1 = await comp.generateCompletion(p1, { ...llamaGen, maxTokens: nGen });
  const p2 = p1 + a1 + secondTurnPart(200_000 + seed);
  const cachedReuse = llamaCommonPrefix(lctx.model, seq, p2);
  const reuse = await ttftOf(p2);
  await seq.clearHistory();
  const noReuse = await ttftOf(p2);
  return {
    reuse,
    noReuse,
    cachedReuse,
    cachedNoReuse: 0,
    promptTokens: lctx.model.tokenize(p2).length,
  };
}

const collect = (rows, keys) => Object.fromEntries(keys.map((k) => [k, rows.map((r) => r[k])]));

// ---------------------------------------------------------------- the runs
const results = [];
try {
  for (const file of files) {
    const name = basename(file);
    log(`${name}: loading`);
    const lmodel = llama ? await llama.loadModel({ modelPath: file, gpuLayers: 0 }) : undefined;
    const streams = [];
    let serverArgs = [];
    for (const k of streamCounts) {
      const server = await startServer(file, k, ctxPerStream);
      serverArgs.push(server.args);
      const lctx = lmodel ? await llamaContext(lmodel, k, ctxPerStream) : undefined;
      try {
        // Warm-up: one short generation on each engine.
        await complete(server.url, nextPrompt(16), 4);
        if (lctx) await lctx.comps[0].generateCompletion(nextPrompt(16), { ...llamaGen, maxTokens: 4 });
        const m = [];
        const l = [];
        for (let r = 0; r < reps; r++) {
          log(`${name}: ${k} streams, repetition ${r + 1}/${reps}: minfer`);
          m.push(
            await minferStreams(
              server.url,
              Array.from({ length: k }, () => nextPrompt(promptTokens)),
            ),
          );
          if (lctx) {
            log(`${name}: ${k} streams, repetition ${r + 1}/${reps}: llama.cpp`);
            l.push(
              await llamaStreams(
                lctx,
                Array.from({ length: k }, () => nextPrompt(promptTokens)),
              ),
            );
          }
        }
        const keys = ["tps", "ttft", "tokens", "promptTokens"];
        streams.push({
          streams: k,
          minfer: collect(m, keys),
          llamacpp: lctx ? collect(l, keys) : null,
        });
      } finally {
        await server.stop();
        if (lctx) await lctx.context.dispose();
      }
    }

    // Second turn: one slot of turnCtx tokens.
    log(`${name}: second-turn TTFT (turn 1 ≈ ${turnTokens} tokens, context ${turnCtx})`);
    const server = await startServer(file, 1, turnCtx);
    serverArgs.push(server.args);
    serverArgs = [...new Set(serverArgs.map((a) => a.replace(/--port \d+ /, "")))];
    const lctx = lmodel ? await llamaContext(lmodel, 1, turnCtx) : undefined;
    const noReuse = { method: "evict" };
    let turn;
    try {
      try {
        await complete(server.url, nextPrompt(16), 1, { cache_prompt: false });
        noReuse.method = "cache_prompt";
      } catch (e) {
        if (e.status !== 400) throw e;
        log("the server refuses cache_prompt: without reuse = another prompt in between (one slot)");
      }
      const m = [];
      const l = [];
      for (let r = 0; r < reps; r++) {
        m.push(await minferSecondTurn(server.url, r, noReuse));
        if (lctx) l.push(await llamaSecondTurn(lctx, r));
      }
      const keys = ["reuse", "noReuse", "cachedReuse", "cachedNoReuse", "promptTokens"];
      turn = {
        ctx: turnCtx,
        turn1Tokens: turnTokens,
        minfer: { ...collect(m, keys), noReuseMethod: noReuse.method },
        llamacpp: lctx ? collect(l, keys) : null,
      };
    } finally {
      await server.stop();
      if (lctx) await lctx.context.dispose();
    }
    if (lmodel) await lmodel.dispose();
    results.push({
      file,
      threads,
      nGen,
      ctxPerStream,
      reps,
      minferParallelFlag: hasParallel,
      minferServer: serverArgs,
      nodeLlamaCpp: llamaVersion ?? null,
      llamaThreads: llamaThreads ?? null,
      streams,
      secondTurn: turn,
    });
  }
} finally {
  if (llama) await llama.dispose();
  killAll();
}

// ---------------------------------------------------------------- output
if (json) console.log(JSON.stringify(results, null, 1));
else {
  console.log(
    "| model | streams | minfer tok/s | llama.cpp tok/s | ratio | minfer TTFT ms | llama.cpp TTFT ms |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const r of results) {
    const name = basename(r.file);
    for (const s of r.streams) {
      const l = s.llamacpp;
      const ratio = l ? (mean(s.minfer.tps) / mean(l.tps)).toFixed(2) : "—";
      console.log(
        `| ${name} | ${s.streams} | ${fmt(s.minfer.tps)} | ${l ? fmt(l.tps) : "—"} | ${ratio} | ${fmt(s.minfer.ttft, 0)} | ${l ? fmt(l.ttft, 0) : "—"} |`,
      );
    }
  }
  console.log("");
  for (const r of results) {
    const t = r.secondTurn;
    const m = t.minfer;
    const l = t.llamacpp;
    const cached = (xs) => (xs.every(Number.isNaN) ? "?" : fmt(xs, 0));
    const how = m.noReuseMethod === "cache_prompt" ? "cache_prompt: false" : "another prompt in between";
    console.log(
      `${basename(r.file)}: second turn TTFT (ms), turn 2 ≈ ${fmt(m.promptTokens, 0)} prompt tokens: ` +
        `minfer reuse ${fmt(m.reuse, 0)} (cached ${cached(m.cachedReuse)} tokens) / no reuse ${fmt(m.noReuse, 0)} ` +
        `(cached ${cached(m.cachedNoReuse)}; ${how})` +
        (l
          ? `;  llama.cpp reuse ${fmt(l.reuse, 0)} (cached ${fmt(l.cachedReuse, 0)} tokens) / no reuse ${fmt(l.noReuse, 0)}`
          : ""),
    );
  }
  const r0 = results[0];
  const prompt = r0
    ? fmt(
        r0.streams.flatMap((s) => s.minfer.promptTokens),
        0,
      )
    : "?";
  console.log(
    `\n${threads} threads, ${nGen} tokens per stream (greedy), context ${ctxPerStream} per stream, ` +
      `prompts ≈ ${prompt} tokens (each stream its own), ${reps} repetition(s), engines alternating; ` +
      `tok/s = all streams' tokens / wall time from the first request to the last stream's end; ` +
      `TTFT = mean over streams from the send` +
      (llamaVersion
        ? `; llama.cpp: node-llama-cpp ${llamaVersion}, K sequences of one context, ` +
          `threads ${llamaThreads?.ideal} (max ${llamaThreads?.max})`
        : "") +
      `\nminfer: ${r0 ? r0.minferServer.join(" | ") : ""}` +
      (hasParallel ? "" : " (no -np on this server yet: one slot, the streams queue)"),
  );
}
process.exit(0);
