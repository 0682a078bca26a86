// `minfer convert HF_DIR -o OUT.gguf [--type TYPE]`: a Hugging Face checkpoint (config.json,
// safetensors, tokenizer files) of an architecture in archs/ → one GGUF file, streamed tensor by
// tensor.
import { existsSync, statSync } from "node:fs";
import { basename, resolve } from "node:path";
import {
  chooseType,
  fileTypeOf,
  type GgmlTypeInfo,
  type GgufKV,
  GgufValueType,
  ggmlTypeByName,
  QUANTIZE_TYPES,
  quantize,
  writeGguf,
} from "@minfer/gguf";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { ProgressBar } from "../progress.js";
import { ConvertError } from "./errors.js";
import { readHfConfig } from "./hf-config.js";
import { readHfTokenizer } from "./hf-tokenizer.js";
import { readCheckpointTensors, TensorReader } from "./safetensors.js";
import { type PlannedTensor, permuteRows, planTensors } from "./tensor-map.js";

export const convertOptions: OptionSpec[] = [
  {
    flags: ["-o", "--outfile"],
    kind: "string",
    metavar: "OUT.gguf",
    help: "the GGUF file to write (required)",
  },
  {
    flags: ["--type", "--outtype"],
    kind: "string",
    metavar: "TYPE",
    help: `weight type: ${QUANTIZE_TYPES.map((t) => t.toLowerCase()).join(", ")} (default: f16); norms and biases stay f32`,
  },
  {
    flags: ["--name"],
    kind: "string",
    metavar: "NAME",
    help: "general.name (default: the directory's name)",
  },
];

const F32 = ggmlTypeByName("f32");

/** Elements converted per chunk: whole rows (whole heads for Q/K), about a million. */
const CHUNK_ELEMENTS = 1 << 20;

/** What {@link convertCheckpoint} wrote. */
export interface ConvertSummary {
  arch: string;
  pre: string;
  tensors: number;
  fileSize: number;
  types: Map<string, number>;
  /** Matrices written in another type than asked, each with why (rows not whole blocks). */
  fallbacks: string[];
  /** What the conversion left out or chose (skipped vision tensors, keys llama.cpp ignores, …). */
  notes: string[];
}

/** Options of {@link convertCheckpoint}. */
export interface ConvertOptions {
  /** Weight type name (f32, f16, bf16, q8_0, …). Default: f16. */
  type?: string;
  /** general.name. Default: the directory's base name. */
  name?: string;
  /** Called as bytes of tensor data are produced. */
  onProgress?: (done: number, total: number, tensor: string) => void;
}

const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
const str = (key: string, value: string): GgufKV => ({ key, type: GgufValueType.STRING, value });

/** Converts the checkpoint in `dir` to the GGUF `out`. Refusals are {@link ConvertError}s naming what is wrong. */
export async function convertCheckpoint(
  dir: string,
  out: string,
  options: ConvertOptions = {},
): Promise<ConvertSummary> {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new ConvertError("MISSING_FILE", `${dir} is not a directory (a Hugging Face checkpoint)`);
  const target = ggmlTypeByName(options.type ?? "f16");
  if (!QUANTIZE_TYPES.includes(target.name))
    throw new CliError(
      "INVALID_ARGUMENT",
      `--type ${options.type}: cannot write ${target.name}; supported: ${QUANTIZE_TYPES.map((t) => t.toLowerCase()).join(", ")}`,
    );
  const { spec, source, reader: config } = readHfConfig(dir);
  const arch = spec.plan(config, source);
  if (!arch.vocab && !arch.tokenizer) throw new Error(`${spec.arch}: the plan names no tokenizer reader`);
  const tok = arch.vocab
    ? arch.vocab(dir)
    : readHfTokenizer(dir, config.file, arch.vocabSize, arch.tokenizer!);
  const tensors = await readCheckpointTensors(dir);
  const { plan, notes } = planTensors(source, arch.tensors(tok.nVocab), tensors, {
    tied: arch.tied,
    rename: arch.rename,
  });
  for (const t of arch.extraTensors?.() ?? [])
    plan.push({ name: t.name, dims: [t.values.length], values: t.values });
  const choices = plan.map((t) => (t.f32 ? { to: F32 } : chooseType(t.dims, target)));
  const types = choices.map((c) => c.to);
  const fallbacks = choices.flatMap((c, i) => (c.note ? [`${plan[i]!.name}: ${c.note}`] : []));

  const fileType = fileTypeOf(target.id);
  const metadata: GgufKV[] = [
    str("general.architecture", spec.arch),
    { key: "general.type", type: GgufValueType.STRING, value: "model" },
    str("general.name", options.name ?? basename(resolve(dir))),
    ...arch.metadata(tok.nVocab),
    ...(fileType !== undefined ? [u32("general.file_type", fileType)] : []),
    ...(target.quantized ? [u32("general.quantization_version", 2)] : []),
    ...tok.metadata,
  ];

  const total = plan.reduce((a, t) => a + t.dims.reduce((x, d) => x * d, 1), 0);
  let done = 0;
  const reader = new TensorReader();
  try {
    const layout = await writeGguf(
      out,
      metadata,
      plan.map((t, i) => ({
        name: t.name,
        type: types[i]!.id,
        dims: t.dims,
        data: () =>
          chunks(reader, t, types[i]!, (n) => {
            done += n;
            options.onProgress?.(done, total, t.name);
          }),
      })),
    );
    const byType = new Map<string, number>();
    for (const t of types) byType.set(t.name, (byType.get(t.name) ?? 0) + 1);
    return {
      arch: spec.arch,
      pre: tok.pre,
      tensors: plan.length,
      fileSize: layout.fileSize,
      types: byType,
      fallbacks,
      notes: [...arch.notes, ...notes, ...tok.notes],
    };
  } finally {
    await reader.close();
  }
}

/** A tensor's converted bytes, a chunk of whole rows at a time. */
async function* chunks(
  reader: TensorReader,
  t: PlannedTensor,
  type: GgmlTypeInfo,
  progress: (elements: number) => void,
): AsyncGenerator<Uint8Array> {
  if (t.values) {
    progress(t.values.length);
    yield quantize(type.id, t.values);
    return;
  }
  const src = t.src!;
  const rowLen = t.dims[0]!;
  const nRows = t.rows ?? (src.shape.length > 1 ? src.shape[0]! : 1);
  const offset = t.rowOffset ?? 0;
  const unit = t.permute?.headDim ?? 1;
  const perChunk = Math.max(unit, Math.floor(CHUNK_ELEMENTS / rowLen / unit) * unit);
  for (let r = 0; r < nRows; r += perChunk) {
    const r1 = Math.min(nRows, r + perChunk);
    let rows = await reader.rows(src, offset + r, offset + r1);
    if (t.permute) rows = permuteRows(rows, rowLen, t.permute.headDim);
    if (t.addOne) for (let i = 0; i < rows.length; i++) rows[i] += 1;
    progress(rows.length);
    yield quantize(type.id, rows);
  }
}

/** Runs `minfer convert`. A refused checkpoint prints `minfer: error [CODE]: …` and exits 1. */
export async function convertCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, convertOptions);
  const [dir] = expectPositionals(positionals, ["HF_DIR"]);
  const out = options.outfile as string | undefined;
  if (!out) throw new CliError("MISSING_ARGUMENT", "-o OUT.gguf is required");
  let bar: ProgressBar | undefined;
  let totalElems = 0;
  try {
    const s = await convertCheckpoint(dir!, out, {
      type: options.type as string | undefined,
      name: options.name as string | undefined,
      onProgress: (done, total, name) => {
        totalElems = total;
        bar ??= new ProgressBar("convert", total);
        bar.update(done, name);
      },
    });
    const types = [...s.types.entries()].map(([n, k]) => `${n}×${k}`).join(" ");
    for (const n of s.notes) process.stderr.write(`minfer: note: ${n}\n`);
    // Not silent: say which matrices could not take the asked type (as `gguf quantize` does).
    if (s.fallbacks.length > 0) {
      process.stderr.write(`minfer: ${s.fallbacks.length} matrices kept in another type:\n`);
      for (const f of s.fallbacks.slice(0, 8)) process.stderr.write(`  ${f}\n`);
      if (s.fallbacks.length > 8) process.stderr.write(`  … and ${s.fallbacks.length - 8} more\n`);
    }
    (bar ?? new ProgressBar("convert", 0)).done(
      `${out}: ${s.arch}, tokenizer pre ${s.pre}, ${s.tensors} tensors (${types}), ${(totalElems / 1e6).toFixed(1)}M parameters, ${(s.fileSize / 1048576).toFixed(1)} MiB`,
    );
    return 0;
  } catch (e) {
    if (e instanceof ConvertError) {
      process.stderr.write(`minfer: error [${e.code}]: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
