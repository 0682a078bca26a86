import { formatOptions } from "./args.js";
import { convertCommand, convertOptions } from "./convert/convert.js";
import { CliError } from "./errors.js";
import { inspectCommand, inspectOptions } from "./gguf/inspect.js";
import { quantizeCommand, quantizeOptions } from "./gguf/quantize.js";
import { mergeCommand, splitCommand, splitOptions } from "./gguf/split.js";
import { synthCommand, synthOptions } from "./gguf/synth.js";
import { listCommand, listOptions, pullCommand, pullOptions, rmCommand, rmOptions } from "./hub/commands.js";
import { imatrixCommand, imatrixOptions } from "./imatrix/command.js";
import { perplexityCommand, perplexityOptions } from "./perplexity/command.js";
import { benchCommand, benchOptions } from "./run/bench.js";
import { chatCommand, chatOptions } from "./run/chat.js";
import { devicesCommand, devicesOptions } from "./run/devices.js";
import { runCommand, runOptions } from "./run/run.js";
import { serveCommand, serveOptions } from "./run/serve.js";
import { templateCommand, templateOptions } from "./text/template.js";
import { tokenizeCommand, tokenizeOptions } from "./text/tokenize.js";
import { VERSION } from "./version.js";

interface Command {
  usage: string;
  summary: string;
  options?: Parameters<typeof formatOptions>[0];
  run(argv: string[]): Promise<number>;
}

const GGUF_COMMANDS: Record<string, Command> = {
  inspect: {
    usage: "minfer gguf inspect FILE [--json]",
    summary: "print metadata (long arrays abbreviated), the tensor table and totals by type",
    options: inspectOptions,
    run: inspectCommand,
  },
  quantize: {
    usage: "minfer gguf quantize IN OUT TYPE [--imatrix FILE] [--pure] [-t THREADS] [--allow-requantize]",
    summary:
      "convert the weights to TYPE: one of llama.cpp's mixes, chosen per tensor as llama-quantize does " +
      "(q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, q4_0, q4_1, q5_0, q5_1, q8_0, " +
      "iq4_nl, iq4_xs, iq3_m, iq3_s, iq3_xs, iq3_xxs, iq2_m, iq2_s, iq2_xs, iq2_xxs, iq1_m, iq1_s, tq2_0, tq1_0), " +
      "or a plain type for every matrix (f16, bf16, f32, q3_k, q4_k, q5_k); " +
      "--imatrix weighs each element's error by llama-imatrix's importance matrix (GGUF or legacy .dat); " +
      "iq3_xxs, iq3_xs and the iq2 and iq1 mixes need one, as in llama.cpp",
    options: quantizeOptions,
    run: quantizeCommand,
  },
  split: {
    usage: "minfer gguf split (--split-max-tensors N | --split-max-size SIZE) IN OUT_PREFIX",
    summary: "write OUT_PREFIX-00001-of-0000N.gguf, … as llama.cpp's gguf-split does",
    options: splitOptions,
    run: splitCommand,
  },
  merge: {
    usage: "minfer gguf merge FIRST_PART OUT",
    summary: "join a split model into one file",
    run: mergeCommand,
  },
  synth: {
    usage:
      "minfer gguf synth [--arch ARCH] --preset NAME [--vocab VOCAB.gguf] [--type TYPE] -o OUT [--seed N]",
    summary: "write random weights (std 0.02) at a real architecture's shapes",
    options: synthOptions,
    run: synthCommand,
  },
};

const COMMANDS: Record<string, Command> = {
  run: {
    usage:
      "minfer run [-m FILE] (-p PROMPT | -f PROMPTFILE) [-n N] [--temp T] [--top-k K] [--top-p P] [--seed S] [-t N] [-c N] [-b N] [--ids] [--verbose]",
    summary: "generate a continuation of a prompt; only the generated text goes to stdout",
    options: runOptions,
    run: runCommand,
  },
  chat: {
    usage: "minfer chat [-m FILE] [--system TEXT] [--chat-template-file F] [sampling options] [-c N] [-t N]",
    summary: "chat through the model's chat template, one user line at a time from stdin",
    options: chatOptions,
    run: chatCommand,
  },
  bench: {
    usage:
      "minfer bench -m FILE [-p 512] [-n 128] [-d 0] | -npl 1,4,16 [-npp 128] [-ntg 128] [-pps] [-kvu] | -md DRAFT | --spec-type ngram [-n 128] [--spec-prompt TEXT]; [-r 3] [-t N] [-b N] [--kv-type TYPE] [-ngl N] [--json]",
    summary:
      "measure prompt processing (pp) and generation (tg) speed, llama-bench style (-npl: batched decoding, llama-batched-bench style; -md or --spec-type: generation with speculative decoding beside without, its speedup and acceptance)",
    options: benchOptions,
    run: benchCommand,
  },
  serve: {
    usage:
      "minfer serve [-m FILE | --models-dir DIR [--models-max N] [--keep-alive S]] [--host 127.0.0.1] [--port 8080] [-np N] [-c N] [-b N] [-t N] [--api-key KEY] [--no-webui] [--metrics] [--chat-template-file F] [--queue N] [--timeout S]",
    summary:
      "an OpenAI-compatible HTTP server with a chat page at /: continuous batching over -np slots (/v1/chat/completions, /v1/completions, /v1/models, /health, /props, /slots, /metrics); --models-dir: several models, loaded as requests name them",
    options: serveOptions,
    run: serveCommand,
  },
  pull: {
    usage: "minfer pull (hf://OWNER/REPO/FILE.gguf | OWNER/REPO[:QUANT]) [--revision REV] [--json]",
    summary:
      "download a GGUF model from Hugging Face (or MINFER_HF_ENDPOINT) into the cache, resuming and checking its sha256; prints its path",
    options: pullOptions,
    run: pullCommand,
  },
  list: {
    usage: "minfer list [--json]",
    summary: "list the models in the cache (MINFER_CACHE_DIR, else ~/.cache/minfer)",
    options: listOptions,
    run: listCommand,
  },
  rm: {
    usage: "minfer rm hf://OWNER/REPO/FILE.gguf … [--revision REV]",
    summary: "remove models from the cache",
    options: rmOptions,
    run: rmCommand,
  },
  devices: {
    usage: "minfer devices [--json] [--verbose]",
    summary:
      "list the backends found, their devices (memory, compute capability or SIMD level) and why any is unusable",
    options: devicesOptions,
    run: devicesCommand,
  },
  convert: {
    usage: "minfer convert HF_DIR -o OUT.gguf [--type f32|f16|bf16|q8_0|q4_0|q4_k|…] [--name NAME]",
    summary: "convert a Hugging Face Llama / Qwen2 / Qwen3 checkpoint (safetensors) to GGUF",
    options: convertOptions,
    run: convertCommand,
  },
  tokenize: {
    usage: "minfer tokenize -m FILE (-p TEXT | -f TEXTFILE) [--ids] [--no-special]",
    summary: "print the token ids of a text (with their pieces, or as one JSON array with --ids)",
    options: tokenizeOptions,
    run: tokenizeCommand,
  },
  template: {
    usage:
      "minfer template -m FILE --messages MESSAGES.json [--tools TOOLS.json] [--no-generation-prompt] [--kwargs JSON] [--chat-template-file F]",
    summary: "print the prompt a model's chat template makes of a conversation",
    options: templateOptions,
    run: templateCommand,
  },
  perplexity: {
    usage:
      "minfer perplexity -m FILE -f TEXTFILE [-c 512] [--chunks N] [-b N] [-t N] [-ngl N] [--kl-divergence-base FILE [--kl-divergence]]",
    summary:
      "perplexity over a text as llama-perplexity computes it; write its base-logits file, or compare with one (KL divergence)",
    options: perplexityOptions,
    run: perplexityCommand,
  },
  imatrix: {
    usage:
      "minfer imatrix -m FILE -f TEXTFILE [-o imatrix.gguf] [-c 512] [--chunks N] [--process-output] [-t N] [-ngl N]",
    summary:
      "the importance matrix of a model over a text, as llama-imatrix computes it (for gguf quantize --imatrix)",
    options: imatrixOptions,
    run: imatrixCommand,
  },
};

function usage(): string {
  const lines = [
    `minfer ${VERSION}: LLM inference for GGUF models`,
    "",
    "usage: minfer <command> [options]",
    "",
    "commands:",
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(14)} ${c.summary}`),
    ...Object.entries(GGUF_COMMANDS).map(([name, c]) => `  gguf ${name.padEnd(9)} ${c.summary}`),
    "",
    "Run `minfer <command> --help` for a command's options.",
  ];
  return lines.join("\n");
}

function commandHelp(c: Command): string {
  return [
    `usage: ${c.usage}`,
    "",
    c.summary,
    ...(c.options?.length ? ["", "options:", formatOptions(c.options)] : []),
  ].join("\n");
}

/**
 * The errors of minfer's packages (and of file system calls) carry a stable `code`: they are
 * printed as one line with it, without a stack trace. Matched by name, so that a second copy of
 * a package (or one not imported here, like @minfer/models) is recognized too.
 */
const KNOWN_ERRORS = new Set([
  "GgufError",
  "TokenizerError",
  "EngineError",
  "ModelError",
  "SamplerError",
  "KvCacheError",
  "SchedulerError",
  "CpuBackendError",
  "CudaBackendError",
  "ServerError",
  "IrError",
  "HubError",
]);

function knownErrorCode(e: unknown): string | undefined {
  if (!(e instanceof Error)) return undefined;
  const code = (e as { code?: unknown }).code;
  if (typeof code !== "string") return undefined;
  if (KNOWN_ERRORS.has(e.name) || /^E[A-Z]+$/.test(code)) return code;
  return undefined;
}

/** Runs the command line and returns the exit status: 0 success, 1 failure, 2 usage error, 130 interrupted. */
export async function main(argv: string[]): Promise<number> {
  const [first, second, ...rest] = argv;
  if (first === undefined || first === "-h" || first === "--help" || first === "help") {
    process.stdout.write(`${usage()}\n`);
    return first === undefined ? 2 : 0;
  }
  if (first === "--version" || first === "-v") {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  let command: Command | undefined;
  let args: string[] = [];
  if (first === "gguf") {
    command = second !== undefined ? GGUF_COMMANDS[second] : undefined;
    args = rest;
    if (!command) {
      process.stderr.write(
        `minfer: ${second === undefined ? "missing" : `unknown`} gguf command${second ? ` "${second}"` : ""}; commands: ${Object.keys(GGUF_COMMANDS).join(", ")}\n`,
      );
      return 2;
    }
  } else if (COMMANDS[first]) {
    command = COMMANDS[first];
    args = argv.slice(1);
  } else {
    process.stderr.write(`minfer: unknown command "${first}"\n\n${usage()}\n`);
    return 2;
  }
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`${commandHelp(command)}\n`);
    return 0;
  }
  try {
    return await command.run(args);
  } catch (e) {
    if (e instanceof CliError) {
      process.stderr.write(`minfer: ${e.message}\nusage: ${command.usage}\n`);
      return 2;
    }
    const code = knownErrorCode(e);
    if (code !== undefined) {
      process.stderr.write(`minfer: error [${code}]: ${(e as Error).message}\n`);
      return 1;
    }
    throw e;
  }
}
