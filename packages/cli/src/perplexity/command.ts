// `minfer perplexity`: llama.cpp's llama-perplexity for minfer — perplexity over a text file, the
// base-logits file for --kl-divergence-base, and the KL divergence statistics against one.
import { readFile } from "node:fs/promises";
import type { Context } from "@minfer/engine";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { describeAssignment, describeContext, type Loaded, loadModel, newContext } from "../run/load.js";
import { check, contextOptions, modelOption, type RunSettings, runSettings } from "../run/options.js";
import { onInterrupt } from "../run/signal.js";
import { type ChunkPlan, fileChunks, planChunks } from "./chunks.js";
import { PerplexityError } from "./errors.js";
import { runKld, runPerplexity } from "./evaluate.js";
import { LogitsFileReader, LogitsFileWriter } from "./logits-file.js";
import { chunkPpl, finalEstimate, KLD_CHUNK_HEADER, kldChunkLine, kldSummaryLines } from "./report.js";

/** llama-perplexity's default context per chunk. */
export const DEFAULT_PERPLEXITY_CTX = 512;

export const perplexityOptions: OptionSpec[] = [
  { ...modelOption, help: "the GGUF model" },
  {
    flags: ["-f", "--file"],
    kind: "string",
    metavar: "TEXTFILE",
    help: "the text (one trailing newline dropped, as llama.cpp reads -f); not needed with --kl-divergence",
  },
  {
    flags: ["-c", "--ctx-size"],
    kind: "integer",
    metavar: "N",
    help: `tokens per chunk (default: ${DEFAULT_PERPLEXITY_CTX}, as llama-perplexity; 0 = the model's training context; with --kl-divergence: the base file's)`,
  },
  {
    flags: ["--chunks"],
    kind: "integer",
    metavar: "N",
    help: "most chunks to evaluate; -1 = all (default: -1)",
  },
  ...contextOptions.filter((o) => o.flags[0] !== "-c"),
  {
    flags: ["--kl-divergence-base", "--save-all-logits"],
    kind: "string",
    metavar: "FILE",
    help: "llama.cpp's base-logits file: written (with -f), or read with --kl-divergence",
  },
  {
    flags: ["--kl-divergence"],
    kind: "boolean",
    help: "compare with the base file: KL divergence, PPL(Q) against PPL(base), Δp, same top p (tokens come from the file)",
  },
  { flags: ["--verbose"], kind: "boolean", help: "print backend diagnostics and the context to stderr" },
];

interface Options {
  readonly model: string;
  readonly text?: string;
  readonly base?: string;
  readonly kld: boolean;
  readonly maxChunks?: number;
  readonly settings: RunSettings;
  readonly verbose: boolean;
}

function parse(argv: string[]): Options {
  const { options, positionals } = parseArgs(argv, perplexityOptions);
  expectPositionals(positionals, []);
  if (options.model === undefined) throw new CliError("MISSING_ARGUMENT", "-m FILE is required");
  const kld = Boolean(options.klDivergence);
  const base = options.klDivergenceBase as string | undefined;
  if (kld && base === undefined)
    throw new CliError(
      "MISSING_ARGUMENT",
      "--kl-divergence needs --kl-divergence-base FILE (the base logits)",
    );
  if (!kld && options.file === undefined)
    throw new CliError("MISSING_ARGUMENT", "-f TEXTFILE is required (the text to evaluate)");
  const chunks = options.chunks as number | undefined;
  if (chunks !== undefined)
    check(chunks === -1 || chunks >= 1, "--chunks", "-1 (all) or a positive integer", chunks);
  return {
    model: options.model as string,
    ...(options.file !== undefined ? { text: options.file as string } : {}),
    ...(base !== undefined ? { base } : {}),
    kld,
    ...(chunks !== undefined && chunks > 0 ? { maxChunks: chunks } : {}),
    settings: runSettings(options),
    verbose: Boolean(options.verbose),
  };
}

/** The text as llama.cpp's -f reads it: the whole file, one trailing newline dropped. */
export async function readText(path: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    throw new PerplexityError(
      "MISSING_FILE",
      `-f: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? String(e)})`,
    );
  }
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}

/** The vocabulary's BOS when it adds one to every text; refuses one that appends EOS (llama.cpp asserts against it). */
function bosOf(loaded: Loaded): number | undefined {
  const { vocab } = loaded.model.tokenizer;
  if (vocab.addEos)
    throw new PerplexityError(
      "UNSUPPORTED_VOCAB",
      "the vocabulary appends EOS to every text (tokenizer.ggml.add_eos_token), which perplexity cannot score (llama-perplexity refuses it too)",
    );
  return vocab.addBos ? vocab.special.bos : undefined;
}

function contextFor(loaded: Loaded, settings: RunSettings, plan: ChunkPlan, verbose: boolean): Context {
  const hp = loaded.model.hparams;
  if (plan.nCtx > hp.nCtxTrain)
    process.stderr.write(
      `minfer: warning: the model was trained on a context of ${hp.nCtxTrain} tokens (-c ${plan.nCtx} asked)\n`,
    );
  const ctx = newContext(loaded.model, { ...settings, nCtx: plan.nCtx });
  if (verbose) {
    process.stderr.write(`${describeContext(ctx)}\n`);
    for (const line of describeAssignment(ctx, true))
      if (!line.startsWith("warning")) process.stderr.write(`${line}\n`);
  }
  return ctx;
}

function chunkNote(plan: ChunkPlan, ctx: Context, what: string): string {
  return `perplexity: ${what} over ${plan.nChunk} chunks, n_ctx=${plan.nCtx}, micro-batch ${ctx.nUbatch}, ${plan.scored} tokens scored per chunk\n`;
}

/** The passes' pace, after the first one as llama.cpp prints it. */
function passNote(t0: number, plan: ChunkPlan): string {
  const s = (performance.now() - t0) / 1000;
  return `perplexity: ${s.toFixed(2)} seconds per pass - ETA ${((s * plan.nChunk) / 60).toFixed(2)} minutes\n`;
}

async function perplexityMode(o: Options, loaded: Loaded, signal: AbortSignal): Promise<void> {
  const text = await readText(o.text!);
  const bos = bosOf(loaded);
  const hp = loaded.model.hparams;
  const nCtx = o.settings.nCtx === undefined ? DEFAULT_PERPLEXITY_CTX : o.settings.nCtx || hp.nCtxTrain;
  check(nCtx >= 2, "-c", "0 or an integer >= 2", nCtx);
  process.stderr.write("perplexity: tokenizing the input ..\n");
  const tokens = Int32Array.from(
    await loaded.model.tokenizer.encodeAsync(text, { addSpecial: true, parseSpecial: false }),
  );
  const plan = planChunks(tokens.length, nCtx, o.maxChunks);
  const ctx = contextFor(loaded, o.settings, plan, o.verbose);
  const writer = o.base
    ? await LogitsFileWriter.create(o.base, {
        nCtx,
        nVocab: hp.nVocab,
        nChunk: plan.nChunk,
        tokens,
      })
    : undefined;
  if (writer) process.stderr.write(`perplexity: saving all logits to ${o.base}\n`);
  try {
    process.stderr.write(
      `perplexity: ${tokens.length} tokens\n${chunkNote(plan, ctx, "calculating perplexity")}`,
    );
    const t0 = performance.now();
    const estimate = await runPerplexity(ctx, tokens, plan, {
      ...(bos !== undefined ? { bos } : {}),
      ...(writer ? { writer } : {}),
      signal,
      onChunk: (i, ppl) => {
        if (i === 0) process.stderr.write(passNote(t0, plan));
        process.stdout.write(chunkPpl(i, ppl));
      },
    });
    process.stdout.write(`\n${finalEstimate(estimate)}\n`);
  } finally {
    await writer?.close();
    ctx.dispose();
  }
}

async function kldMode(
  o: Options,
  reader: LogitsFileReader,
  loaded: Loaded,
  signal: AbortSignal,
): Promise<void> {
  const { header } = reader;
  const hp = loaded.model.hparams;
  if (header.nVocab !== hp.nVocab)
    throw new PerplexityError(
      "VOCAB_MISMATCH",
      `${o.base} was computed with a vocabulary of ${header.nVocab} tokens; ${o.model} has ${hp.nVocab}: compare models that share a tokenizer`,
    );
  if (o.settings.nCtx !== undefined) {
    const asked = o.settings.nCtx || hp.nCtxTrain;
    if (asked !== header.nCtx)
      throw new PerplexityError(
        "CTX_MISMATCH",
        `${o.base} was computed with -c ${header.nCtx}, not ${asked}: give -c ${header.nCtx} or leave -c out`,
      );
  }
  if (o.text !== undefined)
    process.stderr.write(`minfer: note: -f ${o.text} is not read: the tokens come from ${o.base}\n`);
  const bos = bosOf(loaded);
  const plan = fileChunks(header.nCtx, header.nChunk, o.maxChunks);
  const ctx = contextFor(loaded, o.settings, plan, o.verbose);
  try {
    process.stderr.write(chunkNote(plan, ctx, "computing KL divergence"));
    const t0 = performance.now();
    const acc = await runKld(ctx, reader, plan, {
      ...(bos !== undefined ? { bos } : {}),
      signal,
      onChunk: (i, a) => {
        if (i === 0) process.stderr.write(passNote(t0, plan));
        if (i === 0) process.stdout.write(`\n${KLD_CHUNK_HEADER}\n`);
        process.stdout.write(`${kldChunkLine(i, a.chunkStats())}\n`);
      },
    });
    process.stdout.write("\n");
    const summary = acc.summary();
    if (summary) process.stdout.write(`${kldSummaryLines(summary).join("\n")}\n`);
    else
      process.stderr.write(
        `minfer: ${acc.count} tokens scored: too few for the statistics (100 needed, as llama.cpp asks)\n`,
      );
  } finally {
    ctx.dispose();
  }
}

/** `minfer perplexity`: results on stdout (as llama-perplexity prints them), progress on stderr. */
export async function perplexityCommand(argv: string[]): Promise<number> {
  const o = parse(argv);
  const abort = new AbortController();
  const stopListening = onInterrupt(() => abort.abort());
  let reader: LogitsFileReader | undefined;
  let loaded: Loaded | undefined;
  try {
    // The base file is checked before the model loads, so a bad file fails at once.
    if (o.kld) reader = await LogitsFileReader.open(o.base!);
    loaded = await loadModel(o.model, o.settings, o.verbose);
    if (reader) await kldMode(o, reader, loaded, abort.signal);
    else await perplexityMode(o, loaded, abort.signal);
    return 0;
  } catch (e) {
    if (abort.signal.aborted) {
      process.stderr.write("\nminfer: interrupted\n");
      return 130;
    }
    if (e instanceof PerplexityError) {
      process.stderr.write(`minfer: error [${e.code}]: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    stopListening();
    await reader?.close();
    loaded?.close();
  }
}
