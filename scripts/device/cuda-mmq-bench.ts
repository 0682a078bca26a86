// GPU time of quantized products against 1..64 activation columns (a step of that many sequences
// decoding together), the int8 tensor-core kernel (native/cuda/ops/mmq.cuh, the default for 2..64
// columns) side by side with the paths it replaced (MINFER_CUDA_MMQ=0: the dp4a mat-vec up to 8
// columns, the f16 tensor-core GEMM beyond), on qwen2-7b's shapes. Run on the GPU machine.
//
// Each case is one graph of R products, each with its own copy of the weight (R copies of at
// least 160 MB together, so that they come from HBM and not from the 50 MB L2), against the same
// activations. Per node: the median GPU time of a profiled run (each node between two events, about
// 1.3 µs of it the events; the activation quantization and any split-K reduction included) and the
// bandwidth the weight's bytes over that time make. (The wall time of a replayed graph is no
// measure here: each run reads every output back.)
//   node dist/cuda-mmq-bench.js OUT_DIR [TYPES=Q4_0,Q4_K,Q6_K,Q8_0] [COLS=1,2,4,8,16,32,64] [VARIANTS] [SHAPES]
// VARIANTS: a comma list of environments, each `default` or NAME=VALUE[+NAME=VALUE] (default
// "default,MINFER_CUDA_MMQ=0"); one column is measured in every variant but those that set
// MINFER_CUDA_MMQ=0 and not MINFER_CUDA_MV1 (the mat-vec's shape for one column). SHAPES: a comma
// list of the shapes' names below (default "q/o,k/v,gate/up,down"; "output" is the 152,064-row output
// matrix, llama-quantize's Q6_K in its Q4_0 and Q4_K_M files).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cuda } from "../../packages/backend-cuda/src/index.js";
import { blockOf, DType, dtypeName, GraphBuilder } from "../../packages/ir/src/index.js";
import { Scheduler } from "../../packages/scheduler/src/index.js";
import { encodeValues } from "../../packages/scheduler/src/reference/dtype-io.js";

const SHAPES: readonly (readonly [number, number, string])[] = [
  [3584, 3584, "q/o"],
  [3584, 512, "k/v"],
  [3584, 18944, "gate/up"],
  [18944, 3584, "down"],
  [3584, 152064, "output"],
];
const out = process.argv[2] ?? ".";
const types = (process.argv[3] ?? "Q4_0,Q4_K,Q6_K,Q8_0").split(",");
const colsList = (process.argv[4] ?? "1,2,4,8,16,32,64").split(",").map(Number);
const variants = (process.argv[5] ?? "default,MINFER_CUDA_MMQ=0").split(",").map((v) => ({
  label: v,
  env: Object.fromEntries(
    v === "default"
      ? []
      : v.split("+").map((kv) => {
          const eq = kv.indexOf("=");
          if (eq < 1)
            throw new Error(`cuda-mmq-bench: a variant is default or NAME=VALUE, not ${JSON.stringify(kv)}`);
          return [kv.slice(0, eq), kv.slice(eq + 1)];
        }),
  ) as Record<string, string>,
}));
const shapeNames = (process.argv[6] || "q/o,k/v,gate/up,down").split(",");
for (const name of shapeNames)
  if (!SHAPES.some(([, , role]) => role === name))
    throw new Error(
      `cuda-mmq-bench: no shape ${JSON.stringify(name)} (${SHAPES.map(([, , r]) => r).join(", ")})`,
    );
const MIN_BYTES = 160e6;

/** A [k, m] weight of `dtype`: 64 rows of random values quantized, repeated (bandwidth only). */
function weightBytes(dtype: DType, k: number, m: number): Uint8Array {
  const rows = 64;
  const seedRows = encodeValues(
    dtype,
    [k, rows, 1, 1],
    Array.from({ length: k * rows }, (_, i) => Math.sin(i * 12.9898) * 0.5),
  );
  const rowBytes = (k / blockOf(dtype).blockSize) * blockOf(dtype).typeSize;
  const bytes = new Uint8Array(rowBytes * m);
  for (let r = 0; r < m; r += rows)
    bytes.set(seedRows.subarray(0, Math.min(rows, m - r) * rowBytes), r * rowBytes);
  return bytes;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const lines: string[] = [];
const say = (s: string) => {
  lines.push(s);
  console.log(s);
};
say("variant  type  shape (k × m)          cols   node µs    GB/s   (R copies)");
for (const { label, env } of variants) {
  Object.assign(process.env, env);
  const rt = await cuda.devices()[0]!.init();
  for (const k of Object.keys(env)) delete process.env[k];
  for (const t of types) {
    const dtype = DType[t as keyof typeof DType] as DType;
    for (const [k, m, role] of SHAPES.filter(([, , r]) => shapeNames.includes(r))) {
      const bytes = weightBytes(dtype, k, m);
      const copies = Math.max(4, Math.min(96, Math.ceil(MIN_BYTES / bytes.length)));
      const buffers = [];
      const weights = new Map<string, { buffer: ReturnType<typeof rt.allocate> }>();
      for (let i = 0; i < copies; i++) {
        const buffer = rt.allocate(bytes.length, `w${i}`);
        await rt.write(buffer, 0, bytes);
        buffers.push(buffer);
        weights.set(`w${i}`, { buffer });
      }
      for (const cols of colsList) {
        // (one column is the mat-vec whatever MINFER_CUDA_MMQ says: measured again only with another shape)
        if (cols === 1 && env.MINFER_CUDA_MMQ === "0" && env.MINFER_CUDA_MV1 === undefined) continue;
        const b = new GraphBuilder();
        const x = b.input("x", DType.F32, [k, cols]);
        for (let i = 0; i < copies; i++) b.output(b.mulMat(b.weight(`w${i}`, dtype, [k, m]), x));
        const graph = b.build();
        const xs = new Float32Array(k * cols).map((_, i) => Math.cos(i * 0.37));
        const inputs = new Map([[x, xs]]);
        const scheduler = new Scheduler({ runtimes: [rt], weights });
        const ex = scheduler.prepare(graph).executor;
        for (let i = 0; i < 3; i++) await ex.run(inputs); // run, capture, replay
        const per: number[] = [];
        for (let rep = 0; rep < 3; rep++) {
          const prof = await ex.run(inputs, { profile: true });
          const rows = prof.timing!.rows.filter((r) => r.op.startsWith("MUL_MAT"));
          per.push(median(rows.map((r) => r.micros)));
        }
        const us = median(per);
        say(
          `${label.padEnd(8)} ${dtypeName(dtype).padEnd(5)} ${`${k} × ${m} (${role})`.padEnd(22)} ${String(cols).padStart(4)} ${us.toFixed(2).padStart(9)} ${(bytes.length / us / 1e3).toFixed(0).padStart(7)}   (${copies})`,
        );
        scheduler.dispose();
      }
      for (const buf of buffers) buf.dispose();
    }
  }
  rt.dispose();
}
writeFileSync(join(out, "mmq-bench.txt"), `${lines.join("\n")}\n`);
