import { availableParallelism } from "node:os";
import {
  checkImatrix,
  GgufError,
  type GgufKV,
  type GgufTensorInfo,
  GgufValueType,
  IMPORTANCE_TYPES,
  type Imatrix,
  importanceNeeds,
  llamaQuantTarget,
  modelFacts,
  planQuantization,
  type QuantTarget,
  readGguf,
  readImatrix,
  type TensorPlan,
  writeGguf,
} from "@minfer/gguf";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { ProgressBar } from "../progress.js";
import { ConvertPool, quantizerSummary, tensorRange } from "../worker-pool.js";

export const quantizeOptions: OptionSpec[] = [
  {
    flags: ["--imatrix"],
    kind: "string",
    metavar: "FILE",
    help: "importance matrix from llama-imatrix (GGUF or legacy .dat): weighs each element's error by its column's mean x²",
  },
  { flags: ["-t", "--threads"], kind: "integer", metavar: "N", help: "worker threads (default: all cores)" },
  {
    flags: ["--pure"],
    kind: "boolean",
    help: "every matrix gets the mix's base type, no per-tensor rules (llama-quantize --pure)",
  },
  {
    flags: ["--allow-requantize"],
    kind: "boolean",
    help: "allow converting tensors that are already quantized",
  },
];

/** Elements per conversion job: whole rows, about four million elements. */
const JOB_ELEMENTS = 1 << 22;
/** Input bytes read ahead of the writer beyond 2 jobs per thread: keeps the workers busy behind a slow job. */
const LOOKAHEAD_BYTES = 128 * 1048576;

interface Job {
  tensor: number;
  start: number;
  bytes: number;
  elements: number;
  /** The importance of the job's rows' columns, when the imatrix has the tensor. */
  importance?: Float32Array;
}

/**
 * The importance of every tensor the plan quantizes to a type that uses one, as rows of per-column
 * values: one row for a matrix, one per expert for a stack of experts (the imatrix entry holds
 * n_cols·n_expert values). Tensors the imatrix lacks get none. A wrong-size entry is an error.
 */
export function tensorImportance(
  imatrix: Imatrix,
  tensors: readonly GgufTensorInfo[],
  plan: readonly TensorPlan[],
): { importance: (Float32Array[] | undefined)[]; missing: string[] } {
  const missing: string[] = [];
  const importance = tensors.map((t, i) => {
    const p = plan[i]!;
    if (p.from.id === p.to.id || !IMPORTANCE_TYPES.includes(p.to.name)) return undefined;
    const entry = imatrix.get(t.name);
    if (!entry) {
      missing.push(t.name);
      return undefined;
    }
    const cols = t.dims[0] ?? 1;
    const mats = t.dims.length > 2 ? t.dims.slice(2).reduce((a, b) => a * b, 1) : 1;
    if (entry.length !== cols && entry.length !== cols * mats) {
      throw new GgufError(
        "BAD_IMATRIX",
        `imatrix entry for tensor ${t.name} has ${entry.length} values, but the tensor has ${cols} columns` +
          (mats > 1 ? ` (${cols * mats} for its ${mats} experts)` : ""),
        { key: t.name },
      );
    }
    const n = entry.length / cols;
    return Array.from({ length: n }, (_, e) => entry.subarray(e * cols, (e + 1) * cols));
  });
  return { importance, missing };
}

export async function quantizeCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, quantizeOptions);
  const [input, output, typeName] = expectPositionals(positionals, ["IN", "OUT", "TYPE"]);
  const threads = (options.threads as number | undefined) ?? availableParallelism();
  if (threads < 1) throw new CliError("INVALID_ARGUMENT", `--threads must be at least 1, got ${threads}`);
  // One of llama.cpp's mixes (q4_k_m, q4_0, …), or a plain ggml type such as q4_k or f16.
  const target = llamaQuantTarget(typeName!, { pure: Boolean(options.pure) });
  const imatrixPath = options.imatrix as string | undefined;
  const imatrix = imatrixPath !== undefined ? await readImatrix(imatrixPath) : undefined;
  const file = await readGguf(input!);
  const plan = planQuantization(file.tensors, target, Boolean(options.allowRequantize), {
    ...modelFacts(file.metadata),
    imatrix: imatrix !== undefined,
  });
  for (const p of plan) if (p.note) process.stderr.write(`note: ${p.name}: ${p.note}\n`);
  checkImatrix(plan, imatrix); // the 1- to 2-bit i-quants (and IQ3_XXS) need one, as in llama.cpp
  process.stderr.write(planSummary(target, plan));
  let importance: (Float32Array[] | undefined)[] = [];
  if (imatrix) {
    const r = tensorImportance(imatrix, file.tensors, plan);
    importance = r.importance;
    const used = importance.filter(Boolean).length;
    process.stderr.write(`imatrix ${imatrixPath}: ${imatrix.size} entries, used for ${used} tensors\n`);
    if (r.missing.length > 0) {
      process.stderr.write(
        `note: the imatrix has no entry for ${r.missing.length} tensor(s), quantized without one: ` +
          `${r.missing.slice(0, 8).join(", ")}${r.missing.length > 8 ? ", …" : ""}\n`,
      );
    }
  }
  // token_embd / output in a type whose quantizer needs an importance, which llama-imatrix never
  // records for them: every column weighs the same.
  for (const [i, need] of importanceNeeds(plan).entries()) {
    if (need !== "uniform" || importance[i]) continue;
    importance[i] = [new Float32Array(file.tensors[i]!.dims[0] ?? 1).fill(1)];
    process.stderr.write(
      `note: ${plan[i]!.name}: no importance for ${plan[i]!.to.name}; all columns weigh the same\n`,
    );
  }

  // Cut every tensor into jobs of whole rows.
  const jobsOf: Job[][] = file.tensors.map((t, i) => {
    const row = t.dims[0] ?? 1;
    const rows = t.nElements / Math.max(row, 1);
    const rowBytes = t.byteSize / Math.max(rows, 1);
    const perJob = Math.max(1, Math.floor(JOB_ELEMENTS / Math.max(row, 1)));
    const jobs: Job[] = [];
    const imp = importance[i];
    if (imp) {
      // One importance row per matrix (expert): jobs do not cross a matrix's rows.
      const perMat = rows / imp.length;
      for (let m = 0; m < imp.length; m++) {
        for (let r = m * perMat; r < (m + 1) * perMat; r += perJob) {
          const n = Math.min(perJob, (m + 1) * perMat - r);
          jobs.push({
            tensor: i,
            start: r * rowBytes,
            bytes: n * rowBytes,
            elements: n * row,
            importance: imp[m]!,
          });
        }
      }
      return jobs;
    }
    for (let r = 0; r < rows || jobs.length === 0; r += perJob) {
      const n = Math.min(perJob, rows - r);
      jobs.push({ tensor: i, start: r * rowBytes, bytes: n * rowBytes, elements: n * row });
    }
    return jobs;
  });
  const allJobs = jobsOf.flat();
  const pool = new ConvertPool(threads);
  const results = new Map<Job, Promise<Uint8Array>>();
  let started = 0;
  let ahead = 0; // input bytes of the jobs started and not yet written
  const lookahead = threads * 2;
  const startUpTo = (k: number) => {
    for (
      ;
      started < allJobs.length && (started < k || ahead + allJobs[started]!.bytes <= LOOKAHEAD_BYTES);
      started++
    ) {
      const job = allJobs[started]!;
      const t = file.tensors[job.tensor]!;
      const p = plan[job.tensor]!;
      ahead += job.bytes;
      // The worker reads the range itself: the input never passes through this thread.
      const r = Promise.resolve().then(() =>
        pool.convert(
          tensorRange(file, t, job.start, job.bytes),
          p.from.id,
          p.to.id,
          job.elements,
          job.importance,
          t.name,
          t.dims[0] ?? 1,
        ),
      );
      r.catch(() => {}); // awaited in order below; avoid an unhandled rejection meanwhile
      results.set(job, r);
    }
  };

  const fileType = target.fileType;
  const metadata: GgufKV[] = [...file.metadata.entries()].filter(
    (kv) => kv.key !== "general.file_type" && kv.key !== "general.quantization_version",
  );
  if (fileType !== undefined)
    metadata.push({ key: "general.file_type", type: GgufValueType.UINT32, value: fileType });
  if (target.base.quantized)
    metadata.push({ key: "general.quantization_version", type: GgufValueType.UINT32, value: 2 });

  const totalIn = file.tensors.reduce((a, t) => a + t.byteSize, 0);
  const bar = new ProgressBar(`quantize ${target.name}`, totalIn);
  let doneIn = 0;
  let index = 0;
  try {
    const layout = await writeGguf(
      output!,
      metadata,
      file.tensors.map((t, i) => ({
        name: t.name,
        type: plan[i]!.to.id,
        dims: t.dims,
        data: async function* () {
          for (const job of jobsOf[i]!) {
            startUpTo(index + 1 + lookahead);
            const out = await results.get(job)!;
            results.delete(job);
            index++;
            ahead -= job.bytes;
            doneIn += job.bytes;
            bar.update(doneIn, t.name);
            yield out;
          }
        },
      })),
      { version: file.version as 2 | 3 },
    );
    const converted = plan.filter((p) => p.to.quantized && p.from.id !== p.to.id).length;
    bar.done(
      `${output}: ${target.name}, ${converted} of ${plan.length} tensors quantized; ` +
        `${(totalIn / 1048576).toFixed(1)} MiB -> ${(layout.fileSize / 1048576).toFixed(1)} MiB with ${threads} threads` +
        (quantizerSummary(pool.used) ? `, ${quantizerSummary(pool.used)}` : ""),
    );
  } finally {
    await pool.close();
  }
  return 0;
}

/** "5 Q4_K, 1 Q6_K": how many of `plans` get each type, most first. */
function countTypes(plans: readonly TensorPlan[]): string {
  const n = new Map<string, number>();
  for (const p of plans) n.set(p.to.name, (n.get(p.to.name) ?? 0) + 1);
  return [...n.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([type, k]) => `${k} ${type}`)
    .join(", ");
}

/**
 * The types a plan chose: one line for the file ("Q3_K_M: 112 tensors Q3_K, 28 Q4_K, …"), then
 * one per class of tensor (its name with the layer number as N) whose tensors are not all F32.
 */
export function planSummary(target: QuantTarget, plan: readonly TensorPlan[]): string {
  const lines = [`${target.name}${target.pure ? " (pure)" : ""}: ${plan.length} tensors ${countTypes(plan)}`];
  const classes = new Map<string, TensorPlan[]>();
  for (const p of plan) {
    const key = p.name.replace(/^blk\.\d+\./, "blk.N.");
    classes.set(key, [...(classes.get(key) ?? []), p]);
  }
  for (const [name, plans] of classes) {
    if (plans.every((p) => p.to.name === "F32")) continue;
    lines.push(`  ${name}: ${countTypes(plans)}`);
  }
  return `${lines.join("\n")}\n`;
}
