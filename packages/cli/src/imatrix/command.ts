// `minfer imatrix`: llama.cpp's llama-imatrix for minfer — the importance matrix of a model over a
// text (Σx² per input column of every weight product, see collectImatrix in @minfer/engine),
// written in llama-imatrix's GGUF format for `minfer gguf quantize --imatrix` or llama-quantize.
import { writeFile } from "node:fs/promises";
import { basename } from "node:path";
import { collectImatrix } from "@minfer/engine";
import { encodeImatrix } from "@minfer/gguf";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { readText } from "../perplexity/command.js";
import { PerplexityError } from "../perplexity/errors.js";
import { type Loaded, loadModel, newContext } from "../run/load.js";
import { check, contextOptions, modelOption, runSettings } from "../run/options.js";

/** llama-imatrix's default context per chunk. */
export const DEFAULT_IMATRIX_CTX = 512;

export const imatrixOptions: OptionSpec[] = [
  { ...modelOption, help: "the GGUF model (F16 or F32 for the matrix a quantizer should use)" },
  { flags: ["-f", "--file"], kind: "string", metavar: "TEXTFILE", help: "the text (calibration data)" },
  {
    flags: ["-o", "--output"],
    kind: "string",
    metavar: "FILE",
    help: "where the matrix goes (default: imatrix.gguf), in llama-imatrix's GGUF format",
  },
  {
    flags: ["-c", "--ctx-size"],
    kind: "integer",
    metavar: "N",
    help: `tokens per chunk (default: ${DEFAULT_IMATRIX_CTX}, as llama-imatrix)`,
  },
  { flags: ["--chunks"], kind: "integer", metavar: "N", help: "most chunks to use; -1 = all (default: -1)" },
  {
    flags: ["--process-output"],
    kind: "boolean",
    help: "also collect output.weight (left out by default, as llama-imatrix does)",
  },
  ...contextOptions.filter((o) => o.flags[0] !== "-c"),
];

function bosOf(loaded: Loaded): number | undefined {
  const { vocab } = loaded.model.tokenizer;
  return vocab.addBos ? vocab.special.bos : undefined;
}

/** `minfer imatrix`: progress on stderr, the running perplexity per chunk on stdout. */
export async function imatrixCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, imatrixOptions);
  expectPositionals(positionals, []);
  if (options.model === undefined) throw new CliError("MISSING_ARGUMENT", "-m FILE is required");
  if (options.file === undefined)
    throw new CliError("MISSING_ARGUMENT", "-f TEXTFILE is required (the text)");
  const chunks = options.chunks as number | undefined;
  if (chunks !== undefined)
    check(chunks === -1 || chunks >= 1, "--chunks", "-1 (all) or a positive integer", chunks);
  const nCtx = (options.ctxSize as number | undefined) ?? DEFAULT_IMATRIX_CTX;
  check(nCtx >= 16, "-c", "an integer >= 16", nCtx);
  const out = (options.output as string | undefined) ?? "imatrix.gguf";
  const textFile = options.file as string;
  const settings = runSettings(options);
  let loaded: Loaded | undefined;
  try {
    const text = await readText(textFile);
    loaded = await loadModel(options.model as string, settings, false);
    const model = loaded.model;
    process.stderr.write("imatrix: tokenizing the input ..\n");
    const tokens = Int32Array.from(
      await model.tokenizer.encodeAsync(text, { addSpecial: true, parseSpecial: false }),
    );
    if (tokens.length < 2 * nCtx)
      throw new PerplexityError(
        "TEXT_TOO_SHORT",
        `the text tokenizes to ${tokens.length} tokens; a context of ${nCtx} needs at least ${2 * nCtx} ` +
          `(two chunks): give a longer text or a smaller -c`,
      );
    const bos = bosOf(loaded);
    const t0 = performance.now();
    const result = await collectImatrix(model, tokens, {
      chunkSize: nCtx,
      ...(chunks !== undefined && chunks > 0 ? { chunks } : {}),
      processOutput: Boolean(options.processOutput),
      ...(bos !== undefined ? { bos } : {}),
      newContext: (o) => newContext(model, { ...settings, nCtx }, o),
      onChunk: (done, total, ppl) => {
        if (done === 1) {
          const s = (performance.now() - t0) / 1000;
          process.stderr.write(
            `imatrix: ${tokens.length} tokens, ${total} chunks of ${nCtx}: ${s.toFixed(2)} seconds per pass - ETA ${((s * total) / 60).toFixed(2)} minutes\n`,
          );
        }
        process.stdout.write(`[${done}]${ppl.toFixed(4)},`);
      },
    });
    process.stdout.write("\n");
    if (result.entries.size === 0)
      throw new PerplexityError(
        "BAD_FILE",
        `${options.model}: no product with a blk.* weight ran: nothing to write`,
      );
    const bytes = encodeImatrix(result.entries, {
      datasets: [basename(textFile)],
      chunkCount: result.chunks,
      chunkSize: result.chunkSize,
    });
    await writeFile(out, bytes);
    process.stderr.write(
      `imatrix: ${result.entries.size} entries over ${result.chunks} chunks of ${result.chunkSize} tokens ` +
        `(final perplexity ${result.perplexity.toFixed(4)}) written to ${out}\n`,
    );
    return 0;
  } catch (e) {
    if (e instanceof PerplexityError) {
      process.stderr.write(`minfer: error [${e.code}]: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    loaded?.close();
  }
}
