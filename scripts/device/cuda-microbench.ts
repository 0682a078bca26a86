// Per-kernel GPU time of decode-shaped ops (qwen2-7b: width 3584, FFN 18944, 28 q heads and 4 kv
// heads of 128; attention also for 16 sequences stepping together), run on the GPU machine. Each case is one graph of REPS copies of an op (the same
// inputs, separate outputs), so the time per copy is what a node costs inside a replayed decode
// graph: per-node GPU times from a profiled run (events captured with the nodes; about 1.3 µs of
// each is the event node itself), and the wall time of a whole replayed graph divided by REPS.
// Variants: MINFER_CUDA_PDL=0 (every case), MINFER_CUDA_DECODE_ATTN=tile and =vec and
// MINFER_CUDA_ATTN_PER_QUERY=0 (attention).
//   node dist/cuda-microbench.js OUT_DIR
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cuda } from "../../packages/backend-cuda/src/index.js";
import { DType, Op } from "../../packages/ir/src/index.js";
import { buildCase, type ConformanceCase } from "../../packages/scheduler/src/conformance/cases.js";
import { caseData } from "../../packages/scheduler/src/conformance/harness.js";
import { Scheduler } from "../../packages/scheduler/src/index.js";

const REPS = 32;
// The builder and tensor types the conformance cases use.
type GraphBuilder = Parameters<ConformanceCase["build"]>[0];
type Tensor = ReturnType<GraphBuilder["input"]>;
const { F32, F16, I32, Q4_0, Q4_K } = DType;

function repeated(
  name: string,
  op: (b: GraphBuilder) => Tensor,
  data?: ConformanceCase["data"],
): ConformanceCase {
  return {
    name,
    op: "ADD",
    dtypes: [],
    tolerance: 1,
    build: (b) => {
      for (let i = 0; i < REPS; i++) b.output(op(b));
    },
    ...(data ? { data } : {}),
  };
}

// Inputs are made once per builder (the builder is fresh per case; tensors by name).
const memo = new WeakMap<GraphBuilder, Map<string, Tensor>>();
function once(b: GraphBuilder, key: string, make: () => Tensor): Tensor {
  const m = memo.get(b) ?? new Map<string, Tensor>();
  memo.set(b, m);
  const t = m.get(key) ?? make();
  m.set(key, t);
  return t;
}

// A product of a [3584, rows] weight and `cols` activation columns (the width of qwen2-7b).
function mulMat(type: "Q4_0" | "Q4_K", rows: number, cols: number, note = ""): ConformanceCase {
  const x = cols === 1 ? "[3584]" : `[3584, ${cols}]`;
  return repeated(`MUL_MAT ${type} [3584, ${rows}] x ${x}${note}`, (b) =>
    b.mulMat(
      once(b, "w", () => b.weight("w", type === "Q4_0" ? Q4_0 : Q4_K, [3584, rows])),
      once(b, "x", () => b.input("x", F32, [3584, cols])),
    ),
  );
}

function attention(depth: number, nKv: number): ConformanceCase {
  return repeated(
    `ATTENTION decode depth ${depth} (28:4 heads of 128, F16 cache of ${nKv})`,
    (b) => {
      const q = once(b, "q", () => b.input("q", F32, [128, 28, 1]));
      const k = once(b, "k", () => b.input("k", F16, [128, 4, nKv]));
      const v = once(b, "v", () => b.input("v", F16, [128, 4, nKv]));
      const s = once(b, "spans", () => b.input("spans", I32, [2, 1]));
      return b.attention(q, k, v, s, { scale: 1 / Math.sqrt(128) });
    },
    { spans: () => [0, depth] },
  );
}

// 16 sequences decoding together (`serve -np 16`): one query each, each seeing its own region of
// `region` cells (depth cells used), as spans.
function attentionStreams(streams: number, region: number, depth: number): ConformanceCase {
  const nKv = streams * region;
  return repeated(
    `ATTENTION ${streams} queries, own regions of ${region} (depth ${depth}), spans`,
    (b) => {
      const q = once(b, "q", () => b.input("q", F32, [128, 28, streams]));
      const k = once(b, "k", () => b.input("k", F16, [128, 4, nKv]));
      const v = once(b, "v", () => b.input("v", F16, [128, 4, nKv]));
      const s = once(b, "spans", () => b.input("spans", I32, [2, streams]));
      return b.attention(q, k, v, s, { scale: 1 / Math.sqrt(128) });
    },
    { spans: () => Array.from({ length: streams }, (_, i) => [i * region, i * region + depth]).flat() },
  );
}

const cases: ConformanceCase[] = [
  repeated("ADD [1] (a node's fixed cost)", (b) =>
    b.add(
      once(b, "a", () => b.input("a", F32, [1])),
      once(b, "b", () => b.input("b", F32, [1])),
    ),
  ),
  repeated("RMS_NORM_MUL [3584]", (b) => {
    const x = once(b, "x", () => b.input("x", F32, [3584]));
    const w = once(b, "w", () => b.input("w", F32, [3584]));
    return b.node(Op.RMS_NORM_MUL, [x, w], [1e-6])[0]!;
  }),
  repeated("SWIGLU [18944]", (b) =>
    b.swiglu(
      once(b, "g", () => b.input("g", F32, [18944])),
      once(b, "u", () => b.input("u", F32, [18944])),
    ),
  ),
  mulMat("Q4_0", 3584, 1),
  mulMat("Q4_0", 18944, 1, " (gate)"),
  // a step of 16 sequences: 16 activation columns (gemm_tc; a 16-column mat-vec measured slower)
  mulMat("Q4_0", 3584, 16, " (16 sequences)"),
  mulMat("Q4_K", 18944, 16, " (16 sequences)"),
  attention(64, 640),
  attention(516, 1024),
  attention(4096, 4736),
  attentionStreams(16, 256, 100),
  // the sampler's candidates: the 64 best ids of each logits row (152,064-token vocabulary)
  repeated("TOP_K [152064] k=64", (b) =>
    b.topK(
      once(b, "l", () => b.input("l", F32, [152064])),
      64,
    ),
  ),
  repeated("TOP_K [152064, 64] k=64", (b) =>
    b.topK(
      once(b, "l", () => b.input("l", F32, [152064, 64])),
      64,
    ),
  ),
];

const out = process.argv[2] ?? ".";
const lines: string[] = [];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const variant of [
  {},
  { MINFER_CUDA_PDL: "0" },
  { MINFER_CUDA_DECODE_ATTN: "tile" },
  { MINFER_CUDA_DECODE_ATTN: "vec" },
  { MINFER_CUDA_ATTN_PER_QUERY: "0" },
] as Record<string, string>[]) {
  Object.assign(process.env, variant);
  const rt = await cuda.devices()[0]!.init();
  for (const k of Object.keys(variant)) delete process.env[k];
  const label =
    Object.entries(variant)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ") || "default";
  for (const c of cases) {
    if (
      (variant.MINFER_CUDA_DECODE_ATTN || variant.MINFER_CUDA_ATTN_PER_QUERY) &&
      !c.name.startsWith("ATTENTION")
    )
      continue;
    const graph = buildCase(c);
    const data = caseData(c, graph);
    const weights = new Map<string, { buffer: ReturnType<typeof rt.allocate> }>();
    const inputs = new Map<Tensor, ArrayBufferView>();
    const owned: { dispose(): void }[] = [];
    for (const [t, bytes] of data) {
      if (t.kind === "input") {
        inputs.set(t, bytes);
        continue;
      }
      const buffer = rt.allocate(bytes.length, t.name);
      owned.push(buffer);
      await rt.write(buffer, 0, bytes);
      weights.set(t.source ?? t.name, { buffer });
    }
    const scheduler = new Scheduler({ runtimes: [rt], weights });
    const ex = scheduler.prepare(graph).executor;
    for (let i = 0; i < 3; i++) await ex.run(inputs); // run, capture, replay
    const t0 = performance.now();
    const runs = 20;
    for (let i = 0; i < runs; i++) await ex.run(inputs);
    const wallUs = ((performance.now() - t0) * 1000) / runs / REPS;
    const prof = await ex.run(inputs, { profile: true });
    const rows = prof.timing!.rows.filter((r) => r.op !== "COPY");
    const per = median(rows.map((r) => r.micros));
    lines.push(
      `${label.padEnd(22)} ${c.name.padEnd(58)} node ${per.toFixed(2).padStart(6)} µs   wall/node ${wallUs.toFixed(2).padStart(6)} µs`,
    );
    console.log(lines.at(-1));
    scheduler.dispose();
    for (const o of owned) o.dispose();
  }
  rt.dispose();
}
writeFileSync(join(out, "microbench.txt"), `${lines.join("\n")}\n`);
