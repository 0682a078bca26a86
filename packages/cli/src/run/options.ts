import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type ContextOptions, DEFAULT_N_CTX, DEFAULT_N_UBATCH } from "@minfer/engine";
import { LLAMA_CPP_SAMPLING, type SamplerOptions } from "@minfer/sampler";
import type { OptionSpec, ParsedOptions } from "../args.js";
import { CliError } from "../errors.js";

/** -m: every command that loads a model. */
export const modelOption: OptionSpec = {
  flags: ["-m", "--model"],
  kind: "string",
  metavar: "FILE",
  help: "the GGUF model (run, chat, serve: default the built-in demonstration model)",
};

/** Threads, context, micro-batch and KV type: how the model is run. */
export const contextOptions: OptionSpec[] = [
  {
    flags: ["-t", "--threads"],
    kind: "integer",
    metavar: "N",
    help: "CPU threads (default: the physical cores)",
  },
  {
    flags: ["-c", "--ctx-size"],
    kind: "integer",
    metavar: "N",
    help: `context size in tokens (default: min(${DEFAULT_N_CTX}, the model's); 0 = the model's)`,
  },
  {
    flags: ["-b", "--batch-size"],
    kind: "integer",
    metavar: "N",
    help: `most tokens one graph runs; longer prompts run in pieces (default: ${DEFAULT_N_UBATCH})`,
  },
  { flags: ["--kv-type"], kind: "string", metavar: "TYPE", help: "K/V cache type: f16 (default), f32, q8_0" },
  {
    flags: ["-ngl", "--gpu-layers"],
    kind: "string",
    metavar: "N|auto|all",
    help: "layers on the GPU, the rest on the CPU: a count, all, or auto (fit by free memory; the default when a GPU is usable; 0 = CPU only)",
  },
  {
    flags: ["-dev", "--device"],
    kind: "string",
    metavar: "NAME",
    help: "where offloaded layers go: a device from `minfer devices` (cuda:0, …) or cpu for none (default: the best GPU found)",
  },
];

/** Sampling, as llama.cpp spells and defaults it. */
export const samplingOptions: OptionSpec[] = [
  { flags: ["--temp"], kind: "number", metavar: "T", help: "temperature; 0 = greedy (default: 0.8)" },
  { flags: ["--top-k"], kind: "integer", metavar: "K", help: "top-k cut; 0 = off (default: 40)" },
  {
    flags: ["--top-p"],
    kind: "number",
    metavar: "P",
    help: "top-p (nucleus) cut in (0, 1]; 1 = off (default: 0.95)",
  },
  {
    flags: ["-s", "--seed"],
    kind: "integer",
    metavar: "S",
    help: "sampling seed; -1 = random (default: -1)",
  },
];

type KvDtype = NonNullable<ContextOptions["kvDtype"]>;

const KV_TYPES: readonly KvDtype[] = ["f16", "f32", "q8_0"];

/** Throws INVALID_ARGUMENT naming `flag` unless `ok`. */
export function check(ok: boolean, flag: string, what: string, value: unknown): void {
  if (!ok) throw new CliError("INVALID_ARGUMENT", `${flag} must be ${what}, got ${String(value)}`);
}

/**
 * The built-in default model: a 7M-parameter Qwen3 trained on the Brown corpus
 * (examples/train-default-model), shipped in this package. A demonstration of minfer writing
 * text, not an assistant.
 */
export const DEFAULT_MODEL: string = ["../models/", "../../models/"]
  .map((dir) => fileURLToPath(new URL(`${dir}minfer-default-7m-f16.gguf`, import.meta.url)))
  .reduce((found, p) => (existsSync(found) ? found : p)); // dist/chunk.js or src/run/options.ts

/** The model path: -m, or the built-in default model (said on stderr) when `allowDefault`. */
export function modelPath(options: ParsedOptions, allowDefault = false): string {
  if (options.model !== undefined) return options.model as string;
  if (!allowDefault) throw new CliError("MISSING_ARGUMENT", "-m FILE is required");
  if (!existsSync(DEFAULT_MODEL))
    throw new CliError(
      "MISSING_ARGUMENT",
      `-m FILE is required (the built-in model ${DEFAULT_MODEL} is missing)`,
    );
  process.stderr.write(
    "minfer: no -m given: using the built-in demonstration model (7M parameters, trained on the Brown corpus; not an assistant)\n",
  );
  return DEFAULT_MODEL;
}

/** Validated context settings (undefined = the engine's default). */
export interface RunSettings {
  readonly threads?: number;
  readonly nCtx?: number;
  readonly nUbatch?: number;
  readonly kvDtype?: KvDtype;
  /** -ngl: a layer count, "all" or "auto" (undefined: auto when a GPU is usable, else the CPU only). */
  readonly gpuLayers?: number | "all" | "auto";
  /** --device: the offload device's name, or "cpu" for none (undefined: the best GPU found). */
  readonly device?: string;
  /** Sequences decoded together (serve's -np): sizes the worst-case graph of an offload plan. */
  readonly nSeqMax?: number;
}

/** Parses -ngl: a non-negative integer, "all" or "auto". */
export function parseGpuLayers(value: string | undefined): number | "all" | "auto" | undefined {
  if (value === undefined) return undefined;
  if (value === "all" || value === "auto") return value;
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  check(Number.isSafeInteger(n), "-ngl", "a layer count (0 or more), all or auto", value);
  return n;
}

export function runSettings(options: ParsedOptions): RunSettings {
  const { threads, ctxSize, batchSize, kvType, gpuLayers, device } = options as {
    threads?: number;
    ctxSize?: number;
    batchSize?: number;
    kvType?: string;
    gpuLayers?: string;
    device?: string;
  };
  if (device !== undefined)
    check(
      /^[a-z][a-z0-9_-]*(:\d+)?$/.test(device),
      "--device",
      "a device name such as cpu or cuda:0",
      device,
    );
  if (threads !== undefined) check(threads >= 1 && threads <= 1024, "-t", "an integer in [1, 1024]", threads);
  if (ctxSize !== undefined) check(ctxSize >= 0, "-c", "0 or a positive integer", ctxSize);
  if (batchSize !== undefined) check(batchSize >= 1, "-b", "a positive integer", batchSize);
  if (kvType !== undefined)
    check(KV_TYPES.includes(kvType as KvDtype), "--kv-type", KV_TYPES.join(", "), kvType);
  return {
    threads,
    nCtx: ctxSize,
    nUbatch: batchSize,
    kvDtype: kvType as KvDtype | undefined,
    gpuLayers: parseGpuLayers(gpuLayers),
    device,
  };
}

/** Validated sampler options, over llama.cpp's defaults. */
export function samplerSettings(options: ParsedOptions): SamplerOptions {
  const { temp, topK, topP, seed } = options as {
    temp?: number;
    topK?: number;
    topP?: number;
    seed?: number;
  };
  if (temp !== undefined) check(temp >= 0, "--temp", "a number >= 0 (0 = greedy)", temp);
  if (topK !== undefined) check(topK >= 0, "--top-k", "an integer >= 0 (0 = off)", topK);
  if (topP !== undefined) check(topP > 0 && topP <= 1, "--top-p", "a number in (0, 1]", topP);
  if (seed !== undefined)
    check(
      seed === -1 || (seed >= 0 && seed <= 0xffffffff),
      "--seed",
      "-1 or an integer in [0, 4294967295]",
      seed,
    );
  // llama.cpp's command-line defaults (the library's own defaults are no-ops).
  return {
    ...LLAMA_CPP_SAMPLING,
    ...(temp !== undefined ? { temperature: temp } : {}),
    ...(topK !== undefined ? { topK } : {}),
    ...(topP !== undefined ? { topP } : {}),
    ...(seed !== undefined && seed !== -1 ? { seed } : {}),
  };
}
