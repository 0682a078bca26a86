import { availableParallelism } from "node:os";
import {
  type GgufKV,
  GgufValueType,
  llamaQuantTarget,
  modelFacts,
  planQuantization,
  type QuantTarget,
  readGguf,
  readTensorRange,
  type TensorPlan,
  writeGguf,
} from "@minfer/gguf";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { ProgressBar } from "../progress.js";
import { ConvertPool } from "../worker-pool.js";

export const quantizeOptions: OptionSpec[] = [
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

interface Job {
  tensor: number;
  start: number;
  bytes: number;
  elements: number;
}

export async function quantizeCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, quantizeOptions);
  const [input, output, typeName] = expectPositionals(positionals, ["IN", "OUT", "TYPE"]);
  const threads = (options.threads as number | undefined) ?? availableParallelism();
  if (threads < 1) throw new CliError("INVALID_ARGUMENT", `--threads must be at least 1, got ${threads}`);
  // One of llama.cpp's mixes (q4_k_m, q4_0, …), or a plain ggml type such as q4_k or f16.
  const target = llamaQuantTarget(typeName!, { pure: Boolean(options.pure) });
  const file = await readGguf(input!);
  const plan = planQuantization(
    file.tensors,
    target,
    Boolean(options.allowRequantize),
    modelFacts(file.metadata),
  );
  for (const p of plan) if (p.note) process.stderr.write(`note: ${p.name}: ${p.note}\n`);
  process.stderr.write(planSummary(target, plan));

  // Cut every tensor into jobs of whole rows.
  const jobsOf: Job[][] = file.tensors.map((t, i) => {
    const row = t.dims[0] ?? 1;
    const rows = t.nElements / Math.max(row, 1);
    const rowBytes = t.byteSize / Math.max(rows, 1);
    const perJob = Math.max(1, Math.floor(JOB_ELEMENTS / Math.max(row, 1)));
    const jobs: Job[] = [];
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
  const lookahead = threads * 2;
  const startUpTo = (k: number) => {
    for (; started < Math.min(k, allJobs.length); started++) {
      const job = allJobs[started]!;
      const t = file.tensors[job.tensor]!;
      const p = plan[job.tensor]!;
      const r = readTensorRange(file, t, job.start, job.bytes).then((data) =>
        pool.convert(data, p.from.id, p.to.id, job.elements),
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
        `${(totalIn / 1048576).toFixed(1)} MiB -> ${(layout.fileSize / 1048576).toFixed(1)} MiB with ${threads} threads`,
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
