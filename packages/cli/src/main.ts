import { GgufError } from "@minfer/gguf";
import { TokenizerError } from "@minfer/tokenizer";
import { formatOptions } from "./args.js";
import { CliError } from "./errors.js";
import { inspectCommand, inspectOptions } from "./gguf/inspect.js";
import { quantizeCommand, quantizeOptions } from "./gguf/quantize.js";
import { mergeCommand, splitCommand, splitOptions } from "./gguf/split.js";
import { synthCommand, synthOptions } from "./gguf/synth.js";
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
    usage: "minfer gguf quantize IN OUT TYPE [-t THREADS] [--allow-requantize]",
    summary: "convert the weights to TYPE (f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k)",
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

/** Runs the command line and returns the exit status: 0 success, 1 failure, 2 usage error. */
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
    if (e instanceof GgufError || e instanceof TokenizerError) {
      process.stderr.write(`minfer: error [${e.code}]: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
