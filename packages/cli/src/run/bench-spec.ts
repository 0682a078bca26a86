// `minfer bench -md FILE` / `--spec-type ngram`: generation speed with speculative decoding beside
// the same generation without it (greedy, the same prompt and token count), interleaved runs,
// medians; and the acceptance the drafts met. llama.cpp's examples/speculative-simple reports the
// same quantities (decoded t/s, n_drafted, n_accept).
import { readFile } from "node:fs/promises";
import { type Context, generate, type SpeculativeOptions, type SpeculativeStats } from "@minfer/engine";
import type { OptionSpec, ParsedOptions } from "../args.js";
import { CliError } from "../errors.js";
import { median } from "./bench-batched.js";
import { humanCount, loadModel, modelSize, newContext, weightTypes } from "./load.js";
import { check, modelPath, runSettings } from "./options.js";
import { loadDraft, makeDrafter, type SpecSettings, specSettings, speculativeFor } from "./speculative.js";

/** The prompt of the speculative test (bench's -p is the pp test's token count). */
export const specBenchOptions: OptionSpec[] = [
  {
    flags: ["--spec-prompt"],
    kind: "string",
    metavar: "TEXT",
    help: 'speculative mode (-md or --spec-type): the prompt generated from (default: "Once upon a time")',
  },
  {
    flags: ["--spec-prompt-file"],
    kind: "string",
    metavar: "FILE",
    help: "speculative mode: read the prompt from FILE",
  },
];

/** Whether bench runs the speculative test (a draft model or a speculative type given). */
export function isSpeculative(options: ParsedOptions): boolean {
  return specSettings(options) !== undefined;
}

/** One speculative bench result (JSON). */
export interface SpecBenchResult {
  model_filename: string;
  model_type: string;
  draft_filename: string | null;
  spec_type: string;
  backend: string;
  n_threads: number;
  n_prompt: number;
  n_gen: number;
  /** Median tokens per second of generation without / with speculation. */
  plain_ts: number;
  spec_ts: number;
  speedup: number;
  /** Over all speculative runs: drafted and accepted tokens, verifications. */
  n_drafted: number;
  n_accept: number;
  accept_rate: number;
  tokens_per_verify: number;
  /** Whether every speculative run gave the tokens of the plain run (greedy). */
  identical: boolean;
  samples_plain_ts: number[];
  samples_spec_ts: number[];
}

async function once(
  ctx: Context,
  ids: number[],
  n: number,
  speculative: SpeculativeOptions | undefined,
): Promise<{ ts: number; tokens: number[]; stats: SpeculativeStats | undefined }> {
  ctx.clear();
  const g = generate(ctx, ids, {
    maxTokens: n,
    ignoreEog: true,
    sampler: { temperature: 0 },
    reusePrefix: false,
    ...(speculative ? { speculative } : {}),
  });
  await g.complete();
  const t = g.timings!;
  // generated tokens after the first (sampled from the prompt's logits) over the generation's time
  return { ts: (1000 * t.generatedTokens) / t.generateMs, tokens: g.tokens, stats: t.speculative };
}

/** The speculative bench: `spec` from specSettings (given). */
export async function benchSpeculative(options: ParsedOptions): Promise<number> {
  const spec = specSettings(options) as SpecSettings;
  const path = modelPath(options);
  const nGen = (options.nGen as number | undefined) ?? 128;
  const reps = (options.repetitions as number | undefined) ?? 3;
  check(nGen >= 1, "-n", "an integer >= 1 (the generated tokens)", nGen);
  check(reps >= 1, "-r", "a positive integer", reps);
  for (const flag of ["nPrompt", "nDepth"] as const)
    if (options[flag] !== undefined)
      throw new CliError(
        "INVALID_ARGUMENT",
        `${flag === "nPrompt" ? "-p" : "-d"} is for the pp/tg tests; the speculative test generates -n tokens from --spec-prompt`,
      );
  if (options.specPrompt !== undefined && options.specPromptFile !== undefined)
    throw new CliError("INVALID_ARGUMENT", "give at most one of --spec-prompt and --spec-prompt-file");
  const prompt =
    options.specPromptFile !== undefined
      ? await readFile(options.specPromptFile as string, "utf8")
      : ((options.specPrompt as string | undefined) ?? "Once upon a time");
  const settings = runSettings(options);
  const loaded = await loadModel(path, settings, Boolean(options.verbose));
  let draft: Awaited<ReturnType<typeof loadDraft>>;
  let ctx: Context | undefined;
  let draftCtx: Context | undefined;
  try {
    draft = await loadDraft(spec, loaded);
    const ids = loaded.model.tokenizer.encode(prompt, { addSpecial: true, parseSpecial: true });
    const nCtx = ids.length + nGen + spec.draftMax + 1;
    ctx = newContext(loaded.model, settings, { nCtx });
    if (draft) draftCtx = newContext(draft, settings, { nCtx });
    const speculative = () => speculativeFor(spec, makeDrafter(spec, draftCtx));
    // warmup of both paths (the speculative one decodes batches of 2 to draftMax + 1 tokens: their graphs)
    await once(ctx, ids, nGen, undefined);
    await once(ctx, ids, nGen, speculative());
    const plain: number[] = [];
    const sped: number[] = [];
    let drafted = 0;
    let accepted = 0;
    let steps = 0;
    let generated = 0;
    let identical = true;
    for (let r = 0; r < reps; r++) {
      // interleaved, alternating which goes first
      const order = r % 2 === 0 ? [false, true] : [true, false];
      let ref: number[] | undefined;
      let got: number[] | undefined;
      for (const useSpec of order) {
        const run = await once(ctx, ids, nGen, useSpec ? speculative() : undefined);
        if (useSpec) {
          sped.push(run.ts);
          got = run.tokens;
          drafted += run.stats!.drafted;
          accepted += run.stats!.accepted;
          steps += run.stats!.steps;
          generated += run.tokens.length;
        } else {
          plain.push(run.ts);
          ref = run.tokens;
        }
      }
      if (ref!.join() !== got!.join()) identical = false;
    }
    const { params } = modelSize(loaded.model);
    const result: SpecBenchResult = {
      model_filename: loaded.model.path,
      model_type: `${loaded.model.hparams.arch} ${humanCount(params)} ${weightTypes(loaded.model)}`,
      draft_filename: draft?.path ?? null,
      spec_type: spec.type,
      backend: loaded.gpu
        ? `CUDA (${loaded.model.placement.offloadedLayers}/${loaded.model.hparams.nLayer} layers)`
        : "CPU",
      n_threads: loaded.runtime.threads,
      n_prompt: ids.length,
      n_gen: nGen,
      plain_ts: median(plain),
      spec_ts: median(sped),
      speedup: median(sped) / median(plain),
      n_drafted: drafted,
      n_accept: accepted,
      accept_rate: drafted > 0 ? accepted / drafted : 0,
      tokens_per_verify: generated / Math.max(1, steps),
      identical,
      samples_plain_ts: plain,
      samples_spec_ts: sped,
    };
    if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else process.stdout.write(`${specTable(result)}\n`);
    if (!identical)
      process.stderr.write(
        "warning: a speculative run's tokens differed from the plain run's (a near-tie decided differently by the batched verification's rounding)\n",
      );
    return 0;
  } finally {
    ctx?.dispose();
    draftCtx?.dispose();
    draft?.dispose();
    loaded.close();
  }
}

function specTable(r: SpecBenchResult): string {
  const head = [
    "model",
    "backend",
    "threads",
    "spec",
    "test",
    "t/s plain",
    "t/s spec",
    "speedup",
    "accept",
    "tok/verify",
  ];
  const row = [
    r.model_type,
    r.backend,
    String(r.n_threads),
    r.spec_type === "draft" ? `draft ${r.draft_filename?.split("/").pop()}` : "ngram",
    `tg${r.n_gen} (prompt ${r.n_prompt})`,
    r.plain_ts.toFixed(2),
    r.spec_ts.toFixed(2),
    `${r.speedup.toFixed(2)}x`,
    `${r.n_accept}/${r.n_drafted} (${(100 * r.accept_rate).toFixed(1)}%)`,
    r.tokens_per_verify.toFixed(2),
  ];
  const w = head.map((h, i) => Math.max(h.length, row[i]!.length));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(w[i]!)).join(" | ")} |`;
  return [line(head), `| ${w.map((n) => "-".repeat(n)).join(" | ")} |`, line(row)].join("\n");
}
