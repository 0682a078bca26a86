// `minfer pull`, `minfer list`, `minfer rm`, and the resolution of `-m hf://…` to a cached file.
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { ProgressBar } from "../progress.js";
import { findCached, listCached, removeCached } from "./cache.js";
import { type HubConfig, hubConfig } from "./config.js";
import { HubError } from "./hub-error.js";
import { formatFileRef, isHubRef, type ModelRef, parseModelRef } from "./model-ref.js";
import { pull } from "./pull.js";

export const pullOptions: OptionSpec[] = [
  {
    flags: ["--revision"],
    kind: "string",
    metavar: "REV",
    help: "the branch, tag or commit (default: main)",
  },
  { flags: ["--json"], kind: "boolean", help: "print the files as one JSON object" },
];
export const listOptions: OptionSpec[] = [
  { flags: ["--json"], kind: "boolean", help: "print one JSON array" },
];
export const rmOptions: OptionSpec[] = [
  {
    flags: ["--revision"],
    kind: "string",
    metavar: "REV",
    help: "the branch, tag or commit (default: main)",
  },
];

const size = (n: number) =>
  n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(1)} MiB`;

/** Pulls `ref` with a progress bar per file on stderr; returns the path of the model to load. */
export async function pullWithProgress(config: HubConfig, ref: ModelRef): Promise<string[]> {
  let bar: ProgressBar | undefined;
  const result = await pull(config, ref, {
    onStart: (name, total) => {
      bar?.clear();
      bar = new ProgressBar(`pulling ${name}`, total);
    },
    onProgress: (done, total) => bar?.update(done, total ? `${size(done)} / ${size(total)}` : size(done)),
    onNote: (line) => {
      bar?.clear();
      process.stderr.write(`minfer: ${line}\n`);
    },
  });
  bar?.clear();
  for (const f of result.files) {
    const what = `${formatFileRef(f.ref)} (${size(f.meta.size)}, sha256 ${f.meta.sha256.slice(0, 12)}…${f.meta.checked === "size" ? ", size checked only" : ""})`;
    process.stderr.write(`minfer: ${f.reused ? "cached" : "pulled"} ${what}: ${f.path}\n`);
  }
  return result.files.map((f) => f.path);
}

export async function pullCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, pullOptions);
  const [refText] = expectPositionals(positionals, ["MODEL"]);
  const config = hubConfig();
  const ref = parseModelRef(refText!, (options.revision as string | undefined) ?? "main");
  const paths = await pullWithProgress(config, ref);
  if (options.json) process.stdout.write(`${JSON.stringify({ model: paths[0], files: paths })}\n`);
  else process.stdout.write(`${paths[0]}\n`);
  return 0;
}

export async function listCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, listOptions);
  expectPositionals(positionals, []);
  const files = await listCached(hubConfig());
  if (options.json) {
    process.stdout.write(
      `${JSON.stringify(files.map((f) => ({ model: formatFileRef(f.ref), path: f.path, ...f.meta })))}\n`,
    );
    return 0;
  }
  if (files.length === 0) {
    process.stdout.write("no models in the cache (minfer pull hf://OWNER/REPO/FILE.gguf adds one)\n");
    return 0;
  }
  const rows = files.map((f) => [
    formatFileRef(f.ref) + (f.ref.revision === "main" ? "" : ` (${f.ref.revision})`),
    size(f.meta.size),
    f.meta.sha256.slice(0, 12),
    f.meta.downloadedAt.slice(0, 19).replace("T", " "),
  ]);
  const head = ["MODEL", "SIZE", "SHA256", "PULLED"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [head, ...rows])
    process.stdout.write(
      `${r
        .map((c, i) => c.padEnd(widths[i]!))
        .join("  ")
        .trimEnd()}\n`,
    );
  return 0;
}

export async function rmCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, rmOptions);
  if (positionals.length === 0) expectPositionals(positionals, ["MODEL"]);
  const config = hubConfig();
  let status = 0;
  for (const text of positionals) {
    const ref = parseModelRef(
      text.startsWith("hf://") ? text : `hf://${text}`,
      (options.revision as string | undefined) ?? "main",
    );
    if (ref.kind !== "file")
      throw new HubError(
        "INVALID_ARGUMENT",
        `${JSON.stringify(text)}: name the file to remove (minfer list shows them)`,
      );
    if (await removeCached(config, ref)) process.stdout.write(`removed ${formatFileRef(ref)}\n`);
    else {
      process.stderr.write(`minfer: ${formatFileRef(ref)} is not in the cache\n`);
      status = 1;
    }
  }
  return status;
}

/**
 * `-m`'s value as a local path: a path as given; hf://… as its cached file, pulled first when the cache
 * lacks it (with a progress bar). Quantization references are resolved against the hub's file list
 * unless the cache already holds the single file they name.
 */
export async function resolveModelPath(path: string, hub?: HubConfig): Promise<string> {
  if (!isHubRef(path)) return path;
  // (the hub's configuration is read only for hub references: a bad endpoint must not stop a local path)
  const config = hub ?? hubConfig();
  const ref = parseModelRef(path);
  if (ref.kind === "file") {
    const cached = await findCached(config, ref);
    if (cached) return cached.path;
  }
  const paths = await pullWithProgress(config, ref);
  return paths[0]!;
}
