import type { Context } from "@minfer/engine";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { batchedOptions, benchBatched, isBatched } from "./bench-batched.js";
import { benchSpeculative, isSpeculative, specBenchOptions } from "./bench-spec.js";
import { humanCount, type Loaded, loadModel, modelSize, newContext, weightTypes } from "./load.js";
import { check, contextOptions, modelOption, modelPath, runSettings } from "./options.js";
import { speculativeOptions } from "./speculative.js";

export const benchOptions: OptionSpec[] = [
  modelOption,
  {
    flags: ["-p", "--n-prompt"],
    kind: "integer",
    metavar: "N",
    help: "prompt tokens of the pp test; 0 = skip (default: 512)",
  },
  {
    flags: ["-n", "--n-gen"],
    kind: "integer",
    metavar: "N",
    help: "generated tokens of the tg test; 0 = skip (default: 128)",
  },
  {
    flags: ["-d", "--n-depth"],
    kind: "integer",
    metavar: "N",
    help: "tokens already in the cache when each test starts (prefilled untimed, as llama-bench's -d; default: 0)",
  },
  {
    flags: ["-r", "--repetitions"],
    kind: "integer",
    metavar: "N",
    help: "timed runs per test, after one warmup (default: 3); reported as mean ± stddev, in batched mode as the median time",
  },
  ...batchedOptions,
  ...speculativeOptions,
  ...specBenchOptions,
  ...contextOptions.filter((o) => o.flags[0] !== "-c"),
  {
    flags: ["--json"],
    kind: "boolean",
    help: "print a JSON array of results instead of the table (batched mode: one JSON object per line, llama-batched-bench's --output-format jsonl)",
  },
  {
    flags: ["--verbose"],
    kind: "boolean",
    help: "print backend diagnostics and hyperparameters to stderr (batched mode: also each phase's decode calls, their sizes, micro-batches and logits rows)",
  },
];

/** One test's result, with llama-bench's JSON field names. */
export interface BenchResult {
  model_filename: string;
  model_type: string;
  model_size: number;
  model_n_params: number;
  backend: string;
  n_threads: number;
  n_batch: number;
  type_kv: string;
  n_prompt: number;
  n_gen: number;
  n_depth: number;
  avg_ns: number;
  stddev_ns: number;
  avg_ts: number;
  stddev_ts: number;
  samples_ns: number[];
  samples_ts: number[];
}

/** Token ids spread over the vocabulary, deterministic (what a pp test decodes). */
function benchTokens(count: number, nVocab: number, salt: number): number[] {
  return Array.from({ length: count }, (_, i) => (i * 7919 + salt * 104729 + 1) % nVocab);
}

/** Clears the cache and prefills `depth` tokens (untimed), in micro-batch-sized pieces. */
async function prefill(ctx: Context, depth: number): Promise<void> {
  ctx.clear();
  if (depth > 0)
    await ctx.decode({ tokens: benchTokens(depth, ctx.model.hparams.nVocab, 99), logits: "none" });
}

/** pp: `p` tokens in one batch after `depth` cached ones, logits of the last one. Returns ms. */
async function promptRun(ctx: Context, p: number, depth: number, salt: number): Promise<number> {
  await prefill(ctx, depth);
  const tokens = benchTokens(p, ctx.model.hparams.nVocab, salt);
  const t0 = performance.now();
  await ctx.decode({ tokens, logits: "last" });
  return performance.now() - t0;
}

/** tg: `n` tokens one at a time after `depth` cached ones, as llama-bench does. Returns ms. */
async function genRun(ctx: Context, n: number, depth: number, salt: number): Promise<number> {
  await prefill(ctx, depth);
  const tokens = benchTokens(n, ctx.model.hparams.nVocab, salt);
  const t0 = performance.now();
  for (const t of tokens) await ctx.decode({ tokens: [t], logits: "last" });
  return performance.now() - t0;
}

function stats(xs: number[]): { mean: number; stddev: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const v = xs.length > 1 ? xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1) : 0;
  return { mean, stddev: Math.sqrt(v) };
}

async function runTest(
  loaded: Loaded,
  ctx: Context,
  test: { nPrompt: number; nGen: number; depth: number },
  reps: number,
): Promise<BenchResult> {
  const { model, runtime } = loaded;
  const tokens = test.nPrompt || test.nGen;
  const once = (salt: number) =>
    test.nPrompt > 0
      ? promptRun(ctx, test.nPrompt, test.depth, salt)
      : genRun(ctx, test.nGen, test.depth, salt);
  await once(0); // warmup
  const ms: number[] = [];
  for (let r = 1; r <= reps; r++) ms.push(await once(r));
  ctx.clear();
  const ts = ms.map((m) => (tokens * 1000) / m);
  const ns = ms.map((m) => Math.round(m * 1e6));
  const { params, bytes } = modelSize(model);
  return {
    model_filename: model.path,
    model_type: `${model.hparams.arch} ${humanCount(params)} ${weightTypes(model)}`,
    model_size: bytes,
    model_n_params: params,
    backend: loaded.gpu ? `CUDA (${model.placement.offloadedLayers}/${model.hparams.nLayer} layers)` : "CPU",
    n_threads: runtime.threads,
    n_batch: ctx.nUbatch,
    type_kv: ctx.kvDtype,
    n_prompt: test.nPrompt,
    n_gen: test.nGen,
    n_depth: test.depth,
    avg_ns: Math.round(stats(ns).mean),
    stddev_ns: Math.round(stats(ns).stddev),
    avg_ts: stats(ts).mean,
    stddev_ts: stats(ts).stddev,
    samples_ns: ns,
    samples_ts: ts,
  };
}

/** "pp512", "tg128", "pp512 @ d4096". */
function testName(r: BenchResult): string {
  return `${r.n_prompt > 0 ? `pp${r.n_prompt}` : `tg${r.n_gen}`}${r.n_depth > 0 ? ` @ d${r.n_depth}` : ""}`;
}

/** llama-bench's markdown table. */
function table(results: BenchResult[]): string {
  const size = (b: number) =>
    b >= 1 << 30 ? `${(b / (1 << 30)).toFixed(2)} GiB` : `${(b / (1 << 20)).toFixed(2)} MiB`;
  const rows = results.map((r) => [
    r.model_type,
    size(r.model_size),
    humanCount(r.model_n_params),
    r.backend,
    String(r.n_threads),
    testName(r),
    `${r.avg_ts.toFixed(2)} ± ${r.stddev_ts.toFixed(2)}`,
  ]);
  const head = ["model", "size", "params", "backend", "threads", "test", "t/s"];
  const right = [false, true, true, false, true, true, true];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (right[i] ? c.padStart(w[i]!) : c.padEnd(w[i]!))).join(" | ")} |`;
  const rule = `| ${w.map((n, i) => (right[i] ? `${"-".repeat(n - 1)}:` : "-".repeat(n))).join(" | ")} |`;
  return [line(head), rule, ...rows.map(line)].join("\n");
}

/**
 * `minfer bench`: prompt processing and generation speed, llama-bench style; with -npl, batched
 * decoding, llama-batched-bench style (bench-batched.ts).
 */
export async function benchCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, benchOptions);
  expectPositionals(positionals, []);
  if (isBatched(options)) {
    if (isSpeculative(options))
      throw new CliError(
        "INVALID_ARGUMENT",
        "-npl (batched mode) does not take speculative decoding (-md, --spec-type)",
      );
    return benchBatched(options);
  }
  if (isSpeculative(options)) return benchSpeculative(options);
  const path = modelPath(options);
  const nPrompt = (options.nPrompt as number | undefined) ?? 512;
  const nGen = (options.nGen as number | undefined) ?? 128;
  const reps = (options.repetitions as number | undefined) ?? 3;
  const depth = (options.nDepth as number | undefined) ?? 0;
  check(depth >= 0, "-d", "an integer >= 0", depth);
  check(nPrompt >= 0, "-p", "an integer >= 0", nPrompt);
  check(nGen >= 0, "-n", "an integer >= 0", nGen);
  check(reps >= 1, "-r", "a positive integer", reps);
  const settings = runSettings(options);
  const loaded = await loadModel(path, settings, Boolean(options.verbose));
  // Like llama-bench: a context of exactly the tokens the tests need.
  const ctx = newContext(loaded.model, settings, { nCtx: Math.max(1, depth + Math.max(nPrompt, nGen)) });
  try {
    const results: BenchResult[] = [];
    for (const test of [
      { nPrompt, nGen: 0, depth },
      { nPrompt: 0, nGen, depth },
    ]) {
      if (test.nPrompt + test.nGen === 0) continue;
      const r = await runTest(loaded, ctx, test, reps);
      results.push(r);
      process.stderr.write(`${testName(r)}: ${r.avg_ts.toFixed(2)} ± ${r.stddev_ts.toFixed(2)} t/s\n`);
    }
    process.stdout.write(options.json ? `${JSON.stringify(results, null, 2)}\n` : `${table(results)}\n`);
    return 0;
  } finally {
    ctx.dispose();
    loaded.close();
  }
}
