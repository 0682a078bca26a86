import { readFile } from "node:fs/promises";
import { generate } from "@minfer/engine";
import type { Sampler } from "@minfer/sampler";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { describeAssignment, describeContext, loadModel, newContext } from "./load.js";
import {
  check,
  contextOptions,
  modelOption,
  modelPath,
  runSettings,
  samplerSettings,
  samplingOptions,
} from "./options.js";
import { PromptCache, promptCacheOptions } from "./prompt-cache.js";
import { chainOptions, makeSampler } from "./sampling.js";
import { onInterrupt } from "./signal.js";
import {
  describeSpeculation,
  loadDraft,
  makeDrafter,
  specSettings,
  speculativeFor,
  speculativeOptions,
} from "./speculative.js";
import { StepTimer, timingSummary } from "./timings.js";

export const runOptions: OptionSpec[] = [
  modelOption,
  { flags: ["-p", "--prompt"], kind: "string", metavar: "TEXT", help: "the prompt" },
  { flags: ["-f", "--file"], kind: "string", metavar: "PROMPTFILE", help: "read the prompt from a file" },
  {
    flags: ["-n", "--n-predict"],
    kind: "integer",
    metavar: "N",
    help: "most tokens to generate; -1 = until end of generation or a full context (default: -1)",
  },
  ...samplingOptions,
  ...chainOptions,
  ...contextOptions,
  ...speculativeOptions,
  {
    flags: ["--stop"],
    kind: "string",
    metavar: "TEXT",
    repeat: true,
    help: "stop when the text contains TEXT",
  },
  { flags: ["--ignore-eos"], kind: "boolean", help: "do not stop at end-of-generation tokens" },
  ...promptCacheOptions,
  {
    flags: ["--ids"],
    kind: "boolean",
    help: "print the generated token ids as one JSON array instead of text",
  },
  {
    flags: ["--verbose"],
    kind: "boolean",
    help: "print backend diagnostics, hyperparameters and per-token timings (JS overhead) to stderr",
  },
];

/** `minfer run`: only the continuation goes to stdout, streamed; everything else to stderr. */
export async function runCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, runOptions);
  expectPositionals(positionals, []);
  const path = modelPath(options, true);
  if ((options.prompt === undefined) === (options.file === undefined))
    throw new CliError("MISSING_ARGUMENT", "give the prompt with exactly one of -p TEXT or -f PROMPTFILE");
  const n = options.nPredict as number | undefined;
  if (n !== undefined) check(n >= -1, "-n", "-1 or an integer >= 0", n);
  const settings = runSettings(options);
  const spec = specSettings(options);
  const basic = samplerSettings(options);
  const verbose = Boolean(options.verbose);
  const prompt =
    options.prompt !== undefined
      ? (options.prompt as string)
      : await readFile(options.file as string, "utf8");

  const loaded = await loadModel(path, settings, verbose);
  let sampler: Sampler;
  try {
    sampler = await makeSampler(options, basic, loaded.model);
  } catch (e) {
    loaded.close();
    throw e;
  }
  const ctx = newContext(loaded.model, settings);
  const stderr = process.stderr;
  let cache: PromptCache | undefined;
  let draftModel: Awaited<ReturnType<typeof loadDraft>>;
  let draftCtx: ReturnType<typeof newContext> | undefined;
  const closeDraft = () => {
    draftCtx?.dispose();
    draftModel?.dispose();
  };
  try {
    cache = await PromptCache.open(options, ctx);
    if (spec) {
      draftModel = await loadDraft(spec, loaded);
      // (the draft's context holds what the main one does, and its drafts)
      if (draftModel) draftCtx = newContext(draftModel, { ...settings, nCtx: ctx.nCtx });
    }
  } catch (e) {
    closeDraft();
    ctx.dispose();
    loaded.close();
    throw e;
  }
  if (verbose) {
    stderr.write(`${describeContext(ctx)}\n`);
    for (const line of describeAssignment(ctx, true))
      if (!line.startsWith("warning")) stderr.write(`${line}\n`);
    const o = sampler.options;
    stderr.write(`sampler: temp ${o.temperature}, top-k ${o.topK}, top-p ${o.topP}, seed ${o.seed}\n`);
  }
  const abort = new AbortController();
  const stopListening = onInterrupt(() => abort.abort());
  try {
    // (tokenized here, as generate would, so that the cache can say how much of it it held)
    const ids = ctx.model.tokenizer.encode(prompt, { addSpecial: true, parseSpecial: true });
    if (cache) stderr.write(`${cache.describe(ids)}\n`);
    const g = generate(ctx, ids, {
      sampler,
      ...(n !== undefined && n >= 0 ? { maxTokens: n } : {}),
      stop: (options.stop as string[] | undefined) ?? [],
      ignoreEog: Boolean(options.ignoreEos),
      signal: abort.signal,
      // (the prompt's state saved once it is evaluated, as llama.cpp saves it)
      ...(cache ? { onPrompt: () => cache.savePrompt() } : {}),
      ...(spec ? { speculative: speculativeFor(spec, makeDrafter(spec, draftCtx)) } : {}),
    });
    const timer = verbose ? new StepTimer(ctx) : undefined;
    timer?.start();
    let index = 0;
    let last = "";
    for await (const piece of g) {
      if (!options.ids && piece.text) {
        process.stdout.write(piece.text);
        last = piece.text;
      }
      if (piece.token !== undefined) timer?.token(index++, piece.token);
    }
    // The text ends its line, so what follows (the timings, a shell prompt) starts on its own.
    if (last !== "" && !last.endsWith("\n")) process.stdout.write("\n");
    if (options.ids) process.stdout.write(`${JSON.stringify(g.tokens)}\n`);
    if (cache) await cache.saveAll();
    if (timer) stderr.write(`${timer.summary()}\n`);
    if (g.finishReason === "context")
      stderr.write(`\nminfer: the context is full (${ctx.nCtx} tokens); generation stopped (raise -c)\n`);
    else if (g.finishReason === "abort") stderr.write("\nminfer: interrupted\n");
    else if (verbose) stderr.write(`finish: ${g.finishReason}\n`);
    stderr.write(`${timingSummary(g.timings!)}\n`);
    if (g.timings?.speculative)
      stderr.write(`${describeSpeculation(g.timings.speculative, g.tokens.length)}\n`);
    return g.finishReason === "abort" ? 130 : 0;
  } finally {
    stopListening();
    closeDraft();
    ctx.dispose();
    loaded.close();
  }
}
