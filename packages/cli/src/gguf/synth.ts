import { availableParallelism } from "node:os";
import {
  readGguf,
  SYNTH_ARCHS,
  SYNTH_PRESETS,
  type SynthArch,
  synthesizeLayout,
  synthesizeModel,
  synthVocabSize,
  writeGguf,
} from "@minfer/gguf";
import { MODEL_SYNTH_PRESETS, SUPPORTED_ARCHS, synthLayout, synthShape } from "@minfer/models";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { ProgressBar } from "../progress.js";
import { ConvertPool } from "../worker-pool.js";

export const synthOptions: OptionSpec[] = [
  {
    flags: ["--arch"],
    kind: "string",
    metavar: "ARCH",
    help: `architecture: ${SUPPORTED_ARCHS.join(", ")} (implied by most presets)`,
  },
  {
    flags: ["--preset"],
    kind: "string",
    metavar: "NAME",
    help: `shapes: ${[...Object.keys(SYNTH_PRESETS), ...Object.keys(MODEL_SYNTH_PRESETS)].join(", ")}`,
  },
  {
    flags: ["--vocab"],
    kind: "string",
    metavar: "VOCAB.gguf",
    help: "copy the tokenizer from this GGUF (default: 259 byte tokens)",
  },
  {
    flags: ["--type"],
    kind: "string",
    metavar: "TYPE",
    help: "weight type: f32, f16, bf16, q8_0, q4_0, q4_k, …, or the recipe q4_k_m (default f16)",
  },
  { flags: ["-o", "--output"], kind: "string", metavar: "OUT", help: "file to write" },
  { flags: ["-s", "--seed"], kind: "integer", metavar: "N", help: "seed of the random weights (default 1)" },
  {
    flags: ["-t", "--threads"],
    kind: "integer",
    metavar: "N",
    help: "worker threads (default: all cores; 1 works in this thread; the output is the same)",
  },
];

export async function synthCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, synthOptions);
  expectPositionals(positionals, []);
  if (options.preset === undefined) throw new CliError("MISSING_ARGUMENT", "--preset NAME is required");
  if (options.output === undefined) throw new CliError("MISSING_ARGUMENT", "-o OUT is required");
  const threads = (options.threads as number | undefined) ?? availableParallelism();
  if (threads < 1) throw new CliError("INVALID_ARGUMENT", `--threads must be at least 1, got ${threads}`);
  const vocab = options.vocab !== undefined ? (await readGguf(options.vocab as string)).metadata : undefined;
  // Each chunk re-derives its place in its tensor's random stream, so workers make the same bytes
  // as one thread would; a few chunks per worker are kept in flight ahead of the writer.
  const pool = threads > 1 ? new ConvertPool(threads) : undefined;
  try {
    const preset = options.preset as string;
    const arch = options.arch as string | undefined;
    const common = {
      type: options.type as string | undefined,
      seed: options.seed as number | undefined,
      vocab,
      ...(pool
        ? { runChunk: (c: import("@minfer/gguf").SynthChunk) => pool.synth(c), lookahead: threads * 2 }
        : {}),
    };
    // @minfer/gguf writes llama, qwen2 and qwen3 itself; every other architecture's layout (keys
    // and tensors) comes from its module in @minfer/models.
    const builtIn =
      (arch === undefined || SYNTH_ARCHS.includes(arch as SynthArch)) && preset in SYNTH_PRESETS;
    const model = builtIn
      ? synthesizeModel({ preset, arch, ...common })
      : synthesizeOther(preset, arch, common);
    for (const n of model.notes) process.stderr.write(`note: ${n}\n`);
    const bar = new ProgressBar("synth", 1);
    const layout = await writeGguf(options.output as string, model.metadata, model.tensors, {
      onProgress: (w, total, name) => bar.update(w / total, name),
    });
    bar.done(
      `${options.output}: ${model.tensors.length} tensors, ${(layout.fileSize / 1048576).toFixed(1)} MiB` +
        ` with ${threads} thread${threads === 1 ? "" : "s"}`,
    );
  } finally {
    await pool?.close();
  }
  return 0;
}

/** A synthetic model of an architecture `@minfer/gguf` does not know, from its module's layout. */
function synthesizeOther(
  preset: string,
  arch: string | undefined,
  options: import("@minfer/gguf").SynthLayoutOptions,
): import("@minfer/gguf").SynthModel {
  const shape = synthShape(preset);
  const chosen = arch ?? shape.arch;
  if (!chosen)
    throw new CliError(
      "INVALID_ARGUMENT",
      `preset "${preset}" fits any architecture; choose one with --arch (${SUPPORTED_ARCHS.join(", ")})`,
    );
  if (shape.arch && shape.arch !== chosen)
    throw new CliError(
      "INVALID_ARGUMENT",
      `preset "${preset}" is a ${shape.arch} model; use --arch ${shape.arch} or another preset`,
    );
  return synthesizeLayout(synthLayout(chosen, shape, synthVocabSize(options.vocab), preset), options);
}
