#!/usr/bin/env node
// `minfer serve` at K concurrent streams beside `minfer bench -npl K` (the raw batched decode) on
// the same file and flags, so the serving overhead (HTTP, SSE, tokenization, sampling, the
// batcher's scheduling) shows against the engine's own figure.
//
// Each round runs the bench (one child, every K, -r 1 after its warmup) and, for each K, a server
// `minfer serve -np K -c K×(PP+TG+8) --port 0` that gets one untimed wave of K streaming
// /v1/completions requests and then one timed wave; rounds alternate which of the two goes first.
// Figures are medians over the rounds.
//
// Serve figures: TTFT = from sending the K requests at once to a stream's first text chunk (median
// and max over the K); S_TG = the tokens that come after every stream has its first one (the
// streams' usage.completion_tokens less the tokens whose chunks came by then), over the time from
// then to the last chunk (the first token of a stream comes from its prompt's logits, as in
// bench's T_TG). That window ends with a tail where the streams that started first are done and
// fewer rows step: "all K" is the part of it where every stream still generates (from the last
// first chunk to the first stream's end), each step K rows as in bench's T_TG. Prompts: a different one per stream,
// made PP tokens long with the server's /tokenize (BOS counted); temperature 0, max_tokens TG,
// cache_prompt false, and the end-of-sequence token biased by -100 (the server has no ignore_eos)
// so that streams run to TG tokens; the actual tokens (usage.completion_tokens) are reported.
// Step ms / gap ms: from the server's /metrics over the timed wave, the mean decode step and the
// mean host gap between steps (sampling, planning, output the overlap does not cover); gen step
// ms: the mean decode step of the steps with no prompt tokens, beside bench's T_TG a step.
//
//   node packages/cli/bench/serve-streams.mjs -m FILE [-npl 1,4,16] [-npp 128] [-ntg 128]
//        [--rounds 3] [--bin FILE] [--json] [--serve-flag FLAG …] [--serve-node-flag FLAG …] [--serve-wrap CMD]
//        [-- extra minfer flags, e.g. -ngl all -t 2]
//
// Node.js 20 or later, no dependencies (node:http and a small SSE reader).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const USAGE =
  "usage: serve-streams.mjs -m FILE [-npl 1,4,16] [-npp 128] [-ntg 128] [--rounds 3] [--bin FILE] [--json] [--serve-flag FLAG …] [--serve-node-flag FLAG …] [--serve-wrap CMD] [-- minfer flags]";

// ---------------------------------------------------------------- arguments
const all = process.argv.slice(2);
const dd = all.indexOf("--");
const argv = dd >= 0 ? all.slice(0, dd) : all;
const extra = dd >= 0 ? all.slice(dd + 1) : [];
if (argv.includes("-h") || argv.includes("--help")) {
  console.log(`${USAGE}

  -m FILE        the GGUF model (required)
  -npl LIST      concurrent streams / parallel sequences K, a comma list (default 1,4,16)
  -npp N         prompt tokens per stream (default 128)
  -ntg N         generated tokens per stream (default 128)
  --rounds N     rounds, bench and serve interleaved; medians are reported (default 3)
  --bin FILE     the minfer CLI (default: packages/cli/dist/bin.js of this checkout)
  --json         the per-round figures as JSON instead of the table
  --serve-flag F a flag for \`minfer serve\` only (repeatable), e.g. --serve-flag --no-overlap-output
  --serve-node-flag F
                 a Node.js flag of the server process (repeatable), e.g. --serve-node-flag --cpu-prof
  --serve-wrap CMD
                 a command the server runs under (words split at spaces), e.g. a profiler:
                 --serve-wrap "nsys profile -o /tmp/serve"; it is stopped with SIGINT
  -- FLAGS       passed to both \`minfer bench\` and \`minfer serve\` (-t, -b, -ngl, --kv-type, -dev);
                 -c is set by this script`);
  process.exit(0);
}
function fail(message) {
  console.error(`serve-streams: ${message}\n${USAGE}`);
  process.exit(2);
}
const take = (flag) => {
  const i = argv.indexOf(flag);
  if (i < 0) return undefined;
  if (i + 1 >= argv.length) fail(`${flag} needs a value`);
  const [, v] = argv.splice(i, 2);
  return v;
};
const positive = (flag, raw) => {
  const v = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(v) || v < 1) fail(`${flag} must be a positive integer, got "${raw}"`);
  return v;
};
const file = take("-m");
const streams = (take("-npl") ?? "1,4,16").split(",").map((s) => positive("-npl", s));
const npp = positive("-npp", take("-npp") ?? "128");
const ntg = positive("-ntg", take("-ntg") ?? "128");
const rounds = positive("--rounds", take("--rounds") ?? "3");
// The server takes at most 64 open connections from one client (@minfer/server's connectionsPerClient).
if (streams.some((k) => k > 64)) fail("-npl: at most 64 streams (the server's connections per client)");
const bin = take("--bin") ?? join(here, "..", "dist", "bin.js");
const serveOnly = [];
for (let i = argv.indexOf("--serve-flag"); i >= 0; i = argv.indexOf("--serve-flag")) {
  if (i + 1 >= argv.length) fail("--serve-flag needs a value");
  serveOnly.push(argv.splice(i, 2)[1]);
}
// Node.js flags of the server process only (e.g. --cpu-prof --cpu-prof-dir=DIR: the server's
// JavaScript profile, written when it exits on the SIGTERM that ends each K).
const serveNode = [];
for (let i = argv.indexOf("--serve-node-flag"); i >= 0; i = argv.indexOf("--serve-node-flag")) {
  if (i + 1 >= argv.length) fail("--serve-node-flag needs a value");
  serveNode.push(argv.splice(i, 2)[1]);
}
// A command the server process runs under (a profiler such as nsys), stopped with SIGINT so that
// it writes its report.
const serveWrap = (take("--serve-wrap") ?? "").split(" ").filter((w) => w !== "");
const jsonOut = argv.includes("--json");
if (jsonOut) argv.splice(argv.indexOf("--json"), 1);
if (argv.length > 0) fail(`unknown argument ${argv[0]}`);
if (file === undefined) fail("-m FILE is required");
if (!existsSync(file)) fail(`cannot find ${file}`);
if (!existsSync(bin)) fail(`${bin} is missing: build the CLI first (cd packages/cli && npm run build)`);
if (extra.some((a) => a === "-c" || a === "--ctx-size" || a.startsWith("--ctx-size=")))
  fail("-c is set by this script (K × (PP + TG + 8) for serve; bench sizes its own)");
const log = (s) => process.stderr.write(`serve-streams: ${s}\n`);

// ---------------------------------------------------------------- child processes
const children = new Set();
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});
for (const [sig, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
]) {
  process.on(sig, () => process.exit(code));
}

/** Runs the CLI to its end: { code, stdout, stderr }. */
function run(args) {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    children.add(c);
    let stdout = "";
    let stderr = "";
    c.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    c.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    c.on("error", reject);
    c.on("close", (code) => {
      children.delete(c);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `minfer bench -npl …` once (-r 1): per K, its llama-batched-bench JSON line. */
async function bench() {
  const args = ["bench", "-m", file, "-npl", streams.join(","), "-npp", `${npp}`, "-ntg", `${ntg}`];
  const r = await run([...args, "-r", "1", "--json", ...extra]);
  if (r.code !== 0) throw new Error(`minfer ${args.join(" ")} failed (${r.code}):\n${r.stderr}`);
  const rows = r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  return new Map(rows.map((x) => [x.pl, x]));
}

/** Starts `minfer serve -np K` on a free port; resolves with its base URL once it is ready. */
function startServer(k) {
  const args = [
    "serve",
    "-m",
    file,
    "-np",
    `${k}`,
    "-c",
    `${k * (npp + ntg + 8)}`,
    "--port",
    "0",
    "--metrics", // the step histograms (stepMetrics)
    ...extra,
    ...serveOnly,
  ];
  const argsOf = [...serveNode, bin, ...args];
  const child = spawn(
    serveWrap[0] ?? process.execPath,
    serveWrap.length > 0 ? [...serveWrap.slice(1), process.execPath, ...argsOf] : argsOf,
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  children.add(child);
  let stderr = "";
  const ready = new Promise((resolve, reject) => {
    let url;
    child.stderr.setEncoding("utf8").on("data", (d) => {
      stderr += d;
      url ??= /serve: listening on (http:\/\/\S+)/.exec(stderr)?.[1];
      if (url && /serve: ready on /.test(stderr)) resolve(url);
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      children.delete(child);
      reject(new Error(`minfer ${args.join(" ")} exited (${code}) before it was ready:\n${stderr}`));
    });
  });
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill(serveWrap.length > 0 ? "SIGINT" : "SIGTERM");
      // (a wrapper writing its report gets two minutes)
      setTimeout(() => child.kill("SIGKILL"), serveWrap.length > 0 ? 120_000 : 30_000).unref();
    });
  return { ready, stop };
}

// ---------------------------------------------------------------- HTTP
/**
 * An HTTP client of one server through one keep-alive agent of at most `maxSockets` connections
 * (node:http rather than fetch, so that the connections this script holds are counted and closed:
 * the server refuses a client's 65th). `request` resolves with the status and the response, whose
 * body `onData` receives piece by piece (with its arrival time) when given, else collected.
 */
function client(base, maxSockets) {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const request = (method, path, body, onData) =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = httpRequest(
        new URL(path, base),
        {
          method,
          agent,
          headers: payload
            ? { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
            : {},
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d) => {
            if (onData && res.statusCode === 200) onData(d, performance.now());
            else text += d;
          });
          res.on("end", () => resolve({ status: res.statusCode, text }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  const json = async (method, path, body) => {
    const r = await request(method, path, body);
    if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return JSON.parse(r.text);
  };
  return {
    get: (path) => json("GET", path),
    post: (path, body) => json("POST", path, body),
    request,
    close: () => agent.destroy(),
  };
}

/**
 * One streaming completion: resolves with the send time, each text chunk's arrival time, the
 * usage the server reported and the finish reason. SSE: events are separated by a blank line;
 * each `data: …` line holds a JSON chunk, or [DONE].
 */
async function complete(api, prompt, bias) {
  const chunks = [];
  let usage;
  let finish;
  let buffer = "";
  let failure;
  const onData = (d, now) => {
    buffer += d;
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      for (const line of event.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") continue;
        const msg = JSON.parse(data);
        if (msg.error) failure ??= new Error(`stream error: ${JSON.stringify(msg.error)}`);
        if (msg.usage) usage = msg.usage;
        const c = msg.choices?.[0];
        if (c?.text) chunks.push(now);
        if (c?.finish_reason) finish = c.finish_reason;
      }
    }
  };
  const t0 = performance.now();
  const r = await api.request(
    "POST",
    "/v1/completions",
    {
      prompt,
      max_tokens: ntg,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
      cache_prompt: false,
      ...(bias ? { logit_bias: bias } : {}),
    },
    onData,
  );
  if (r.status !== 200) throw new Error(`/v1/completions: ${r.status} ${r.text}`);
  if (failure) throw failure;
  return { t0, chunks, usage, finish };
}

// ---------------------------------------------------------------- prompts of PP tokens
const WORDS = (
  "the of and to in is that it was for on are as with his they at be this from have or by one had not " +
  "but what all were when we there can an your which their said if do will each about how up out them " +
  "then she many some so these would other into has more her two like him see time could no make than " +
  "first been its who now people my made over did down only way find use may water long little very after"
).split(" ");

/** Deterministic words, a different run of them per seed. */
function words(seed, n) {
  let s = (seed * 2654435761 + 12345) >>> 0;
  return Array.from({ length: n }, () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return WORDS[s % WORDS.length];
  });
}

const promptCache = new Map();

/** A prompt of exactly `npp` tokens (BOS counted) when the tokenizer allows it, else the nearest below. */
async function prompt(api, seed) {
  if (promptCache.has(seed)) return promptCache.get(seed);
  const count = async (text) =>
    (await api.post("/tokenize", { content: text, add_special: true })).tokens.length;
  const pool = words(seed, npp * 2);
  let lo = 0;
  let hi = pool.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((await count(pool.slice(0, mid).join(" "))) <= npp) lo = mid;
    else hi = mid - 1;
  }
  let text = pool.slice(0, lo).join(" ");
  let n = await count(text);
  for (let pad = 0; pad < 16 && n < npp; pad++) {
    const next = `${text}.`;
    const m = await count(next);
    if (m > npp) break;
    text = next;
    n = m;
  }
  const p = { text, tokens: n };
  promptCache.set(seed, p);
  return p;
}

/** The end-of-sequence token's id, from /props and /tokenize (undefined when the model names none). */
async function eosBias(api) {
  const props = await api.get("/props");
  if (!props.eos_token) return undefined;
  const ids = (await api.post("/tokenize", { content: props.eos_token, parse_special: true })).tokens;
  return ids.length === 1 ? { [ids[0]]: -100 } : undefined;
}

/** K streams at once on a running server: TTFT per stream and the generation phase's tokens/s. */
async function wave(api, k, bias) {
  const prompts = [];
  for (let i = 1; i <= k; i++) prompts.push(await prompt(api, i)); // one connection at a time
  const results = await Promise.all(prompts.map((p) => complete(api, p.text, bias)));
  const t0 = Math.min(...results.map((r) => r.t0));
  const firsts = results.map((r) => r.chunks[0] ?? Number.NaN);
  const genStart = Math.max(...firsts);
  const genEnd = Math.max(...results.map((r) => r.chunks[r.chunks.length - 1] ?? Number.NaN));
  // Tokens of the phase: each stream's tokens less those whose chunks came by genStart (a token
  // whose text the server held back, e.g. part of a character, has no chunk of its own).
  const genTokens = results.reduce(
    (s, r) =>
      s + (r.usage?.completion_tokens ?? r.chunks.length) - r.chunks.filter((t) => t <= genStart).length,
    0,
  );
  // The phase where every stream generates (from the last first chunk to the first stream's last
  // chunk): no stream has ended, so every step decodes K rows, as each of bench's T_TG steps does.
  // Before it, early streams generate while later prompts are still prefilled; after it, the
  // streams that started last finish with fewer rows a step. Its tokens are its chunks, each
  // stream's counted at that stream's tokens a chunk (1 unless the server held text back).
  const allEnd = Math.min(...results.map((r) => r.chunks[r.chunks.length - 1] ?? Number.NaN));
  const allTokens = results.reduce((s, r) => {
    const n = r.chunks.filter((t) => t > genStart && t <= allEnd).length;
    return s + (n * (r.usage?.completion_tokens ?? r.chunks.length)) / r.chunks.length;
  }, 0);
  const ttft = firsts.map((t) => (t - t0) / 1000);
  return {
    speedAll: allTokens / ((allEnd - genStart) / 1000),
    allS: (allEnd - genStart) / 1000,
    ttftMedian: median(ttft),
    ttftMax: Math.max(...ttft),
    speedTg: genTokens / ((genEnd - genStart) / 1000),
    promptTokens: median(results.map((r) => r.usage?.prompt_tokens ?? Number.NaN)),
    tokensMin: Math.min(...results.map((r) => r.usage?.completion_tokens ?? Number.NaN)),
    chunks: results.reduce((s, r) => s + r.chunks.length, 0),
    tokens: results.reduce((s, r) => s + (r.usage?.completion_tokens ?? 0), 0),
    finishes: [...new Set(results.map((r) => r.finish))].join(","),
    wallS: (Math.max(...results.map((r) => r.chunks[r.chunks.length - 1] ?? 0)) - t0) / 1000,
  };
}

/**
 * The server's step histograms (GET /metrics): count and sum of the decode steps' times and of
 * the host's gaps between them (undefined when the server does not report them).
 */
async function stepMetrics(api) {
  const r = await api.request("GET", "/metrics");
  if (r.status !== 200) return undefined;
  const value = (name) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(r.text)?.[1] ?? Number.NaN);
  return {
    steps: value("minfer_decode_step_seconds_count"),
    stepS: value("minfer_decode_step_seconds_sum"),
    gaps: value("minfer_decode_step_gap_seconds_count"),
    gapS: value("minfer_decode_step_gap_seconds_sum"),
    genSteps: value("minfer_decode_generate_step_seconds_count"),
    genS: value("minfer_decode_generate_step_seconds_sum"),
  };
}

async function serve(k) {
  const server = startServer(k);
  let api;
  try {
    api = client(await server.ready, k);
    const bias = await eosBias(api);
    await wave(api, k, bias); // warmup: the server builds the graphs of these shapes
    const m0 = await stepMetrics(api);
    const w = await wave(api, k, bias);
    const m1 = await stepMetrics(api);
    // Per step of the timed wave: the decode's time and the host's gap before it (what the
    // device waited for between steps), in ms.
    if (m0 && m1) {
      w.stepMs = ((m1.stepS - m0.stepS) / (m1.steps - m0.steps)) * 1000;
      w.gapMs = ((m1.gapS - m0.gapS) / (m1.gaps - m0.gaps)) * 1000;
      w.genStepMs = ((m1.genS - m0.genS) / (m1.genSteps - m0.genSteps)) * 1000;
    }
    return w;
  } finally {
    api?.close();
    await server.stop();
  }
}

// ---------------------------------------------------------------- rounds
function median(xs) {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const perRound = [];
try {
  await measure();
} catch (e) {
  console.error(`serve-streams: ${e.message}`);
  process.exit(1);
}

async function measure() {
  for (let r = 1; r <= rounds; r++) {
    const round = { round: r, bench: undefined, serve: new Map() };
    const doBench = async () => {
      log(`round ${r}: minfer bench -npl ${streams.join(",")} -npp ${npp} -ntg ${ntg}`);
      round.bench = await bench();
    };
    const doServe = async () => {
      for (const k of streams) {
        log(`round ${r}: minfer serve -np ${k}: ${k} streams`);
        round.serve.set(k, await serve(k));
      }
    };
    if (r % 2 === 1) {
      await doBench();
      await doServe();
    } else {
      await doServe();
      await doBench();
    }
    perRound.push(round);
  }
}

const rows = streams.map((k) => {
  const b = perRound.map((x) => x.bench.get(k));
  const s = perRound.map((x) => x.serve.get(k));
  const m = (xs, f) => median(xs.map(f));
  const benchTg = m(b, (x) => x.speed_tg);
  const serveTg = m(s, (x) => x.speedTg);
  return {
    streams: k,
    pp: npp,
    tg: ntg,
    bench_t_pp: m(b, (x) => x.t_pp),
    bench_speed_pp: m(b, (x) => x.speed_pp),
    bench_speed_tg: benchTg,
    serve_ttft_median: m(s, (x) => x.ttftMedian),
    serve_ttft_max: m(s, (x) => x.ttftMax),
    serve_speed_tg: serveTg,
    serve_over_bench_tg: serveTg / benchTg,
    serve_speed_all: m(s, (x) => x.speedAll),
    serve_all_s: m(s, (x) => x.allS),
    serve_all_over_bench_tg: m(s, (x) => x.speedAll) / benchTg,
    serve_step_ms: m(s, (x) => x.stepMs ?? Number.NaN),
    serve_gap_ms: m(s, (x) => x.gapMs ?? Number.NaN),
    serve_gen_step_ms: m(s, (x) => x.genStepMs ?? Number.NaN),
    bench_step_ms: m(b, (x) => (x.t_tg / ntg) * 1000),
    serve_prompt_tokens: m(s, (x) => x.promptTokens),
    serve_tokens_min: Math.min(...s.map((x) => x.tokensMin)),
    serve_chunks_vs_tokens: `${s.reduce((a, x) => a + x.chunks, 0)}/${s.reduce((a, x) => a + x.tokens, 0)}`,
    serve_finish: [...new Set(s.map((x) => x.finishes))].join(","),
  };
});

if (jsonOut) {
  const rawRounds = perRound.map((x) => ({
    round: x.round,
    bench: [...x.bench.values()],
    serve: Object.fromEntries(x.serve),
  }));
  console.log(JSON.stringify({ file, npp, ntg, rounds, extra, rows, perRound: rawRounds }, null, 2));
} else {
  const head = [
    "K",
    "PP",
    "TG",
    "bench T_PP s",
    "serve TTFT med s",
    "serve TTFT max s",
    "bench S_TG t/s",
    "serve S_TG t/s",
    "serve/bench",
    "all K: t/s (s)",
    "all K/bench",
    "serve step ms",
    "gen step ms: serve / bench",
    "serve gap ms",
    "serve tokens",
  ];
  const cellsOf = (x) => [
    `${x.streams}`,
    `${x.serve_prompt_tokens === x.pp ? x.pp : `${x.pp} (serve ${x.serve_prompt_tokens})`}`,
    `${x.tg}`,
    x.bench_t_pp.toFixed(3),
    x.serve_ttft_median.toFixed(3),
    x.serve_ttft_max.toFixed(3),
    x.bench_speed_tg.toFixed(2),
    x.serve_speed_tg.toFixed(2),
    x.serve_over_bench_tg.toFixed(2),
    `${x.serve_speed_all.toFixed(2)} (${x.serve_all_s.toFixed(2)})`,
    x.serve_all_over_bench_tg.toFixed(2),
    x.serve_step_ms.toFixed(3),
    `${x.serve_gen_step_ms.toFixed(3)} / ${x.bench_step_ms.toFixed(3)}`,
    x.serve_gap_ms.toFixed(3),
    `≥${x.serve_tokens_min}/stream`,
  ];
  const body = rows.map(cellsOf);
  const w = head.map((h, i) => Math.max(h.length, ...body.map((c) => c[i].length)));
  const line = (c) => `| ${c.map((v, i) => v.padStart(w[i])).join(" | ")} |`;
  console.log(
    `${file}: medians of ${rounds} round${rounds > 1 ? "s" : ""}; minfer flags: ${extra.join(" ") || "none"}`,
  );
  console.log(line(head));
  console.log(`|${w.map((n) => `${"-".repeat(n + 1)}:`).join("|")}|`);
  for (const c of body) console.log(line(c));
  for (const x of rows)
    if (x.serve_finish !== "length" || x.serve_tokens_min < x.tg)
      log(
        `K ${x.streams}: streams finished with ${x.serve_finish}, the shortest after ${x.serve_tokens_min} tokens`,
      );
}
