import {
  blockOf,
  DType,
  dtypeName,
  FLOAT_DTYPES,
  GraphBuilder,
  isQuantized,
  Op,
  type OpName,
  type Tensor,
  WEIGHT_DTYPES,
} from "@minfer/ir";
import { canWrite } from "../reference/dtype-io.js";
import type { Rng } from "./prng.js";

/**
 * Largest normalised mean squared error, Σ(out − ref)² / Σ ref², a device may show against the
 * float64 reference; 0 = exact (integer outputs). Per dtype: what rounding inputs, activations
 * (ggml quantizes activations to Q8 for quantized weights) or outputs to that dtype may cost.
 */
export const TOLERANCE: Readonly<Record<string, number>> = {
  F32: 1e-6,
  F16: 1e-5,
  BF16: 1e-4,
  I32: 0,
  Q8_0: 5e-4,
  QUANTIZED: 5e-4,
  /** Outputs written in a quantized dtype (CPY, SET_ROWS): rounding choices may differ. */
  QUANTIZED_OUTPUT: 1e-2,
};

/** One op-conformance case: a tiny one-op graph, its inputs' data, and its tolerance. */
export interface ConformanceCase {
  /** Unique, e.g. `"MUL_MAT a=Q4_K b=F32 [256, 33]×[256, 7]"`; also the seed of its inputs. */
  readonly name: string;
  readonly op: OpName;
  /** The dtypes the case exercises (for the coverage count). */
  readonly dtypes: readonly string[];
  /** Builds the graph (inputs, weights, state, the op, outputs) on a fresh builder. */
  build(b: GraphBuilder): void;
  /** Values for tensors (by name) that must not be uniform in [−1, 1): indices, positions, masks. */
  readonly data?: Readonly<Record<string, (rng: Rng, t: Tensor) => number[]>>;
  /** Max NMSE against the reference (0 = exact). */
  readonly tolerance: number;
}

const { F32, F16, BF16, I32 } = DType;
const n = dtypeName;

/**
 * Weight types of the GGUF files people download that the backends run with scalar kernels so
 * far (the CPU's; CUDA has none yet): the i-quants, the ternary types and MXFP4. They have no
 * reference quantizer, so their weights are pseudo-random valid blocks (harness.ts). Each takes a
 * few shapes (GET_ROWS, MUL_MAT of one column, a few, a long k and a prompt, F16 activations,
 * MUL_MAT_ADD, MUL_MAT_ID, MUL_MAT_MULTI) rather than every weight loop's cross product, whose
 * shapes aim at tuned paths (CUDA's int8 tiles, mat-vec, panel GEMMs): a type moves to
 * FULL_WEIGHT_DTYPES when a backend gains kernels of that kind for it.
 */
export const SPOT_CHECKED_WEIGHT_DTYPES: readonly DType[] = [
  DType.IQ2_XXS,
  DType.IQ2_XS,
  DType.IQ2_S,
  DType.IQ3_XXS,
  DType.IQ3_S,
  DType.IQ1_S,
  DType.IQ1_M,
  DType.IQ4_NL,
  DType.IQ4_XS,
  DType.TQ1_0,
  DType.TQ2_0,
  DType.MXFP4,
];
/** The other weight types: every weight loop's shapes. */
export const FULL_WEIGHT_DTYPES: readonly DType[] = WEIGHT_DTYPES.filter(
  (d) => !SPOT_CHECKED_WEIGHT_DTYPES.includes(d),
);

function tol(...dtypes: DType[]): number {
  return Math.max(...dtypes.map((d) => (isQuantized(d) ? TOLERANCE.QUANTIZED! : TOLERANCE[n(d)]!)));
}

/** A row length that is a whole number of blocks: `odd` for float types, else the block size × k. */
function rowLen(d: DType, odd: number, blocks = 1): number {
  const bs = blockOf(d).blockSize;
  return bs === 1 ? odd : bs * blocks;
}

const cases: ConformanceCase[] = [];
function add(c: ConformanceCase): void {
  if (cases.some((x) => x.name === c.name)) throw new Error(`duplicate conformance case ${c.name}`);
  cases.push(c);
}

const shape = (ne: readonly number[]) => `[${ne.join(", ")}]`;
const ints = (values: number[]) => () => values;
const iota = (count: number, limit: number) => (rng: Rng) =>
  Array.from({ length: count }, () => rng.int(0, limit));

/** A non-contiguous F32 [ne0, ne1] input: the transpose of a [ne1, ne0] input. */
function transposed(b: GraphBuilder, name: string, ne0: number, ne1: number): Tensor {
  return b.transpose(b.input(`${name}_t`, F32, [ne1, ne0]), name);
}

/** A row-strided F32 [ne0, ne1] view (rows padded by 3 elements) of a larger input. */
function padded(b: GraphBuilder, name: string, ne0: number, ne1: number, d: DType = F32): Tensor {
  const src = b.input(`${name}_pad`, d, [ne0 + 3, ne1]);
  return b.view(src, [ne0, ne1], [src.nb[0], src.nb[1]], 0, name);
}

// ---- GET_ROWS: every weight dtype, one row and several, 3-D with per-slice indices ----
for (const d of WEIGHT_DTYPES) {
  const ne0 = rowLen(d, 33);
  for (const rows of [1, 5]) {
    add({
      name: `GET_ROWS a=${n(d)} ${shape([ne0, 10])} rows=${rows}`,
      op: "GET_ROWS",
      dtypes: [n(d)],
      build: (b) => b.output(b.getRows(b.input("a", d, [ne0, 10]), b.input("idx", I32, [rows]))),
      data: { idx: iota(rows, 10) },
      tolerance: tol(d),
    });
  }
}
add({
  name: "GET_ROWS a=F32 [65, 6, 3] idx=[4, 3]",
  op: "GET_ROWS",
  dtypes: ["F32"],
  build: (b) => b.output(b.getRows(b.input("a", F32, [65, 6, 3]), b.input("idx", I32, [4, 3]))),
  data: { idx: iota(12, 6) },
  tolerance: tol(F32),
});
// A decode graph's candidate logits: each logits row [1000, 5] a plane of one-element rows,
// gathered by that row's 8 ids (@minfer/models CANDIDATE_LOGITS_OUTPUT).
add({
  name: "GET_ROWS a=F32 [1, 1000, 5] (a logits view) idx=[8, 5]",
  op: "GET_ROWS",
  dtypes: ["F32"],
  build: (b) =>
    b.output(b.getRows(b.reshape(b.input("a", F32, [1000, 5]), [1, 1000, 5]), b.input("idx", I32, [8, 5]))),
  data: { idx: iota(40, 1000) },
  tolerance: tol(F32),
});

// ---- MUL_MAT: every weight dtype (FULL_WEIGHT_DTYPES; the spot-checked ones below) × every activation
// dtype × one/many tokens; odd k; batches; views ----
// (13 tokens: a step of several sequences, past 8 and below 16 columns)
for (const a of FULL_WEIGHT_DTYPES)
  for (const bd of FLOAT_DTYPES)
    for (const tokens of [1, 7, 13]) {
      const k = 256;
      add({
        name: `MUL_MAT a=${n(a)} b=${n(bd)} ${shape([k, 33])}×${shape([k, tokens])}`,
        op: "MUL_MAT",
        dtypes: [n(a), n(bd)],
        build: (b) => b.output(b.mulMat(b.weight("w", a, [k, 33]), b.input("x", bd, [k, tokens]))),
        tolerance: tol(a, bd),
      });
    }
// Prefill shapes: enough tokens for the CPU's panel GEMM (≥ 8 columns), rows not a multiple of its
// 32-row panels.
for (const a of WEIGHT_DTYPES) {
  const k = 512;
  add({
    name: `MUL_MAT a=${n(a)} b=F32 prefill ${shape([k, 70])}×${shape([k, 19])}`,
    op: "MUL_MAT",
    dtypes: [n(a), "F32"],
    build: (b) => b.output(b.mulMat(b.weight("w", a, [k, 70]), b.input("x", F32, [k, 19]))),
    tolerance: tol(a),
  });
}
// The int8 tensor-core products of a few columns (CUDA's ops/mmq.cuh, by default 2..64; more in
// column tiles of 64 when MINFER_CUDA_MMQ asks): rows past one 64-row block and not a multiple of
// it, three k-tiles of 256 (split over blocks), column tiles of 8 to 64 and three tiles of 64, 64
// and 2 columns (130); a short last k-tile (5 blocks of 32); and shapes whose blocks run several
// k-tiles each, through every stage of the pipeline.
for (const a of FULL_WEIGHT_DTYPES.filter(isQuantized))
  for (const tokens of [2, 9, 33, 64, 130]) {
    const k = 768;
    add({
      name: `MUL_MAT a=${n(a)} b=F32 few-columns ${shape([k, 130])}×${shape([k, tokens])}`,
      op: "MUL_MAT",
      dtypes: [n(a), "F32"],
      build: (b) => b.output(b.mulMat(b.weight("w", a, [k, 130]), b.input("x", F32, [k, tokens]))),
      tolerance: tol(a),
    });
  }
for (const a of WEIGHT_DTYPES.filter((d) => isQuantized(d) && blockOf(d).blockSize === 32))
  add({
    name: `MUL_MAT a=${n(a)} b=F32 short-tile ${shape([160, 70])}×${shape([160, 16])}`,
    op: "MUL_MAT",
    dtypes: [n(a), "F32"],
    build: (b) => b.output(b.mulMat(b.weight("w", a, [160, 70]), b.input("x", F32, [160, 16]))),
    tolerance: tol(a),
  });
// (3-4 columns over a K above 4096: CUDA's mat-vec with 4 warps a row pair for the 32-element types,
// Q4_0's on the kernel held to 72 registers; an odd row count leaves the last pair one row)
for (const [a, tokens, rows] of [
  [DType.Q4_0, 2, 100],
  [DType.Q4_0, 4, 100],
  [DType.Q4_0, 3, 99],
  [DType.Q8_0, 3, 100],
  [DType.Q4_K, 5, 100],
] as const)
  add({
    name: `MUL_MAT a=${n(a)} b=F32 long-k ${shape([24576, rows])}×${shape([24576, tokens])}`,
    op: "MUL_MAT",
    dtypes: [n(a), "F32"],
    build: (b) => b.output(b.mulMat(b.weight("w", a, [24576, rows]), b.input("x", F32, [24576, tokens]))),
    tolerance: tol(a),
  });
// Products of at least 2^23 weight elements at 16-64 columns, which CUDA's int8 kernel runs in blocks
// of 128 rows by default (MINFER_CUDA_MMQ_ROWS=auto): rows not a multiple of 128, a partial column
// tile of 64 (Q4_0; Q6_K's 40 columns take the f16 GEMM by default, its 16 the int8 kernel).
for (const a of [DType.Q4_0, DType.Q6_K])
  for (const tokens of [16, 40])
    add({
      name: `MUL_MAT a=${n(a)} b=F32 large-few-columns ${shape([4096, 2200])}×${shape([4096, tokens])}`,
      op: "MUL_MAT",
      dtypes: [n(a), "F32"],
      build: (b) => b.output(b.mulMat(b.weight("w", a, [4096, 2200]), b.input("x", F32, [4096, tokens]))),
      tolerance: tol(a),
    });
// Decode shapes of one and two columns (CUDA's dp4a mat-vec, ops/matvec_q.cuh): k of 128 parts of
// 32, four per lane, with rows 4-byte aligned for every type (Q3_K and Q6_K too); and more than
// 4096 rows (two rows a warp), not a multiple of the 8 rows a block takes.
for (const [label, k, m, types] of [
  ["decode", 4096, 40, FULL_WEIGHT_DTYPES.filter(isQuantized)],
  ["many-rows", 512, 4100, [DType.Q4_0, DType.Q8_0, DType.Q4_K, DType.Q6_K]],
] as const)
  for (const a of types)
    for (const tokens of [1, 2])
      add({
        name: `MUL_MAT a=${n(a)} b=F32 ${label} ${shape([k, m])}×${shape([k, tokens])}`,
        op: "MUL_MAT",
        dtypes: [n(a), "F32"],
        build: (b) => b.output(b.mulMat(b.weight("w", a, [k, m]), b.input("x", F32, [k, tokens]))),
        tolerance: tol(a),
      });
// The spot-checked weight types (with the prefill, short-tile, GET_ROWS and MUL_MAT_ID loops, which
// take every weight type): one column and a few over k = 256 (one block of 256, eight of 32), F16
// activations, and one column over a k of 4096 (16 blocks of 256 a row).
for (const a of SPOT_CHECKED_WEIGHT_DTYPES) {
  for (const [bd, tokens] of [
    [F32, 1],
    [F32, 7],
    [F16, 7],
  ] as const) {
    const k = 256;
    add({
      name: `MUL_MAT a=${n(a)} b=${n(bd)} ${shape([k, 33])}×${shape([k, tokens])}`,
      op: "MUL_MAT",
      dtypes: [n(a), n(bd)],
      build: (b) => b.output(b.mulMat(b.weight("w", a, [k, 33]), b.input("x", bd, [k, tokens]))),
      tolerance: tol(a, bd),
    });
  }
  add({
    name: `MUL_MAT a=${n(a)} b=F32 decode ${shape([4096, 40])}×${shape([4096, 1])}`,
    op: "MUL_MAT",
    dtypes: [n(a), "F32"],
    build: (b) => b.output(b.mulMat(b.weight("w", a, [4096, 40]), b.input("x", F32, [4096, 1]))),
    tolerance: tol(a),
  });
}
for (const d of FLOAT_DTYPES)
  for (const [k, m, tokens] of [
    [33, 17, 1],
    [65, 9, 7],
    [257, 3, 2],
  ] as const) {
    add({
      name: `MUL_MAT a=${n(d)} b=F32 odd ${shape([k, m])}×${shape([k, tokens])}`,
      op: "MUL_MAT",
      dtypes: [n(d), "F32"],
      build: (b) => b.output(b.mulMat(b.input("a", d, [k, m]), b.input("x", F32, [k, tokens]))),
      tolerance: tol(d),
    });
  }
add({
  name: "MUL_MAT a=F32 b=F32 broadcast [64, 5, 2, 1]×[64, 3, 4, 2]",
  op: "MUL_MAT",
  dtypes: ["F32"],
  build: (b) => b.output(b.mulMat(b.input("a", F32, [64, 5, 2, 1]), b.input("x", F32, [64, 3, 4, 2]))),
  tolerance: tol(F32),
});
add({
  name: "MUL_MAT a=F16 b=F32 broadcast [32, 7, 2]×[32, 1, 6]",
  op: "MUL_MAT",
  dtypes: ["F16", "F32"],
  build: (b) => b.output(b.mulMat(b.input("a", F16, [32, 7, 2]), b.input("x", F32, [32, 1, 6]))),
  tolerance: tol(F16),
});
add({
  name: "MUL_MAT a=Q8_0 b=F32 transposed-b [64, 9]×[64, 5]",
  op: "MUL_MAT",
  dtypes: ["Q8_0", "F32"],
  build: (b) => b.output(b.mulMat(b.weight("w", DType.Q8_0, [64, 9]), transposed(b, "x", 64, 5))),
  tolerance: tol(DType.Q8_0),
});
add({
  name: "MUL_MAT a=F32 b=F32 row-strided [33, 7]×[33, 4]",
  op: "MUL_MAT",
  dtypes: ["F32"],
  build: (b) => b.output(b.mulMat(padded(b, "a", 33, 7), padded(b, "x", 33, 4))),
  tolerance: tol(F32),
});
add({
  name: "MUL_MAT a=F16 b=F32 transposed-b [33, 7]×[33, 3]",
  op: "MUL_MAT",
  dtypes: ["F16", "F32"],
  build: (b) => b.output(b.mulMat(b.input("a", F16, [33, 7]), transposed(b, "x", 33, 3))),
  tolerance: tol(F16),
});

// ---- MUL_MAT of weight views: a row range at a non-zero row offset of a fused weight (phi3's
// attn_qkv [k, nQ + 2·nKv], ffn_up [k, 2·nFf]) as the first operand; decode, a few tokens, and
// prefill (a CPU's panel GEMM, a GPU's tensor-core GEMM). The view keeps the weight's row stride. ----
const VIEW_DTYPES = [F32, F16, DType.Q8_0, DType.Q4_0, DType.Q4_K, DType.Q6_K] as const;
/** Rows [r0, r0 + m) of a weight [k, rows] (whole rows, so quantized blocks stay intact). */
function weightRows(b: GraphBuilder, w: Tensor, r0: number, m: number, name: string): Tensor {
  return b.view(w, [w.ne[0], m], [w.nb[0], w.nb[1]], r0 * w.nb[1], name);
}
for (const d of VIEW_DTYPES)
  for (const tokens of [1, 7, 19]) {
    const k = 256;
    add({
      name: `MUL_MAT a=${n(d)} view rows 40..109 of [${k}, 160] b=F32 ${shape([k, tokens])}`,
      op: "MUL_MAT",
      dtypes: [n(d), "F32"],
      build: (b) => {
        const w = b.weight("w_fused", d, [k, 160]);
        b.output(b.mulMat(weightRows(b, w, 40, 70, "w_rows"), b.input("x", F32, [k, tokens])));
      },
      tolerance: tol(d),
    });
  }
// q, k and v as views of one fused weight, multiplied together (what fusion makes of the three
// MUL_MATs), with and without biases; gate and up as the two halves of one weight.
for (const d of [F16, DType.Q8_0, DType.Q4_K, DType.Q6_K])
  for (const tokens of [1, 19]) {
    const k = 256;
    for (const biased of [false, true]) {
      add({
        name: `MUL_MAT_MULTI${biased ? "+c" : ""} x=F32 w=${n(d)} q/k/v views of [${k}, 128] rows 64+32+32 ${shape([k, tokens])}`,
        op: "MUL_MAT_MULTI",
        dtypes: ["F32", n(d)],
        build: (b) => {
          const w = b.weight("attn_qkv", d, [k, 128]);
          const views = [
            [0, 64],
            [64, 32],
            [96, 32],
          ].map(([r0, m], i) => weightRows(b, w, r0!, m!, `w${i}`));
          const cs = biased ? [64, 32, 32].map((m, i) => b.weight(`c${i}`, F32, [m])) : [];
          for (const o of b.node(Op.MUL_MAT_MULTI, [b.input("x", F32, [k, tokens]), ...views, ...cs], []))
            b.output(o);
        },
        tolerance: tol(d),
      });
    }
    add({
      name: `MUL_MAT_MULTI x=F32 w=${n(d)} gate/up halves of [${k}, 2·96] ${shape([k, tokens])}`,
      op: "MUL_MAT_MULTI",
      dtypes: ["F32", n(d)],
      build: (b) => {
        const w = b.weight("ffn_up", d, [k, 192]);
        const x = b.input("x", F32, [k, tokens]);
        for (const o of b.node(
          Op.MUL_MAT_MULTI,
          [x, weightRows(b, w, 0, 96, "gate"), weightRows(b, w, 96, 96, "up")],
          [],
        ))
          b.output(o);
      },
      tolerance: tol(d),
    });
  }
for (const d of [F32, DType.Q8_0, DType.Q4_0])
  for (const tokens of [1, 19]) {
    const k = 256;
    add({
      name: `MUL_MAT_ADD a=${n(d)} view rows 96..127 of [${k}, 128] b=F32 ${shape([k, tokens])} c=[32]`,
      op: "MUL_MAT_ADD",
      dtypes: [n(d), "F32"],
      build: (b) => {
        const w = b.weight("attn_qkv", d, [k, 128]);
        const out = b.node(
          Op.MUL_MAT_ADD,
          [weightRows(b, w, 96, 32, "wv"), b.input("x", F32, [k, tokens]), b.weight("bv", F32, [32])],
          [],
        );
        b.output(out[0]!);
      },
      tolerance: tol(d),
    });
  }

// ---- ADD / MUL: same shape, broadcast rows/columns/batches, one token, non-contiguous ----
for (const op of ["ADD", "MUL"] as const) {
  const f = (b: GraphBuilder, x: Tensor, y: Tensor) => (op === "ADD" ? b.add(x, y) : b.mul(x, y));
  for (const [an, bn] of [
    [
      [33, 7],
      [33, 7],
    ],
    [[33, 7], [33]],
    [
      [33, 7, 4],
      [33, 1, 4],
    ],
    [
      [33, 7, 4],
      [1, 7, 1],
    ],
    [[257], [257]],
    [
      [12, 5, 3, 2],
      [4, 1, 3, 1],
    ],
  ] as const) {
    add({
      name: `${op} F32 ${shape(an)} ${shape(bn)}`,
      op,
      dtypes: ["F32"],
      build: (b) => b.output(f(b, b.input("a", F32, an), b.input("b", F32, bn))),
      tolerance: tol(F32),
    });
  }
  add({
    name: `${op} F32 transposed [33, 7] + [33, 7]`,
    op,
    dtypes: ["F32"],
    build: (b) => b.output(f(b, transposed(b, "a", 33, 7), b.input("b", F32, [33, 7]))),
    tolerance: tol(F32),
  });
}

// ---- unary ops: SCALE, SILU, GELU, TANH, RMS_NORM, NORM ----
// [4100, 2]: a GPU's few-row norms cut a row into slices of 256 (a partial last one).
const unaryShapes = [[33, 7], [257], [5, 3, 2, 2], [4100, 2]] as const;
const unary: [OpName, (b: GraphBuilder, a: Tensor) => Tensor][] = [
  ["SCALE", (b, a) => b.scale(a, 0.37, 0.25)],
  ["SILU", (b, a) => b.silu(a)],
  ["GELU", (b, a) => b.gelu(a)],
  ["TANH", (b, a) => b.tanh(a)],
  ["RMS_NORM", (b, a) => b.rmsNorm(a, 1e-6)],
  ["NORM", (b, a) => b.norm(a, 1e-5)],
];
for (const [op, f] of unary) {
  for (const ne of unaryShapes) {
    add({
      name: `${op} F32 ${shape(ne)}`,
      op,
      dtypes: ["F32"],
      build: (b) => b.output(f(b, b.input("a", F32, ne))),
      data: {
        a: (rng, t) =>
          Array.from({ length: t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3] }, () => rng.uniform(-4, 4)),
      },
      tolerance: tol(F32),
    });
  }
  add({
    name: `${op} F32 row-strided [65, 3]`,
    op,
    dtypes: ["F32"],
    build: (b) => b.output(f(b, padded(b, "a", 65, 3))),
    tolerance: tol(F32),
  });
}

// TANH over the range logit soft-capping sees (saturated far out, tiny near 0), and gemma2's final
// soft-cap as the models build it: c · tanh(logits / c).
const spread = (lo: number, hi: number) => (rng: Rng, t: Tensor) =>
  Array.from({ length: t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3] }, (_, i) =>
    i % 7 === 0 ? rng.uniform(-1e-3, 1e-3) : rng.uniform(lo, hi),
  );
add({
  name: "TANH F32 wide range [-30, 30] [1031, 3]",
  op: "TANH",
  dtypes: ["F32"],
  build: (b) => b.output(b.tanh(b.input("a", F32, [1031, 3]))),
  data: { a: spread(-30, 30) },
  tolerance: tol(F32),
});
add({
  name: "TANH F32 logit softcap c=30 [3001, 2]",
  op: "TANH",
  dtypes: ["F32"],
  build: (b) => b.output(b.scale(b.tanh(b.scale(b.input("logits", F32, [3001, 2]), 1 / 30)), 30)),
  data: { logits: spread(-80, 80) },
  tolerance: tol(F32),
});

// ---- GELU_ERF (the exact gelu of BERT / XLM-R): the unary shapes, a transposed and a row-strided
// input, the range past which Φ underflows (tails, tiny values), a BERT-base FFN activation ----
/**
 * GELU_ERF's tolerance, tighter than F32's: GELU's tanh approximation is within 5e-4 of it, an
 * NMSE of 2e-8 over [−4, 4] that 1e-6 would let through; float rounding of the output costs
 * about 1e-15.
 */
const GELU_ERF_TOLERANCE = 1e-12;
const uniform = (lo: number, hi: number) => (rng: Rng, t: Tensor) =>
  Array.from({ length: t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3] }, () => rng.uniform(lo, hi));
for (const ne of unaryShapes) {
  add({
    name: `GELU_ERF F32 ${shape(ne)}`,
    op: "GELU_ERF",
    dtypes: ["F32"],
    build: (b) => b.output(b.geluErf(b.input("a", F32, ne))),
    data: { a: uniform(-4, 4) },
    tolerance: GELU_ERF_TOLERANCE,
  });
}
add({
  name: "GELU_ERF F32 transposed [33, 7]",
  op: "GELU_ERF",
  dtypes: ["F32"],
  build: (b) => b.output(b.geluErf(transposed(b, "a", 33, 7))),
  data: { a_t: uniform(-4, 4) },
  tolerance: GELU_ERF_TOLERANCE,
});
add({
  name: "GELU_ERF F32 row-strided [65, 3]",
  op: "GELU_ERF",
  dtypes: ["F32"],
  build: (b) => b.output(b.geluErf(padded(b, "a", 65, 3))),
  data: { a_pad: uniform(-4, 4) },
  tolerance: GELU_ERF_TOLERANCE,
});
add({
  name: "GELU_ERF F32 wide range [-14, 14] [1031, 3]",
  op: "GELU_ERF",
  dtypes: ["F32"],
  build: (b) => b.output(b.geluErf(b.input("a", F32, [1031, 3]))),
  data: { a: spread(-14, 14) },
  tolerance: GELU_ERF_TOLERANCE,
});
add({
  name: "GELU_ERF F32 BERT-base FFN [3072, 7]",
  op: "GELU_ERF",
  dtypes: ["F32"],
  build: (b) => b.output(b.geluErf(b.input("ffn_up", F32, [3072, 7]))),
  data: { ffn_up: uniform(-6, 6) },
  tolerance: GELU_ERF_TOLERANCE,
});

// ---- NORM (LayerNorm without weight) on long and odd rows, rows with a large mean, and as the
// models use it with a weight and bias (NORM, MUL, ADD); few rows (decode) and many ----
for (const ne of [
  [2048, 3],
  [2049, 1],
  [3071, 5],
  [8193, 2],
  [2053, 300],
] as const) {
  add({
    name: `NORM F32 offset mean ${shape(ne)}`,
    op: "NORM",
    dtypes: ["F32"],
    build: (b) => b.output(b.norm(b.input("a", F32, ne), 1e-5)),
    data: { a: (rng, t) => Array.from({ length: t.ne[0] * t.ne[1] }, () => rng.uniform(2, 6)) },
    tolerance: tol(F32),
  });
}
for (const ne of [
  [2049, 1],
  [3072, 7],
] as const) {
  add({
    name: `NORM F32 with weight and bias (NORM, MUL, ADD) ${shape(ne)}`,
    op: "NORM",
    dtypes: ["F32"],
    build: (b) => {
      const h = b.norm(b.input("a", F32, ne), 1e-5);
      b.output(b.add(b.mul(h, b.weight("w", F32, [ne[0]])), b.weight("bias", F32, [ne[0]])));
    },
    data: { a: (rng, t) => Array.from({ length: t.ne[0] * t.ne[1] }, () => rng.uniform(-3, 5)) },
    tolerance: tol(F32),
  });
}

// ---- RMS_NORM_MUL (fused), SWIGLU, GEGLU ----
for (const [an, wn] of [
  [[33, 7], [33]],
  [
    [64, 5, 3],
    [64, 5],
  ],
  [[257], [257]],
  [[3584], [3584]],
] as const) {
  add({
    name: `RMS_NORM_MUL F32 ${shape(an)} w=${shape(wn)}`,
    op: "RMS_NORM_MUL",
    dtypes: ["F32"],
    build: (b) =>
      b.output(b.node(Op.RMS_NORM_MUL, [b.input("a", F32, an), b.input("w", F32, wn)], [1e-5])[0]!),
    tolerance: tol(F32),
  });
}
for (const ne of [[33, 7], [257], [16, 3, 2]] as const) {
  add({
    name: `SWIGLU F32 ${shape(ne)}`,
    op: "SWIGLU",
    dtypes: ["F32"],
    build: (b) => b.output(b.swiglu(b.input("gate", F32, ne), b.input("up", F32, ne))),
    data: { gate: (rng, t) => Array.from({ length: t.ne[0] * t.ne[1] * t.ne[2] }, () => rng.uniform(-4, 4)) },
    tolerance: tol(F32),
  });
}
// GEGLU: SWIGLU's shapes, a decode row, large magnitudes (gelu's tails), and gate/up as row
// views of one input (rows padded apart).
for (const ne of [[33, 7], [257], [16, 3, 2], [2048], [4100, 2]] as const) {
  add({
    name: `GEGLU F32 ${shape(ne)}`,
    op: "GEGLU",
    dtypes: ["F32"],
    build: (b) => b.output(b.geglu(b.input("gate", F32, ne), b.input("up", F32, ne))),
    data: { gate: spread(-12, 12) },
    tolerance: tol(F32),
  });
}
add({
  name: "GEGLU F32 gate/up halves of one [2·65, 3] row-strided",
  op: "GEGLU",
  dtypes: ["F32"],
  build: (b) => {
    const gu = b.input("gate_up", F32, [130, 3]);
    const gate = b.view(gu, [65, 3], [gu.nb[0], gu.nb[1]], 0, "gate");
    const up = b.view(gu, [65, 3], [gu.nb[0], gu.nb[1]], 65 * gu.nb[0], "up");
    b.output(b.geglu(gate, up));
  },
  data: { gate_up: spread(-6, 6) },
  tolerance: tol(F32),
});
// A decode row's SWIGLU / GEGLU and the quantized product reading it (ffn_down), which a GPU runs
// as one launch writing the product's quantized activations (Q8 blocks of 32 for Q4_0, of 256 for
// Q4_K).
for (const op of ["SWIGLU", "GEGLU"] as const)
  for (const w of [DType.Q4_0, DType.Q4_K]) {
    add({
      name: `${op} F32 [2048] then MUL_MAT a=${n(w)} [2048, 96] (a decode FFN's down projection)`,
      op,
      dtypes: ["F32", n(w)],
      build: (b) => {
        const gate = b.input("gate", F32, [2048, 1]);
        const up = b.input("up", F32, [2048, 1]);
        const h = op === "GEGLU" ? b.geglu(gate, up) : b.swiglu(gate, up);
        b.output(b.mulMat(b.weight("ffn_down", w, [2048, 96]), h));
      },
      data: { gate: spread(-6, 6) },
      tolerance: tol(w),
    });
  }

// Several sequences' rows of a decode step: RMS_NORM_MUL then the products reading its rows
// (q/k/v as one MUL_MAT_MULTI, or one MUL_MAT), SWIGLU then ffn_down, which a GPU runs with the
// producer writing the products' quantized activations for every row (Q8 blocks of 32 for the
// mat-vec of Q4_0 / Q8_0 and the int8 kernel of any type, of 256 for the K-quants' mat-vec).
for (const rows of [2, 4, 8, 16, 64])
  for (const w of [DType.Q4_0, DType.Q8_0, DType.Q4_K, DType.Q6_K]) {
    add({
      name: `RMS_NORM_MUL F32 [512, ${rows}] then MUL_MAT_MULTI a=${n(w)}+${n(w)} [512, 64+32] (q/k/v of ${rows} sequences)`,
      op: "RMS_NORM_MUL",
      dtypes: ["F32", n(w)],
      build: (b) => {
        const h = b.node(
          Op.RMS_NORM_MUL,
          [b.input("a", F32, [512, rows]), b.input("w", F32, [512])],
          [1e-6],
        )[0]!;
        const ws = [b.weight("wq", w, [512, 64]), b.weight("wk", w, [512, 32])];
        for (const o of b.node(Op.MUL_MAT_MULTI, [h, ...ws], [])) b.output(o);
      },
      tolerance: tol(w),
    });
    add({
      name: `SWIGLU F32 [512, ${rows}] then MUL_MAT a=${n(w)} [512, 48] (ffn_down of ${rows} sequences)`,
      op: "SWIGLU",
      dtypes: ["F32", n(w)],
      build: (b) => {
        const h = b.swiglu(b.input("gate", F32, [512, rows]), b.input("up", F32, [512, rows]));
        b.output(b.mulMat(b.weight("ffn_down", w, [512, 48]), h));
      },
      data: { gate: spread(-6, 6) },
      tolerance: tol(w),
    });
  }

// ---- ROPE: normal and neox × one/many tokens × plain, partial, freq factors, linear, YaRN ----
const ropeVariants = [
  { tag: "plain", nDims: 64, p: {} },
  { tag: "partial nDims=32", nDims: 32, p: {} },
  { tag: "base=500000 freqScale=0.5", nDims: 64, p: { freqBase: 500000, freqScale: 0.5 } },
  {
    tag: "YaRN",
    nDims: 64,
    p: { freqScale: 0.25, extFactor: 1, attnFactor: 1, betaFast: 32, betaSlow: 1, nCtxOrig: 4096 },
  },
  { tag: "freq factors", nDims: 64, p: {}, factors: true },
] as const;
for (const mode of ["normal", "neox"] as const)
  for (const tokens of [1, 5])
    for (const v of ropeVariants) {
      const factors = "factors" in v;
      add({
        name: `ROPE ${mode} ${v.tag} [64, 3, ${tokens}]`,
        op: "ROPE",
        dtypes: ["F32", "I32"],
        build: (b) => {
          const x = b.input("x", F32, [64, 3, tokens]);
          const pos = b.input("pos", I32, [tokens]);
          const ff = factors ? b.input("ff", F32, [v.nDims / 2]) : undefined;
          b.output(b.rope(x, pos, { mode, nDims: v.nDims, ...v.p }, ff));
        },
        data: {
          pos: iota(tokens, 100),
          ff: (rng, t) => Array.from({ length: t.ne[0] }, () => rng.uniform(1, 8)),
        },
        tolerance: tol(F32),
      });
    }
for (const mode of ["normal", "neox"] as const) {
  add({
    name: `ROPE ${mode} permuted view [32, 4, 3]`,
    op: "ROPE",
    dtypes: ["F32", "I32"],
    build: (b) => {
      const x = b.permute(b.input("x_src", F32, [32, 3, 4]), [0, 2, 1, 3], "x");
      b.output(b.rope(x, b.input("pos", I32, [3]), { mode, nDims: 32 }));
    },
    data: { pos: ints([0, 7, 42]) },
    tolerance: tol(F32),
  });
}

// Partial rotary (phi, glm4, ...): head 128 with 96 or 64 rotated dims, the rest passed through;
// frequency factors of nDims/2; YaRN (with an attention factor) at positions past the original
// context; both modes, one token and several.
const partialRope = [
  { tag: "", p: {}, factors: false, long: false },
  { tag: " freq factors", p: {}, factors: true, long: false },
  {
    tag: " YaRN past nCtxOrig",
    p: { freqScale: 0.25, extFactor: 1, attnFactor: 1.19, betaFast: 32, betaSlow: 1, nCtxOrig: 4096 },
    factors: false,
    long: true,
  },
  {
    tag: " freq factors past nCtxOrig base=500000",
    p: { freqBase: 500000, attnFactor: 1.19, nCtxOrig: 4096 },
    factors: true,
    long: true,
  },
] as const;
for (const mode of ["normal", "neox"] as const)
  for (const nDims of [96, 64])
    for (const tokens of [1, 6])
      for (const v of partialRope) {
        add({
          name: `ROPE ${mode} partial nDims=${nDims}${v.tag} [128, 3, ${tokens}]`,
          op: "ROPE",
          dtypes: ["F32", "I32"],
          build: (b) => {
            const x = b.input("x", F32, [128, 3, tokens]);
            const pos = b.input("pos", I32, [tokens]);
            const ff = v.factors ? b.input("ff", F32, [nDims / 2]) : undefined;
            b.output(b.rope(x, pos, { mode, nDims, ...v.p }, ff));
          },
          data: {
            pos: (rng) =>
              Array.from({ length: tokens }, () => (v.long ? rng.int(4096, 32768) : rng.int(0, 100))),
            ff: (rng, t) => Array.from({ length: t.ne[0] }, () => rng.uniform(1, 8)),
          },
          tolerance: tol(F32),
        });
      }
// An attention layer's cache writes as the model graphs emit them (a GPU runs the four as one
// launch): ROPE q, ROPE k (partial), k's rows and v into F16 caches at the tokens' cells.
// (Whole heads of one token, nDims = 128, is the decode step's: a GPU's single-block kernel.)
for (const mode of ["normal", "neox"] as const)
  for (const [tokens, nDims] of [
    [1, 64],
    [5, 64],
    [1, 128],
  ] as const) {
    add({
      name: `ROPE ${mode} ${nDims < 128 ? "partial " : ""}nDims=${nDims} q/k + k/v cache stores [128, 4/2, ${tokens}]`,
      op: "ROPE",
      dtypes: ["F32", "I32", "F16"],
      build: (b) => {
        const pos = b.input("pos", I32, [tokens]);
        const cells = b.input("cells", I32, [tokens]);
        const p = { mode, nDims, freqBase: 10000 } as const;
        const q = b.rope(b.input("q", F32, [128, 4, tokens]), pos, p);
        const k = b.rope(b.input("k", F32, [128, 2, tokens]), pos, p);
        const kc = b.setRows(b.state("k_cache", F16, [256, 16]), b.reshape(k, [256, tokens]), cells);
        const vc = b.setRows(b.state("v_cache", F16, [256, 16]), b.input("v", F32, [256, tokens]), cells);
        for (const t of [q, kc, vc]) b.output(t);
      },
      data: { pos: iota(tokens, 2000), cells: (rng) => rng.distinct(tokens, 16) },
      tolerance: tol(F16),
    });
  }

// Several tokens of whole heads (a step of several sequences): q and k computed in the graph, so
// the allocator may put k's RoPE output over q's input, as in a model's step (a GPU then runs the
// four nodes apart, its fused kernel taking several tokens only when no node's output meets
// another's input); a repeated cell (the later token is stored); more tokens.
for (const [tokens, cells] of [
  [4, undefined],
  [3, [5, 9, 5]],
  [12, undefined],
] as const)
  add({
    name: `ROPE neox nDims=128 q/k (computed) + k/v cache stores [128, 4/2, ${tokens}]${cells ? " repeated cell" : ""}`,
    op: "ROPE",
    dtypes: ["F32", "I32", "F16"],
    build: (b) => {
      const pos = b.input("pos", I32, [tokens]);
      const at = b.input("cells", I32, [tokens]);
      const p = { mode: "neox", nDims: 128, freqBase: 1000000 } as const;
      const qIn = b.add(b.input("q", F32, [128, 4, tokens]), b.input("q2", F32, [128, 4, tokens]));
      const kIn = b.add(b.input("k", F32, [128, 2, tokens]), b.input("k2", F32, [128, 2, tokens]));
      const q = b.rope(qIn, pos, p);
      const k = b.rope(kIn, pos, p);
      const kc = b.setRows(b.state("k_cache", F16, [256, 16]), b.reshape(k, [256, tokens]), at);
      const vc = b.setRows(b.state("v_cache", F16, [256, 16]), b.input("v", F32, [256, tokens]), at);
      for (const t of [q, kc, vc]) b.output(t);
    },
    data: { pos: iota(tokens, 300), cells: cells ? () => [...cells] : (rng) => rng.distinct(tokens, 16) },
    tolerance: tol(F16),
  });

// An attention layer's q/k/v product and cache writes as the model graphs emit them, after the
// norm (or straight from an input): RMS_NORM_MUL, MUL_MAT_MULTI of q, k, v (with biases), ROPE q,
// ROPE k, k's rows and v into F16 caches at the tokens' cells. A GPU runs the product's mat-vec with
// the RoPEs and stores in its epilogue, the allocator putting k's RoPE output over q's product
// where it may; 1-8 tokens (a step of that many sequences), a repeated cell, both RoPE modes.
for (const w of [DType.Q4_0, DType.Q8_0, DType.Q4_K, DType.Q6_K])
  for (const [tokens, cells, mode, norm] of [
    [1, undefined, "neox", true],
    [1, undefined, "normal", false],
    [4, undefined, "neox", true],
    [3, [7, 2, 7], "neox", true],
    [8, undefined, "normal", true],
  ] as const) {
    if (w !== DType.Q4_0 && mode === "normal" && tokens === 1) continue;
    add({
      name: `${norm ? "RMS_NORM_MUL then " : ""}MUL_MAT_MULTI+c a=${n(w)} q/k/v [512, 256+128+128] then ROPE ${mode} q/k + k/v cache stores ${shape([512, tokens])}${cells ? " repeated cell" : ""}`,
      op: "MUL_MAT_MULTI",
      dtypes: ["F32", n(w), "I32", "F16"],
      build: (b) => {
        const x = b.input("x", F32, [512, tokens]);
        const h = norm ? b.node(Op.RMS_NORM_MUL, [x, b.input("g", F32, [512])], [1e-6])[0]! : x;
        const ws = [
          b.weight("wq", w, [512, 256]),
          b.weight("wk", w, [512, 128]),
          b.weight("wv", w, [512, 128]),
        ];
        const cs = [256, 128, 128].map((m, i) => b.weight(`c${i}`, F32, [m]));
        const [oq, ok, ov] = b.node(Op.MUL_MAT_MULTI, [h, ...ws, ...cs], []);
        const pos = b.input("pos", I32, [tokens]);
        const at = b.input("cells", I32, [tokens]);
        const p = { mode, nDims: 64, freqBase: 1000000 } as const;
        const q = b.rope(b.reshape(oq!, [64, 4, tokens]), pos, p);
        const k = b.rope(b.reshape(ok!, [64, 2, tokens]), pos, p);
        const kc = b.setRows(b.state("k_cache", F16, [128, 16]), b.reshape(k, [128, tokens]), at);
        const vc = b.setRows(b.state("v_cache", F16, [128, 16]), ov!, at);
        for (const t of [q, kc, vc]) b.output(t);
      },
      data: { pos: iota(tokens, 3000), cells: cells ? () => [...cells] : (rng) => rng.distinct(tokens, 16) },
      tolerance: tol(w, F16),
    });
  }

// ---- SOFTMAX: plain, F32/F16 masks (more rows than needed), scale, ALiBi, one row ----
/** A causal-like mask [nKv, rows]: row i sees cells ≤ nKv − rows + i (0), the rest −∞. */
const causalMask = (nKv: number, nQ: number) => (_rng: Rng, t: Tensor) =>
  Array.from({ length: t.ne[0] * t.ne[1] }, (_, j) => {
    const cell = j % t.ne[0];
    const row = Math.floor(j / t.ne[0]);
    return cell <= nKv - nQ + Math.min(row, nQ - 1) ? 0 : Number.NEGATIVE_INFINITY;
  });
const softmaxCases = [
  { tag: "plain", ne: [33, 7], mask: undefined, scale: 1, maxBias: 0 },
  { tag: "one row", ne: [257], mask: undefined, scale: 1, maxBias: 0 },
  { tag: "mask F32 scale 0.125", ne: [33, 7], mask: F32, maskRows: 7, scale: 0.125, maxBias: 0 },
  { tag: "mask F16 padded rows", ne: [33, 7], mask: F16, maskRows: 8, scale: 1, maxBias: 0 },
  { tag: "mask F32 ALiBi 8 heads", ne: [33, 7, 8], mask: F32, maskRows: 7, scale: 0.5, maxBias: 8 },
  { tag: "mask F16 ALiBi 6 heads", ne: [17, 3, 6], mask: F16, maskRows: 3, scale: 1, maxBias: 8 },
] as const;
for (const c of softmaxCases) {
  add({
    name: `SOFTMAX F32 ${c.tag} ${shape(c.ne)}`,
    op: "SOFTMAX",
    dtypes: c.mask ? ["F32", n(c.mask)] : ["F32"],
    build: (b) => {
      const a = b.input("a", F32, c.ne);
      const mask = c.mask ? b.input("mask", c.mask, [c.ne[0], "maskRows" in c ? c.maskRows : 1]) : undefined;
      b.output(b.softmax(a, { mask, scale: c.scale, maxBias: c.maxBias }));
    },
    data: {
      a: (rng, t) => Array.from({ length: t.ne[0] * t.ne[1] * t.ne[2] }, () => rng.uniform(-5, 5)),
      mask: causalMask(c.ne[0], c.ne[1] ?? 1),
    },
    tolerance: tol(F32, c.mask ?? F32),
  });
}

// ---- ATTENTION: k/v dtypes × mask F32/F16/spans × decode GQA / prefill GQA / MHA softcap; views ----
const attnShapes = [
  { tag: "decode GQA 4:1", hd: 64, hdv: 64, nHead: 4, nKvHead: 1, nQ: 1, nKv: 33, softcap: 0 },
  { tag: "prefill GQA 4:2", hd: 64, hdv: 64, nHead: 4, nKvHead: 2, nQ: 7, nKv: 65, softcap: 0 },
  { tag: "MHA softcap 2 hdv 32", hd: 32, hdv: 32, nHead: 3, nKvHead: 3, nQ: 5, nKv: 17, softcap: 2 },
  // Many rows per kv head (a GPU's prefill kernels): partial row blocks and KV tiles.
  { tag: "prefill GQA 7:1 hd 128", hd: 128, hdv: 128, nHead: 7, nKvHead: 1, nQ: 40, nKv: 100, softcap: 0 },
  { tag: "prefill MHA hd 64", hd: 64, hdv: 64, nHead: 2, nKvHead: 2, nQ: 70, nKv: 75, softcap: 0 },
  // A GPU's decode kernels: several tiles and splits of the KV range, rows of a kv head from
  // several queries, softcap.
  { tag: "decode GQA 7:2 hd 128", hd: 128, hdv: 128, nHead: 14, nKvHead: 2, nQ: 1, nKv: 300, softcap: 0 },
  // Long caches: a decode kernel's block walks several tiles of its split.
  { tag: "decode GQA 4:1 hd 64 long", hd: 64, hdv: 64, nHead: 4, nKvHead: 1, nQ: 1, nKv: 1500, softcap: 0 },
  {
    tag: "decode GQA 7:1 hd 128 long",
    hd: 128,
    hdv: 128,
    nHead: 7,
    nKvHead: 1,
    nQ: 1,
    nKv: 2300,
    softcap: 0,
  },
  // Several queries of a GQA group each (a GPU's per-query decode blocks, and blocks of part of
  // a group's rows with MINFER_CUDA_DECODE_ROWS).
  {
    tag: "decode 3 queries GQA 4:2 hd 128",
    hd: 128,
    hdv: 128,
    nHead: 8,
    nKvHead: 2,
    nQ: 3,
    nKv: 200,
    softcap: 0,
  },
  {
    tag: "decode 3 queries hd 128 softcap 30",
    hd: 128,
    hdv: 128,
    nHead: 2,
    nKvHead: 2,
    nQ: 3,
    nKv: 150,
    softcap: 30,
  },
] as const;
/** Spans I32 [2, nQ]: query i sees [start_i, nKv − nQ + i + 1), start_i small and random. */
const spansData = (nKv: number, nQ: number) => (rng: Rng) =>
  Array.from({ length: nQ }, (_, i) => [rng.int(0, 4), nKv - nQ + i + 1]).flat();
/**
 * Whether @minfer/ir's shape/dtype inference accepts Q8_0 k/v for ATTENTION (rows of Q8_0 blocks,
 * head sizes multiples of 32). The CPU kernel and the reference take them; until the IR does, a
 * graph with Q8_0 k/v cannot be built and the Q8_0 attention cases are left out of the table
 * (conformance.test.ts says so).
 */
export const ATTENTION_Q8_0_IN_IR: boolean = (() => {
  try {
    const b = new GraphBuilder();
    const k = b.input("k", DType.Q8_0, [32, 1, 2]);
    b.attention(
      b.input("q", F32, [32, 1, 1]),
      k,
      b.input("v", DType.Q8_0, [32, 1, 2]),
      b.input("m", F32, [2, 1]),
      {
        scale: 1,
      },
    );
    return true;
  } catch {
    return false;
  }
})();
/** k/v dtype pairs: the float types, and Q8_0 (also with F16 v) where the IR takes it. */
const attnKv: (readonly [DType, DType])[] = FLOAT_DTYPES.map((d) => [d, d] as const);
if (ATTENTION_Q8_0_IN_IR) attnKv.push([DType.Q8_0, DType.Q8_0], [DType.Q8_0, F16]);
for (const [kd, vd] of attnKv)
  for (const maskKind of ["F32", "F16", "spans"] as const)
    for (const s of attnShapes) {
      const kvName = kd === vd ? n(kd) : `${n(kd)}/${n(vd)}`;
      add({
        name: `ATTENTION k/v=${kvName} ${maskKind} ${s.tag} q=[${s.hd}, ${s.nHead}, ${s.nQ}] nKv=${s.nKv}`,
        op: "ATTENTION",
        dtypes: ["F32", ...new Set([n(kd), n(vd)]), maskKind === "spans" ? "I32" : maskKind],
        build: (b) => {
          const q = b.input("q", F32, [s.hd, s.nHead, s.nQ]);
          const k = b.input("k", kd, [s.hd, s.nKvHead, s.nKv]);
          const v = b.input("v", vd, [s.hdv, s.nKvHead, s.nKv]);
          const m =
            maskKind === "spans"
              ? b.input("spans", I32, [2, s.nQ])
              : b.input("mask", maskKind === "F32" ? F32 : F16, [s.nKv, s.nQ]);
          b.output(b.attention(q, k, v, m, { scale: 1 / Math.sqrt(s.hd), softcap: s.softcap }));
        },
        data: { spans: spansData(s.nKv, s.nQ), mask: causalMask(s.nKv, s.nQ) },
        tolerance: tol(F32, kd, vd, maskKind === "F16" ? F16 : F32),
      });
    }
for (const kv of [F32, F16]) {
  add({
    name: `ATTENTION k/v=${n(kv)} permuted KV views (cache [hd, nKv, nKvHead]) mask F32`,
    op: "ATTENTION",
    dtypes: ["F32", n(kv)],
    build: (b) => {
      const q = b.input("q", F32, [32, 4, 3]);
      const k = b.permute(b.input("k_cache", kv, [32, 20, 2]), [0, 2, 1, 3], "k");
      const v = b.permute(b.input("v_cache", kv, [32, 20, 2]), [0, 2, 1, 3], "v");
      b.output(b.attention(q, k, v, b.input("mask", F32, [20, 3]), { scale: 0.2 }));
    },
    data: { mask: causalMask(20, 3) },
    tolerance: tol(F32, kv),
  });
}

// Several sequences decoding together, each in a region of its own (a server's step, bench -npl):
// a GPU's per-query blocks walk only their query's cells, split over several blocks; one query
// sees a single cell, one none (zeros).
for (const kv of [F32, F16]) {
  const region = 300;
  const lens = [300, 257, 1, 0, 130, 64];
  add({
    name: `ATTENTION k/v=${n(kv)} spans ${lens.length} queries in regions of ${region} GQA 7:2 hd 128`,
    op: "ATTENTION",
    dtypes: ["F32", n(kv), "I32"],
    build: (b) => {
      const q = b.input("q", F32, [128, 14, lens.length]);
      const k = b.input("k", kv, [128, 2, region * lens.length]);
      const v = b.input("v", kv, [128, 2, region * lens.length]);
      const m = b.input("spans", I32, [2, lens.length]);
      b.output(b.attention(q, k, v, m, { scale: 1 / Math.sqrt(128) }));
    },
    data: { spans: () => lens.flatMap((len, i) => [i * region, i * region + len]) },
    tolerance: tol(F32, kv),
  });
}

// A decode step's attention, then its o projection with the residual as the model graphs emit
// them: a GPU runs the two as one launch where the attention's last writer (its store, or the merge
// of its splits) also quantizes each query's output as the product's activation column. 1, 4, 6
// and 16 sequences in regions of their own (16: the int8 kernel's product; the 6 with a query of
// one cell and one of none), F16 caches, GQA 7:2 hd 128, over Q4_0 and Q8_0 weights.
for (const w of [DType.Q4_0, DType.Q8_0])
  for (const lens of [
    [300],
    [300, 257, 130, 64],
    [300, 257, 1, 0, 130, 64],
    Array.from({ length: 16 }, (_, i) => 40 + 13 * i),
  ]) {
    const region = 300;
    const nQ = lens.length;
    add({
      name: `ATTENTION then MUL_MAT_ADD a=${n(w)} (o projection) ${nQ} queries in regions of ${region} GQA 7:2 hd 128`,
      op: "ATTENTION",
      dtypes: ["F32", "F16", "I32", n(w)],
      build: (b) => {
        const q = b.input("q", F32, [128, 14, nQ]);
        const k = b.input("k", F16, [128, 2, region * nQ]);
        const v = b.input("v", F16, [128, 2, region * nQ]);
        const m = b.input("spans", I32, [2, nQ]);
        const o = b.attention(q, k, v, m, { scale: 1 / Math.sqrt(128) });
        const x = b.reshape(o, [128 * 14, nQ]);
        const out = b.node(
          Op.MUL_MAT_ADD,
          [b.weight("wo", w, [128 * 14, 256]), x, b.input("res", F32, [256, nQ])],
          [],
        );
        b.output(out[0]!);
      },
      data: { spans: () => lens.flatMap((len, i) => [i * region, i * region + len]) },
      tolerance: tol(F16, w),
    });
  }

/**
 * Quantized dtypes a backend's CPY / SET_ROWS writes (at run time, e.g. a KV cache row): those the
 * reference writes, less those only `minfer gguf quantize` writes (its quantizers, no backend's CPY:
 * Q2_K, Q3_K, IQ4_NL, IQ4_XS, the ternary types and the i-quants that need no importance matrix).
 */
const TS_ONLY_QUANTIZERS: readonly DType[] = [
  DType.Q2_K,
  DType.Q3_K,
  DType.IQ4_NL,
  DType.IQ4_XS,
  DType.TQ1_0,
  DType.TQ2_0,
  DType.IQ3_XXS,
  DType.IQ3_S,
  DType.IQ2_S,
];
const RUNTIME_WRITABLE = WEIGHT_DTYPES.filter(
  (x) => isQuantized(x) && canWrite(x) && !TS_ONLY_QUANTIZERS.includes(x),
);

// ---- CPY: F32 into every writable dtype; float to float; permuted source; into a view of state ----
for (const d of [...FLOAT_DTYPES, ...RUNTIME_WRITABLE]) {
  add({
    name: `CPY F32→${n(d)} [256, 3]`,
    op: "CPY",
    dtypes: ["F32", n(d)],
    build: (b) => b.output(b.cont(b.input("a", F32, [256, 3]), d)),
    tolerance: isQuantized(d) ? (d === DType.Q8_0 ? 1e-3 : TOLERANCE.QUANTIZED_OUTPUT!) : tol(d),
  });
}
for (const [from, to] of [
  [F16, F32],
  [BF16, F32],
  [F16, F16],
  [F16, BF16],
] as const) {
  add({
    name: `CPY ${n(from)}→${n(to)} [33, 7]`,
    op: "CPY",
    dtypes: [n(from), n(to)],
    build: (b) => b.output(b.cont(b.input("a", from, [33, 7]), to)),
    tolerance: tol(from, to),
  });
}
add({
  name: "CPY F32 transposed [33, 7] → contiguous",
  op: "CPY",
  dtypes: ["F32"],
  build: (b) => b.output(b.cont(transposed(b, "a", 33, 7))),
  tolerance: tol(F32),
});
add({
  name: "CPY F32 [64, 2] → F16 view of state rows 3..4 of [64, 10]",
  op: "CPY",
  dtypes: ["F32", "F16"],
  build: (b) => {
    const cache = b.state("cache", F16, [64, 10]);
    b.output(
      b.cpy(b.input("a", F32, [64, 2]), b.view(cache, [64, 2], undefined, 3 * cache.nb[1], "cache.rows")),
    );
  },
  tolerance: tol(F16),
});

// ---- SET_ROWS: into state of every KV-like dtype, one row and several ----
for (const d of [...FLOAT_DTYPES, ...RUNTIME_WRITABLE])
  for (const rows of [1, 5]) {
    const ne0 = rowLen(d, 64, 1);
    add({
      name: `SET_ROWS dst=${n(d)} ${shape([ne0, 16])} rows=${rows}`,
      op: "SET_ROWS",
      dtypes: ["F32", "I32", n(d)],
      build: (b) => {
        const dst = b.state("cache", d, [ne0, 16]);
        b.output(b.setRows(dst, b.input("src", F32, [ne0, rows]), b.input("idx", I32, [rows])));
      },
      data: { idx: (rng) => rng.distinct(rows, 16) },
      tolerance: isQuantized(d) ? TOLERANCE.QUANTIZED_OUTPUT! : tol(d),
    });
  }

// ---- CONCAT: dims 0–2, F32/F16/I32 ----
for (const [d, dim] of [
  [F32, 0],
  [F32, 1],
  [F32, 2],
  [F16, 1],
  [I32, 0],
] as const) {
  const ne = [33, 7, 2];
  const other = [...ne];
  other[dim] = 5;
  add({
    name: `CONCAT ${n(d)} dim=${dim} ${shape(ne)}+${shape(other)}`,
    op: "CONCAT",
    dtypes: [n(d)],
    build: (b) => b.output(b.concat(b.input("a", d, ne), b.input("b", d, other), dim)),
    data: d === I32 ? { a: iota(33 * 7 * 2, 1000), b: iota(other[0]! * other[1]! * other[2]!, 1000) } : {},
    tolerance: tol(d),
  });
}

// ---- ARGSORT / TOP_K: exact ----
for (const [ne, desc] of [
  [[33, 7], false],
  [[33, 7], true],
  [[257], true],
  [[8, 3, 2], false],
] as const) {
  add({
    name: `ARGSORT F32 ${desc ? "desc" : "asc"} ${shape(ne)}`,
    op: "ARGSORT",
    dtypes: ["F32"],
    build: (b) => b.output(b.argsort(b.input("a", F32, ne), desc)),
    tolerance: 0,
  });
}
// Rows longer than 4096 with k up to 1024 take CUDA's selection paths for a vocabulary's
// candidates (its radix selection from 8 rows, its tile sorts below). Values: "random" floats; "ties": from `levels` values, so index order decides most
// of the order (2 levels of 20000: more ties at the k-th value than CUDA's radix selection gathers
// at once); "special": NaN, ±0, ±inf and ±1 (NaN orders above +inf, -0 as +0).
const SPECIAL = [Number.NaN, -0, 0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1, -1];
for (const [ne, k, values, levels] of [
  [[33, 7], 1, "random", 0],
  [[33, 7], 5, "random", 0],
  [[257], 40, "random", 0],
  [[9000, 3], 64, "random", 0],
  [[9000, 8], 64, "random", 0],
  [[9000, 8], 64, "ties", 8],
  [[20000, 2], 1000, "random", 0],
  [[4097, 2], 1, "ties", 8],
  [[152064, 2], 64, "random", 0],
  [[30000, 8], 1024, "ties", 8],
  [[20000, 8], 64, "ties", 2],
  [[9000, 8], 64, "special", 0],
  [[9000, 2], 64, "special", 0],
] as const) {
  const count = ne.reduce((a: number, x: number) => a * x, 1);
  const data =
    values === "ties"
      ? { a: iota(count, levels) }
      : values === "special"
        ? { a: (rng: Rng) => Array.from({ length: count }, () => SPECIAL[rng.int(0, SPECIAL.length)]!) }
        : undefined;
  add({
    name: `TOP_K F32 k=${k} ${shape(ne)}${values === "ties" ? ` ties${levels === 8 ? "" : ` of ${levels}`}` : values === "special" ? " special" : ""}`,
    op: "TOP_K",
    dtypes: ["F32"],
    build: (b) => b.output(b.topK(b.input("a", F32, ne), k)),
    ...(data ? { data } : {}),
    tolerance: 0,
  });
}

// ---- MUL_MAT_ID: every weight dtype × b per expert slot or shared ----
for (const d of WEIGHT_DTYPES)
  for (const shared of [false, true]) {
    const k = rowLen(d, 64, 1);
    const nUsed = 2;
    const nTok = 3;
    add({
      name: `MUL_MAT_ID experts=${n(d)} ${shape([k, 17, 4])} b=${shared ? "shared" : "per-slot"} used=${nUsed} tokens=${nTok}`,
      op: "MUL_MAT_ID",
      dtypes: [n(d), "F32", "I32"],
      build: (b) => {
        const experts = b.weight("experts", d, [k, 17, 4]);
        const x = b.input("x", F32, [k, shared ? 1 : nUsed, nTok]);
        b.output(b.mulMatId(experts, x, b.input("ids", I32, [nUsed, nTok])));
      },
      data: { ids: (rng) => Array.from({ length: nTok }, () => rng.distinct(nUsed, 4)).flat() },
      tolerance: tol(d),
    });
  }

// ---- MUL_MAT_MULTI (fused): 2 and 3 weights of mixed dtypes, F32 and F16 activations ----
for (const [x, ws] of [
  [F32, [F32, F32]],
  [F32, [DType.Q8_0, DType.Q4_K, DType.Q6_K]],
  [F32, [F16, DType.Q4_0]],
  [F16, [F16, F16, F16]],
] as const) {
  const k = 256;
  add({
    name: `MUL_MAT_MULTI x=${n(x)} w=${ws.map(n).join("+")} [${k}, 5]`,
    op: "MUL_MAT_MULTI",
    dtypes: [n(x), ...ws.map(n)],
    build: (b) => {
      const xs = b.input("x", x, [k, 5]);
      const weights = ws.map((d, i) => b.weight(`w${i}`, d, [k, 9 + i]));
      for (const o of b.node(Op.MUL_MAT_MULTI, [xs, ...weights], [])) b.output(o);
    },
    tolerance: tol(x, ...ws),
  });
}
// The spot-checked weight types three at a time (each once), mixing blocks of 256 and of 32.
for (let g = 0; g < SPOT_CHECKED_WEIGHT_DTYPES.length; g += 3) {
  const ws = SPOT_CHECKED_WEIGHT_DTYPES.slice(g, g + 3);
  const k = 256;
  add({
    name: `MUL_MAT_MULTI x=F32 w=${ws.map(n).join("+")} [${k}, 5]`,
    op: "MUL_MAT_MULTI",
    dtypes: ["F32", ...ws.map(n)],
    build: (b) => {
      const xs = b.input("x", F32, [k, 5]);
      const weights = ws.map((d, i) => b.weight(`w${i}`, d, [k, 9 + i]));
      for (const o of b.node(Op.MUL_MAT_MULTI, [xs, ...weights], [])) b.output(o);
    },
    tolerance: tol(F32, ...ws),
  });
}
add({
  name: "MUL_MAT_MULTI x=F32 w=Q4_0+Q8_0+Q5_0 prefill [96, 23] rows 40+33+9",
  op: "MUL_MAT_MULTI",
  dtypes: ["F32", "Q4_0", "Q8_0", "Q5_0"],
  build: (b) => {
    const xs = b.input("x", F32, [96, 23]);
    const weights = [DType.Q4_0, DType.Q8_0, DType.Q5_0].map((d, i) =>
      b.weight(`w${i}`, d, [96, [40, 33, 9][i]!]),
    );
    for (const o of b.node(Op.MUL_MAT_MULTI, [xs, ...weights], [])) b.output(o);
  },
  tolerance: tol(F32, DType.Q4_0, DType.Q8_0, DType.Q5_0),
});

// ---- MUL_MAT_MULTI with addends (fused q/k/v + biases): decode and prefill (panel GEMM) ×
// weights Q8_0, Q4_0, Q4_K, F16 × c_i biases [m_i]; one case with full-shape addends ----
for (const w of [DType.Q8_0, DType.Q4_0, DType.Q4_K, F16])
  for (const tokens of [1, 16, 19]) {
    const k = 256;
    const ms = [70, 40, 40];
    add({
      name: `MUL_MAT_MULTI+c x=F32 w=${n(w)}×3 ${shape([k, tokens])} rows ${ms.join("+")} c=[m_i]`,
      op: "MUL_MAT_MULTI",
      dtypes: ["F32", n(w), n(w), n(w)],
      build: (b) => {
        const xs = b.input("x", F32, [k, tokens]);
        const weights = ms.map((m, i) => b.weight(`w${i}`, w, [k, m]));
        const biases = ms.map((m, i) => b.weight(`c${i}`, F32, [m]));
        for (const o of b.node(Op.MUL_MAT_MULTI, [xs, ...weights, ...biases], [])) b.output(o);
      },
      tolerance: tol(w),
    });
  }
add({
  name: "MUL_MAT_MULTI+c x=F32 w=Q8_0+Q4_K prefill [256, 19] rows 70+33 c=full [m_i, 19]",
  op: "MUL_MAT_MULTI",
  dtypes: ["F32", "Q8_0", "Q4_K"],
  build: (b) => {
    const xs = b.input("x", F32, [256, 19]);
    const weights = [DType.Q8_0, DType.Q4_K].map((d, i) => b.weight(`w${i}`, d, [256, [70, 33][i]!]));
    const cs = [70, 33].map((m, i) => b.input(`c${i}`, F32, [m, 19]));
    for (const o of b.node(Op.MUL_MAT_MULTI, [xs, ...weights, ...cs], [])) b.output(o);
  },
  tolerance: tol(DType.Q8_0, DType.Q4_K),
});

// ---- MUL_MAT_ADD (fused): decode and prefill (panel GEMM) × c as a bias [m] or the full [m, n] ----
for (const a of [F32, F16, DType.Q8_0, DType.Q4_0, DType.Q4_K])
  for (const tokens of [1, 19])
    for (const full of [false, true]) {
      const k = 256;
      const m = 70;
      const cn = full ? [m, tokens] : [m];
      add({
        name: `MUL_MAT_ADD a=${n(a)} b=F32 ${shape([k, m])}×${shape([k, tokens])} c=${shape(cn)}`,
        op: "MUL_MAT_ADD",
        dtypes: [n(a), "F32"],
        build: (b) =>
          b.output(
            b.node(
              Op.MUL_MAT_ADD,
              [b.weight("w", a, [k, m]), b.input("x", F32, [k, tokens]), b.input("c", F32, cn)],
              [],
            )[0]!,
          ),
        tolerance: tol(a),
      });
    }
// The spot-checked weight types: a decode step's projection plus the residual (c the full [m, 1]).
for (const a of SPOT_CHECKED_WEIGHT_DTYPES) {
  const [k, m] = [256, 70];
  add({
    name: `MUL_MAT_ADD a=${n(a)} b=F32 ${shape([k, m])}×${shape([k, 1])} c=${shape([m, 1])}`,
    op: "MUL_MAT_ADD",
    dtypes: [n(a), "F32"],
    build: (b) =>
      b.output(
        b.node(
          Op.MUL_MAT_ADD,
          [b.weight("w", a, [k, m]), b.input("x", F32, [k, 1]), b.input("c", F32, [m, 1])],
          [],
        )[0]!,
      ),
    tolerance: tol(a),
  });
}
// c added once after a product split over k (the int8 tensor-core path's partial sums).
for (const full of [false, true]) {
  const cn = full ? [130, 16] : [130];
  add({
    name: `MUL_MAT_ADD a=Q6_K b=F32 few-columns [768, 130]×[768, 16] c=${shape(cn)}`,
    op: "MUL_MAT_ADD",
    dtypes: ["Q6_K", "F32"],
    build: (b) =>
      b.output(
        b.node(
          Op.MUL_MAT_ADD,
          [b.weight("w", DType.Q6_K, [768, 130]), b.input("x", F32, [768, 16]), b.input("c", F32, cn)],
          [],
        )[0]!,
      ),
    tolerance: tol(DType.Q6_K),
  });
}
add({
  name: "MUL_MAT_ADD a=F32 b=F16 broadcast [64, 5, 2, 1]×[64, 3, 4, 2] c=[5, 1, 4]",
  op: "MUL_MAT_ADD",
  dtypes: ["F32", "F16"],
  build: (b) =>
    b.output(
      b.node(
        Op.MUL_MAT_ADD,
        [b.input("a", F32, [64, 5, 2, 1]), b.input("x", F16, [64, 3, 4, 2]), b.input("c", F32, [5, 1, 4])],
        [],
      )[0]!,
    ),
  tolerance: tol(F32, F16),
});
add({
  name: "MUL_MAT_ADD a=Q8_0 b=F32 transposed-b [64, 9]×[64, 5] c=transposed [9, 5]",
  op: "MUL_MAT_ADD",
  dtypes: ["Q8_0", "F32"],
  build: (b) =>
    b.output(
      b.node(
        Op.MUL_MAT_ADD,
        [b.weight("w", DType.Q8_0, [64, 9]), transposed(b, "x", 64, 5), transposed(b, "c", 9, 5)],
        [],
      )[0]!,
    ),
  tolerance: tol(DType.Q8_0),
});

/** The op-conformance table: every op × the dtypes it accepts × several shapes and layouts. */
export const CONFORMANCE_CASES: readonly ConformanceCase[] = cases;

/** Builds a case's graph. */
export function buildCase(c: ConformanceCase) {
  const b = new GraphBuilder();
  c.build(b);
  return b.build();
}
