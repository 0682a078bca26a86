import { mergeGguf, planSplit, readGguf, splitGguf } from "@minfer/gguf";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { ProgressBar } from "../progress.js";

export const splitOptions: OptionSpec[] = [
  { flags: ["--split-max-tensors"], kind: "integer", metavar: "N", help: "most tensors per part" },
  {
    flags: ["--split-max-size"],
    kind: "string",
    metavar: "SIZE",
    help: "most bytes per part, e.g. 500M or 2G",
  },
  { flags: ["--dry-run"], kind: "boolean", help: "print the parts without writing them" },
];

/** Parses llama.cpp's size spelling: a number with an optional K, M or G suffix (powers of 1024). */
export function parseSize(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)([KMG]?)B?$/i.exec(raw.trim());
  if (!m)
    throw new CliError("INVALID_ARGUMENT", `--split-max-size expects a size like 500M or 2G, got "${raw}"`);
  const mult = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2]!.toUpperCase() as "" | "K" | "M" | "G"];
  const n = Math.floor(Number(m[1]) * mult);
  if (n < 1) throw new CliError("INVALID_ARGUMENT", `--split-max-size must be positive, got "${raw}"`);
  return n;
}

export async function splitCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, splitOptions);
  const [input, prefix] = expectPositionals(positionals, ["IN", "OUT_PREFIX"]);
  const maxTensors = options.splitMaxTensors as number | undefined;
  const maxBytes = options.splitMaxSize !== undefined ? parseSize(options.splitMaxSize as string) : undefined;
  if (maxTensors === undefined && maxBytes === undefined) {
    throw new CliError("MISSING_ARGUMENT", "give --split-max-tensors N or --split-max-size SIZE");
  }
  const file = await readGguf(input!);
  const groups = planSplit(file.tensors, { maxTensors, maxBytes });
  if (options.dryRun) {
    groups.forEach((g, i) => {
      const bytes = g.reduce((a, t) => a + t.byteSize, 0);
      process.stdout.write(`part ${i + 1}/${groups.length}: ${g.length} tensors, ${bytes} bytes\n`);
    });
    return 0;
  }
  const total = file.tensors.reduce((a, t) => a + t.byteSize, 0);
  const bar = new ProgressBar("split", total);
  let done = 0;
  const paths = await splitGguf(file, prefix!, {
    maxTensors,
    maxBytes,
    onProgress: (_w, _t, name) => {
      done += file.tensors.find((t) => t.name === name)?.byteSize ?? 0;
      bar.update(done, name);
    },
  });
  bar.done(`wrote ${paths.length} parts:\n${paths.map((p) => `  ${p}`).join("\n")}`);
  return 0;
}

export async function mergeCommand(argv: string[]): Promise<number> {
  const { positionals } = parseArgs(argv, []);
  const [input, output] = expectPositionals(positionals, ["FIRST_PART", "OUT"]);
  const file = await readGguf(input!);
  const total = file.tensors.reduce((a, t) => a + t.byteSize, 0);
  const bar = new ProgressBar("merge", total);
  await mergeGguf(file, output!, { onProgress: (w) => bar.update(w) });
  bar.done(`${output}: merged ${file.parts.length} parts, ${file.tensors.length} tensors`);
  return 0;
}
