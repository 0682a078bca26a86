// `minfer bench -npl …`: batched decoding, as llama.cpp's llama-batched-bench measures it
// (tools/batched-bench): for each PP × TG × B, B sequences prefilled together in one decode call,
// then TG steps that each decode one token of every sequence in one decode call.
import type { Context, Logits } from "@minfer/engine";
import { type OptionSpec, optionKey, type ParsedOptions } from "../args.js";
import { CliError } from "../errors.js";
import { type Loaded, loadModel, newContext } from "./load.js";
import { check, modelPath, runSettings } from "./options.js";

/** The most sequences one test may run: llama.cpp's LLAMA_MAX_SEQ (and `minfer serve -np`'s limit). */
export const MAX_PARALLEL = 256;

const DEFAULT_PP = 128;
const DEFAULT_TG = 128;

/** The batched mode's own flags (llama-batched-bench's spellings); -npl turns the mode on. */
export const batchedOptions: OptionSpec[] = [
  {
    flags: ["-npl"],
    kind: "string",
    metavar: "B,…",
    help: `batched mode (llama-batched-bench): parallel sequence counts, a comma list of integers in [1, ${MAX_PARALLEL}]; not with -p, -n or -d`,
  },
  {
    flags: ["-npp"],
    kind: "string",
    metavar: "N,…",
    help: `batched mode: prompt tokens per sequence, a comma list (default: ${DEFAULT_PP})`,
  },
  {
    flags: ["-ntg"],
    kind: "string",
    metavar: "N,…",
    help: `batched mode: generated tokens per sequence, a comma list (default: ${DEFAULT_TG})`,
  },
  {
    flags: ["-pps"],
    kind: "boolean",
    help: "batched mode: one prompt shared by all sequences, decoded once into sequence 0 and given to the others before tg (untimed, as llama-batched-bench)",
  },
  {
    flags: ["-kvu", "--kv-unified"],
    kind: "boolean",
    help: "batched mode: one KV cache shared by all sequences, attended through a mask (llama.cpp's -kvu); default: each sequence its own region of PP+TG cells, as `minfer serve` and llama.cpp's default",
  },
];

/** One PP × TG × B combination. */
export interface BatchedTest {
  /** Prompt tokens per sequence. */
  readonly pp: number;
  /** Generated tokens per sequence. */
  readonly tg: number;
  /** Parallel sequences (B). */
  readonly pl: number;
}

/** How the KV cache is laid out and whether the prompt is shared (llama-batched-bench's -pps, -kvu). */
export interface BatchedMode {
  readonly shared: boolean;
  /** The context was made with kvUnified (one cache, masks); else one region per sequence. */
  readonly unified: boolean;
}

/** What the decode calls of one phase did, as the engine reported it. */
export interface PhaseInfo {
  /** decode() calls. */
  calls: number;
  /** Tokens of each call (the distinct sizes, in order of first use). */
  sizes: number[];
  /** Micro-batches all calls ran (Context.lastTiming.ubatches summed). */
  ubatches: number;
  /** Logits rows each call returned (the distinct counts). */
  rows: number[];
}

/** One timed run of a test. */
export interface BatchedRun {
  /** Seconds of the prompt phase (all B prompts, or the one shared prompt). */
  readonly tPp: number;
  /** Seconds of the TG steps. */
  readonly tTg: number;
  /** KV cells in use after the last step (Context.used(): shared cells count once). */
  readonly nKv: number;
  readonly pp: PhaseInfo;
  readonly tg: PhaseInfo;
}

/** Deterministic token ids spread over the vocabulary (what llama-batched-bench draws at random). */
function tokenAt(i: number, seq: number, salt: number, nVocab: number): number {
  return (i * 7919 + seq * 15485863 + salt * 104729 + 1) % nVocab;
}

function phase(): PhaseInfo {
  return { calls: 0, sizes: [], ubatches: 0, rows: [] };
}

function note(p: PhaseInfo, ctx: Context, size: number, logits: Logits): void {
  p.calls++;
  if (!p.sizes.includes(size)) p.sizes.push(size);
  p.ubatches += ctx.lastTiming.ubatches;
  if (!p.rows.includes(logits.count)) p.rows.push(logits.count);
}

/**
 * The KV cells a test needs, as llama-batched-bench counts them (its N_KV): B·(PP+TG), or with a
 * shared prompt in one unified cache PP + B·TG (the prompt's cells are shared, not copied).
 */
export function cellsNeeded(t: BatchedTest, mode: BatchedMode): number {
  return mode.shared ? (mode.unified ? t.pp : t.pl * t.pp) + t.pl * t.tg : t.pl * (t.pp + t.tg);
}

/**
 * One run of a test on `ctx` (made with nSeqMax ≥ B and room for {@link cellsNeeded}): clears the
 * cache; decodes the B prompts of PP tokens (or the shared one into sequence 0) in one decode call,
 * with the logits of each sequence's last token; with a shared prompt gives it to sequences 1…B-1
 * (seqShare in a unified cache, seqClone into each one's region otherwise; untimed); then TG steps,
 * each one decode call of B tokens (one per sequence) with the logits of all B.
 */
export async function batchedRun(
  ctx: Context,
  t: BatchedTest,
  mode: BatchedMode,
  salt = 0,
): Promise<BatchedRun> {
  const nVocab = ctx.model.hparams.nVocab;
  const prompts = mode.shared ? 1 : t.pl;
  const tokens = new Int32Array(prompts * t.pp);
  const seq = new Int32Array(prompts * t.pp);
  for (let j = 0; j < prompts; j++)
    for (let i = 0; i < t.pp; i++) {
      tokens[j * t.pp + i] = tokenAt(i, j, salt, nVocab);
      seq[j * t.pp + i] = j;
    }
  const pp = phase();
  const tg = phase();
  ctx.clear();
  const t0 = performance.now();
  note(pp, ctx, tokens.length, await ctx.decode({ tokens, seq, logits: "last" }));
  const t1 = performance.now();
  if (mode.shared)
    for (let j = 1; j < t.pl; j++) {
      if (mode.unified) ctx.seqShare(0, j);
      else await ctx.seqClone(0, j, t.pp);
    }
  const seqs = Int32Array.from({ length: t.pl }, (_, j) => j);
  const step = new Int32Array(t.pl);
  const t2 = performance.now();
  for (let i = 0; i < t.tg; i++) {
    for (let j = 0; j < t.pl; j++) step[j] = tokenAt(t.pp + i, j, salt, nVocab);
    note(tg, ctx, t.pl, await ctx.decode({ tokens: step, seq: seqs, logits: "all" }));
  }
  const t3 = performance.now();
  return { tPp: (t1 - t0) / 1000, tTg: (t3 - t2) / 1000, nKv: ctx.used(), pp, tg };
}

/** One test's result, with llama-batched-bench's `--output-format jsonl` field names (and a few more). */
export interface BatchedResult {
  n_kv_max: number;
  n_batch: number;
  n_ubatch: number;
  flash_attn: number;
  is_pp_shared: number;
  n_gpu_layers: number;
  n_threads: number;
  n_threads_batch: number;
  pp: number;
  tg: number;
  pl: number;
  n_kv: number;
  /** Median seconds over the -r runs (t: t_pp + t_tg); the speeds are tokens / these times. */
  t_pp: number;
  speed_pp: number;
  t_tg: number;
  speed_tg: number;
  t: number;
  speed: number;
  // minfer's additions:
  kv_unified: number;
  samples_t_pp: number[];
  samples_t_tg: number[];
}

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** A result from the runs of one test; speeds as llama-batched-bench computes them. */
export function summarize(
  t: BatchedTest,
  mode: BatchedMode,
  runs: readonly BatchedRun[],
  info: Pick<BatchedResult, "n_kv_max" | "n_batch" | "n_ubatch" | "n_gpu_layers" | "n_threads">,
): BatchedResult {
  const tPp = median(runs.map((r) => r.tPp));
  const tTg = median(runs.map((r) => r.tTg));
  const total = tPp + tTg; // as llama-batched-bench's T, so that T = T_PP + T_TG in the table
  const ppTokens = mode.shared ? t.pp : t.pl * t.pp;
  return {
    ...info,
    flash_attn: 0,
    is_pp_shared: mode.shared ? 1 : 0,
    n_threads_batch: info.n_threads,
    pp: t.pp,
    tg: t.tg,
    pl: t.pl,
    n_kv: runs[runs.length - 1]!.nKv,
    t_pp: tPp,
    speed_pp: ppTokens / tPp,
    t_tg: tTg,
    speed_tg: (t.pl * t.tg) / tTg,
    t: total,
    speed: (ppTokens + t.pl * t.tg) / total,
    kv_unified: mode.unified ? 1 : 0,
    samples_t_pp: runs.map((r) => r.tPp),
    samples_t_tg: runs.map((r) => r.tTg),
  };
}

/** llama-batched-bench's markdown table. */
export function batchedTable(results: readonly BatchedResult[]): string {
  const head = ["PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s"];
  const width = [6, 6, 4, 6, 8, 8, 8, 8, 8, 8];
  const line = (cells: string[]) => `|${cells.map((c, i) => ` ${c.padStart(width[i]!)} `).join("|")}|`;
  const rule = `|${width.map((w) => "-".repeat(w + 2)).join("|")}|`;
  const rows = results.map((r) =>
    line([
      String(r.pp),
      String(r.tg),
      String(r.pl),
      String(r.n_kv),
      r.t_pp.toFixed(3),
      r.speed_pp.toFixed(2),
      r.t_tg.toFixed(3),
      r.speed_tg.toFixed(2),
      r.t.toFixed(3),
      r.speed.toFixed(2),
    ]),
  );
  return [line(head), rule, ...rows].join("\n");
}

/** A comma list of integers in [min, max] (-npl 1,4,16). */
export function parseIntList(flag: string, raw: string, min: number, max: number): number[] {
  const what = `a comma list of integers in [${min}, ${max}]`;
  const parts = raw.split(",");
  const values = parts.map((p) => (/^\s*\d+\s*$/.test(p) ? Number(p) : Number.NaN));
  check(
    values.every((v) => Number.isSafeInteger(v) && v >= min && v <= max),
    flag,
    what,
    JSON.stringify(raw),
  );
  return values;
}

/** Whether the parsed options ask for the batched mode (any of its flags). */
export function isBatched(options: ParsedOptions): boolean {
  return ["npl", "npp", "ntg", "pps", "kvUnified"].some((k) => options[k] !== undefined);
}

/** The batched mode of `minfer bench` (options already parsed by bench's spec). */
export async function benchBatched(options: ParsedOptions): Promise<number> {
  if (options.npl === undefined) {
    const given = batchedOptions.filter((o) => o.flags[0] !== "-npl" && options[optionKey(o)] !== undefined);
    throw new CliError(
      "INVALID_ARGUMENT",
      `${given.map((o) => o.flags[0]).join(", ")} belong${given.length === 1 ? "s" : ""} to the batched mode: give -npl too`,
    );
  }
  const mixed = [
    ["-p", options.nPrompt],
    ["-n", options.nGen],
    ["-d", options.nDepth],
  ].filter(([, v]) => v !== undefined);
  if (mixed.length > 0)
    throw new CliError(
      "INVALID_ARGUMENT",
      `-npl (batched mode) cannot be combined with ${mixed.map(([f]) => f).join(", ")}: give -npp and -ntg for its prompt and generated tokens`,
    );
  const path = modelPath(options);
  const pls = parseIntList("-npl", options.npl as string, 1, MAX_PARALLEL);
  const pps = parseIntList("-npp", (options.npp as string | undefined) ?? `${DEFAULT_PP}`, 1, 2 ** 20);
  const tgs = parseIntList("-ntg", (options.ntg as string | undefined) ?? `${DEFAULT_TG}`, 1, 2 ** 20);
  const reps = (options.repetitions as number | undefined) ?? 3;
  check(reps >= 1, "-r", "a positive integer", reps);
  const mode: BatchedMode = { shared: Boolean(options.pps), unified: Boolean(options.kvUnified) };
  const verbose = Boolean(options.verbose);
  const tests: BatchedTest[] = [];
  for (const pp of pps) for (const tg of tgs) for (const pl of pls) tests.push({ pp, tg, pl });
  // Every test fits: one region of PP+TG cells per sequence (nCtx a multiple of nSeqMax), or in
  // one unified cache the most cells a test needs.
  const nSeqMax = Math.max(...pls);
  const nCtx = mode.unified
    ? Math.max(...tests.map((t) => cellsNeeded(t, mode)))
    : nSeqMax * Math.max(...tests.map((t) => t.pp + t.tg));
  check(nCtx <= 2 ** 31 - 1, "-npl/-npp/-ntg", "tests whose KV cells fit a context", nCtx);
  const settings = { ...runSettings(options), nCtx, nSeqMax };
  const loaded = await loadModel(path, settings, verbose);
  let ctx: Context | undefined;
  try {
    const train = loaded.model.hparams.nCtxTrain;
    const longest = Math.max(...tests.map((t) => t.pp + t.tg));
    if (longest > train)
      process.stderr.write(
        `warning: sequences reach position ${longest - 1}, past the model's training context of ${train}\n`,
      );
    ctx = newContext(loaded.model, settings, { nCtx, nSeqMax, kvUnified: mode.unified });
    const results = await runTests(loaded, ctx, tests, mode, reps, verbose);
    if (options.json) process.stdout.write(results.map((r) => `${JSON.stringify(r)}\n`).join(""));
    else
      process.stdout.write(
        `n_kv_max = ${ctx.nCtx}, n_ubatch = ${ctx.nUbatch}, is_pp_shared = ${mode.shared ? 1 : 0}, ` +
          `kv_unified = ${mode.unified ? 1 : 0}, n_gpu_layers = ${loaded.model.placement.offloadedLayers}, ` +
          `n_threads = ${loaded.runtime.threads}, times: median of ${reps}\n\n${batchedTable(results)}\n`,
      );
    return 0;
  } finally {
    ctx?.dispose();
    loaded.close();
  }
}

function describePhase(p: PhaseInfo): string {
  return `${p.calls} decode call${p.calls === 1 ? "" : "s"} of ${p.sizes.join("/")} tokens, ${p.ubatches} micro-batches, ${p.rows.join("/")} logits rows each`;
}

async function runTests(
  loaded: Loaded,
  ctx: Context,
  tests: readonly BatchedTest[],
  mode: BatchedMode,
  reps: number,
  verbose: boolean,
): Promise<BatchedResult[]> {
  const info = {
    n_kv_max: ctx.nCtx,
    n_batch: ctx.nUbatch,
    n_ubatch: ctx.nUbatch,
    n_gpu_layers: loaded.model.placement.offloadedLayers,
    n_threads: loaded.runtime.threads,
  };
  const results: BatchedResult[] = [];
  for (const t of tests) {
    await batchedRun(ctx, t, mode, 0); // warmup: builds and prepares every graph the test steps
    const runs: BatchedRun[] = [];
    for (let r = 1; r <= reps; r++) runs.push(await batchedRun(ctx, t, mode, r));
    ctx.clear();
    const res = summarize(t, mode, runs, info);
    results.push(res);
    const name = `pp ${t.pp}, tg ${t.tg}, B ${t.pl}`;
    process.stderr.write(
      `${name}: S_PP ${res.speed_pp.toFixed(2)} t/s, S_TG ${res.speed_tg.toFixed(2)} t/s, N_KV ${res.n_kv}\n`,
    );
    if (verbose) {
      const last = runs[runs.length - 1]!;
      process.stderr.write(`${name}: pp: ${describePhase(last.pp)}\n`);
      process.stderr.write(`${name}: tg: ${describePhase(last.tg)}\n`);
    }
  }
  return results;
}
