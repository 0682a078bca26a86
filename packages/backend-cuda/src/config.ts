import { CudaBackendError } from "./errors.js";
import type { DecodeAttn } from "./native.js";

/** Environment settings of the CUDA backend, read here and nowhere else. */
export interface CudaEnv {
  /** MINFER_CUDA_GRAPHS=0: launch every program's kernels directly (no CUDA graph capture/replay). */
  readonly graphs: boolean;
  /**
   * MINFER_CUDA_ATTN=tile: prefill attention with F16 k/v runs on the f32 tile kernel instead of the
   * default `mma` (tensor cores; q and the softmax weights rounded to f16).
   */
  readonly attnMma: boolean;
  /** MINFER_CUDA_ATTN_WARPS (1, 2 or 4; default 4): warps of 16 rows a prompt-attention block. */
  readonly attnWarps: 1 | 2 | 4;
  /**
   * MINFER_CUDA_GEMM_STAGES (2 or 3; default 2): shared-memory stages of the f16 tensor-core GEMM of
   * prompts (ops/gemm_tc.cu); 3 copies B and loads A two k-tiles ahead.
   */
  readonly gemmStages: 2 | 3;
  /**
   * MINFER_CUDA_MMQ_BLOCKS (2 or 3; default 2): the int8 tensor-core kernel of 8 and 16 columns
   * built to fit that many blocks an SM (fewer registers a thread for 3).
   */
  readonly mmqBlocks: 2 | 3;
  /**
   * MINFER_CUDA_MMQ_ROWS (auto, 64 or 128; default auto, read as 0): weight rows of an int8
   * tensor-core kernel block at 16-64 columns (128: each activation tile read once for twice the
   * weights; split-K only, and where the GPU's shared memory holds the stages). `auto` takes 128 for
   * the products of 2^23 weight elements or more whose stages fit two blocks an SM.
   */
  readonly mmqRows: 0 | 64 | 128;
  /**
   * MINFER_CUDA_MMQ_STREAMK=1: the int8 kernel's work dealt out stream-K (as many blocks as the GPU
   * holds at once, each a contiguous run of k-tiles, shared output tiles added after) instead of
   * split-K; its sums then depend on the GPU's SM count. 2-512: at most that many blocks (tests:
   * blocks that run several output tiles). 0 or unset: split-K.
   */
  readonly mmqStreamk: number;
  /**
   * MINFER_CUDA_TOPK: how TOP_K of long rows (the candidate ids of a vocabulary) runs
   * (ops/sort.cu). `auto` (the default): a radix selection of the k-th best value, one block a
   * row, from 8 rows, the tiles below; `radix`: the radix selection for any number of rows;
   * `chunks`: from the best of each 128-element chunk, then the keys of the k best chunks sorted;
   * `tiles`: sorts of 4096 keys, kept k per tile, in rounds.
   */
  readonly topkChunks: boolean;
  /** The rows from which TOP_K takes the radix selection (0: never); undefined: the kernel's default (8). */
  readonly topkRadixRows: number | undefined;
  /**
   * MINFER_CUDA_DECODE_ATTN: the kernel of decode attention (few rows, F16 k/v, head size 64/128).
   * `vec` is ops/attention_decode.cuh, `tile` the f32 tile kernel, `flash` ops/attention_flash.cuh
   * (tensor cores, a warp a block, the cells split over many blocks); `auto` (the default) takes
   * `vec` for caches of up to 2048 cells and `flash` for longer ones (docs/PERFORMANCE.md).
   */
  readonly attnDecode: DecodeAttn;
  /** MINFER_CUDA_FUSE=0: every node is its own launch (no fused RoPE + KV-store kernel). */
  readonly fuse: boolean;
  /**
   * MINFER_CUDA_PDL=0: no programmatic dependent launch (by default the decode path's kernels
   * launch while the kernel before them finishes, on compute capability 9.0 and later).
   */
  readonly pdl: boolean;
  /**
   * MINFER_CUDA_ATTN_PER_QUERY=0: decode attention of several sequences stepping together runs on
   * the tile/tensor-core kernels, whose blocks walk the union of the queries' spans, instead of one
   * query per block on the decode kernel (the default).
   */
  readonly attnPerQuery: boolean;
  /**
   * MINFER_CUDA_MMQ: the activation-column counts whose quantized products run on the int8
   * tensor-core kernel (native/cuda/ops/mmq.cuh), as `MIN-MAX` within 2-8192 (beyond 64 columns in tiles of 64: a prompt's products), or `0` for none (the
   * dp4a mat-vec up to 8 columns, the f16 tensor-core GEMM beyond). Unset (undefined here): the
   * kernel's measured defaults per weight type: 5-64 columns for Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0,
   * 3-32 for Q6_K, 5-32 for the other K-quants (docs/PERFORMANCE.md).
   */
  readonly mmqCols: readonly [number, number] | undefined;
  /**
   * MINFER_CUDA_MV_WIDE=0: the dp4a mat-vec reads Q4_0, Q8_0 and Q6_K quants with 2-byte loads
   * instead of the default 8-byte ones shifted into place (native/cuda/ops/matvec_q.cuh).
   */
  readonly mvWideLoads: boolean;
  /**
   * MINFER_CUDA_MV1 and MINFER_CUDA_MV (`WxR`): the dp4a mat-vec's launch shape for one activation
   * column and for 2-8: W warps (1 or 2) share a group of R rows (1 or 2; 0: 2 when the rows
   * fill the device), taking the 32-element parts of K in turn. Unset: 1x0 for one column; for 2-8
   * columns the measured choice per column count and type (native/cuda/ops/matvec_q.cuh MvShape).
   */
  readonly mvShape: MvShape;
  /**
   * MINFER_CUDA_STEP_TIMES=1: every execute is timed (its GPU time between two events, the host
   * time inside it) and the sums appear in the runtime's `graphStats().stepTimes`. Off by default.
   */
  readonly stepTimes: boolean;
  /**
   * MINFER_CUDA_DECODE_ROWS: rows of a kv head per block of the decode attention kernel for one
   * query (the largest divisor of the rows not above it), 1-64; unset: 1 (64: all of a kv head's
   * rows in one block, as before). Several queries keep one query's rows a block.
   */
  readonly decodeRows: number;
  /**
   * MINFER_CUDA_ROPE_BLOCK=0: a decode token's RoPE and K/V stores run on the flat kernel (one or
   * two wide launches) instead of the default single block that loads everything first.
   */
  readonly ropeBlock: boolean;
  /**
   * MINFER_CUDA_QKV_ROPE=0: the q/k/v product's mat-vec no longer rotates q and k and stores the
   * K/V cache rows in its epilogue (the default since the H200's op suite and memcheck ran clean
   * with it, 2026-12-05); rope_store's launch after the product does that work instead.
   */
  readonly qkvRope: boolean;
  /**
   * MINFER_CUDA_FUSE_ROWS: decode steps of up to this many rows (sequences; 1-64, default 64) have
   * their norms and SwiGLU write the quantized activations of the product after them, one launch
   * a product less; 1: only a single sequence's steps, as before.
   */
  readonly fuseRows: number;
  /**
   * MINFER_CUDA_ATTN_QUANT_ROWS: decode steps of up to this many sequences (1-64, default 64) have
   * their attention's last writer also write the o product's quantized activations, one launch a
   * layer less; 1: only a single sequence's steps, as before.
   */
  readonly attnQuantRows: number;
  /**
   * MINFER_CUDA_FUSED_COMBINE=0: decode attention over several splits merges them in a kernel of
   * its own instead of in the last split's block to finish (the default).
   */
  readonly fusedCombine: boolean;
  /**
   * MINFER_CUDA_INV_BATCHED=1: a batch-invariant program (a speculative verification) runs its
   * attention's queries together on the decode kernel and each product's column chunks in one
   * launch, each query and column with a one-token decode's bits as before, instead of a launch a
   * query and a launch a chunk of 8 columns (the default until it is measured on a GPU).
   */
  readonly invariantBatched: boolean;
  /**
   * MINFER_CUDA_PER_QUERY_ATTN: the kernel of several sequences' decode attention one query a
   * block: `flash` (the default) the tensor-core kernel (ops/attention_flash.cuh, a warp a block
   * holding the query's q heads), `vec` the decode kernel (ops/attention_decode.cuh, which
   * MINFER_CUDA_DECODE_ATTN=vec also asks for).
   */
  readonly perQueryFlash: boolean;
  /**
   * MINFER_CUDA_PER_QUERY_BLOCKS: blocks an SM the splits of that attention aim for, 1-64; unset
   * (0 here): 1 on the tensor-core kernel, 4 on the decode kernel (docs/PERFORMANCE.md).
   */
  readonly perQueryBlocks: number;
  /**
   * MINFER_CUDA_PER_QUERY_SPLITS: at most this many splits a query for that attention, 1-16 (1: no
   * merge of partials); unset (0 here): as MINFER_CUDA_PER_QUERY_BLOCKS gives.
   */
  readonly perQuerySplits: number;
  /**
   * MINFER_CUDA_NORM_SLICE_ROWS: norms of up to this many rows (0-263, default 8) cut each row
   * into slices a block each (decode); more rows take a block a row.
   */
  readonly normSliceRows: number;
  /**
   * MINFER_CUDA_MMQ_TARGET_BLOCKS: the int8 products split K until a launch has this many blocks,
   * 1-512 (default 264, measured on an H200; native/cuda/ops/mmq.cuh mmq_plan): fewer, fewer splits
   * and partial sums.
   */
  readonly mmqTargetBlocks: number;
  /**
   * MINFER_CUDA_POLL=0: a step that replays a captured graph is handed to a worker thread that
   * waits for it, as a first run is, instead of being enqueued on the JavaScript thread and polled
   * between event-loop turns (the default; CudaRuntime.executeWithIo).
   */
  readonly replayOnThread: boolean;
}

/** The dp4a mat-vec's launch shape (native/cuda/ops/matvec_q.cuh MvShape). */
export interface MvShape {
  /** One column: warps that share a row group, rows a group (0: 2 when the rows fill the device). */
  readonly warps1: 1 | 2;
  readonly rows1: 0 | 1 | 2;
  /** 2-8 columns; warps 0 (unset): chosen per column count and weight type. */
  readonly warps: 0 | 1 | 2;
  readonly rows: 0 | 1 | 2;
  /**
   * 3-4 columns over a K above 4096: warps a row group (0, unset: 4 for the 32-element types, Q4_0's
   * on a kernel held to 72 registers; 4: the earlier kernel, the same sums).
   */
  readonly warpsLong: 0 | 1 | 2 | 4;
  /**
   * MINFER_CUDA_MV_FEW (`WxR`): 3-4 columns of a Q4_0 product of at most 4096 rows over a K of at
   * most 4096 (the o product): warps and rows a group (0, unset: 2x3 above 3072 rows, else 2x2).
   */
  readonly warpsFew: 0 | 1 | 2;
  readonly rowsFew: 0 | 1 | 2 | 3;
  /**
   * MINFER_CUDA_MV_TIGHT (`WxR` then `r`, `c` or `s`, e.g. "4x2r"), for measurement: 3-4 columns of
   * every Q4_0 product but the q/k/v product with its RoPE with W warps a group of R rows, on a
   * kernel held to 72 registers (7 blocks an SM), each row's part first (`r`, tightRowsFirst 1) or
   * the columns' codes first (`c`, 0), or each part's columns split between a lane pair (`s`, 2).
   * 0 (unset): off.
   */
  readonly tightWarps: 0 | 2 | 4;
  readonly tightRows: 0 | 1 | 2 | 3;
  readonly tightRowsFirst: 0 | 1 | 2;
  /**
   * MINFER_CUDA_MV_SPLIT: 3-4 columns of a Q4_0 product (not the q/k/v product with its RoPE) on the
   * mat-vec that splits each part's columns between a lane pair (1, unset), or on the kernels before
   * it (0); 2: the q/k/v product with its RoPE too. Any other shape switch set takes precedence.
   */
  readonly split: 0 | 1 | 2;
  /**
   * MINFER_CUDA_MV1_FEW (`WxR@ROWS`, e.g. "4x1@8192"), for measurement: one column of a launch of
   * fewer than ROWS rows in all (qwen2-7b's down and o products: 3584) with W warps (2 or 4) a group
   * of R rows (1 or 2). 0 (unset): off, the one-column shape above for every product.
   */
  readonly warps1Few: 0 | 2 | 4;
  readonly rows1Few: 0 | 1 | 2;
  readonly fewRows: number;
}

/** MINFER_CUDA_MV1_FEW: [warps, rows, the row count below which they apply]; unset [0, 0, 0]. */
function mv1Few(env: NodeJS.ProcessEnv): readonly [0 | 2 | 4, 0 | 1 | 2, number] {
  const v = env.MINFER_CUDA_MV1_FEW ?? "";
  if (v === "") return [0, 0, 0];
  const m = /^([24])x([12])@(\d+)$/.exec(v);
  const rows = m ? Number(m[3]) : Number.NaN;
  if (!m || !(rows >= 1 && rows <= 2 ** 30))
    throw new CudaBackendError(
      "INVALID_ARGUMENT",
      `MINFER_CUDA_MV1_FEW must be WxR@ROWS with W warps 2 or 4, R rows 1 or 2 and ROWS in 1-${2 ** 30} (e.g. "4x1@8192"), not ${JSON.stringify(v)}`,
    );
  return [Number(m[1]) as 2 | 4, Number(m[2]) as 1 | 2, rows];
}

function mvShapeOf(env: NodeJS.ProcessEnv, name: string, unset: readonly [0 | 1 | 2, 0 | 1 | 2]) {
  const v = env[name] ?? "";
  if (v === "") return unset;
  const m = /^([12])x([012])$/.exec(v);
  if (!m)
    throw new CudaBackendError(
      "INVALID_ARGUMENT",
      `${name} must be WxR with W warps 1 or 2 and R rows 0, 1 or 2 (e.g. "2x2"), not ${JSON.stringify(v)}`,
    );
  return [Number(m[1]) as 0 | 1 | 2, Number(m[2]) as 0 | 1 | 2] as const;
}

function intIn(env: NodeJS.ProcessEnv, name: string, lo: number, hi: number, unset: number): number {
  const v = env[name] ?? "";
  if (v === "") return unset;
  const n = /^\d+$/.test(v) ? Number(v) : Number.NaN;
  if (!(n >= lo && n <= hi))
    throw new CudaBackendError(
      "INVALID_ARGUMENT",
      `${name} must be an integer in ${lo}-${hi}, not ${JSON.stringify(v)}`,
    );
  return n;
}

function mmqRange(env: NodeJS.ProcessEnv): readonly [number, number] | undefined {
  const v = env.MINFER_CUDA_MMQ ?? "";
  if (v === "") return undefined;
  if (v === "0") return [0, 0];
  const m = /^(\d+)-(\d+)$/.exec(v);
  const lo = m ? Number(m[1]) : Number.NaN;
  const hi = m ? Number(m[2]) : Number.NaN;
  if (!(lo >= 2 && lo <= hi && hi <= 8192))
    throw new CudaBackendError(
      "INVALID_ARGUMENT",
      `MINFER_CUDA_MMQ must be "0" or a column range MIN-MAX with 2 <= MIN <= MAX <= 8192, not ${JSON.stringify(v)}`,
    );
  return [lo, hi];
}

function choice(env: NodeJS.ProcessEnv, name: string, values: readonly string[]): string {
  const v = env[name] ?? "";
  if (v !== "" && !values.includes(v))
    throw new CudaBackendError(
      "INVALID_ARGUMENT",
      `${name} must be ${values.map((x) => JSON.stringify(x)).join(" or ")}, not ${JSON.stringify(v)}`,
    );
  return v;
}

function mvShapeFrom(env: NodeJS.ProcessEnv): MvShape {
  const [warps1, rows1] = mvShapeOf(env, "MINFER_CUDA_MV1", [1, 0]);
  const [warps, rows] = mvShapeOf(env, "MINFER_CUDA_MV", [0, 0]);
  const long = choice(env, "MINFER_CUDA_MV_LONG", ["1", "2", "4"]);
  const few = choice(env, "MINFER_CUDA_MV_FEW", ["1x1", "1x2", "1x3", "2x1", "2x2", "2x3"]);
  const tight = choice(env, "MINFER_CUDA_MV_TIGHT", [
    "2x1r",
    "2x2r",
    "4x1r",
    "4x1c",
    "4x2r",
    "4x2c",
    "2x2s",
    "2x3s",
    "4x1s",
    "4x2s",
    "4x3s",
  ]);
  const [warps1Few, rows1Few, fewRows] = mv1Few(env);
  // (the pattern takes W 1 or 2; 0 is only MINFER_CUDA_MV's unset default)
  return {
    warps1: warps1 === 2 ? 2 : 1,
    rows1,
    warps,
    rows,
    warpsLong: long === "" ? 0 : (Number(long) as 1 | 2 | 4),
    warpsFew: few === "" ? 0 : (Number(few[0]) as 1 | 2),
    rowsFew: few === "" ? 0 : (Number(few[2]) as 1 | 2 | 3),
    tightWarps: tight === "" ? 0 : (Number(tight[0]) as 2 | 4),
    tightRows: tight === "" ? 0 : (Number(tight[2]) as 1 | 2 | 3),
    tightRowsFirst: tight[3] === "r" ? 1 : tight[3] === "s" ? 2 : 0,
    split: Number(choice(env, "MINFER_CUDA_MV_SPLIT", ["0", "1", "2"]) || "1") as 0 | 1 | 2,
    warps1Few,
    rows1Few,
    fewRows,
  };
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): CudaEnv {
  const attn = choice(env, "MINFER_CUDA_ATTN", ["mma", "tile"]);
  const topk = choice(env, "MINFER_CUDA_TOPK", ["auto", "radix", "tiles", "chunks"]) || "auto";
  return {
    graphs: env.MINFER_CUDA_GRAPHS !== "0",
    attnMma: attn !== "tile",
    attnWarps: Number(choice(env, "MINFER_CUDA_ATTN_WARPS", ["1", "2", "4"]) || "4") as 1 | 2 | 4,
    gemmStages: Number(choice(env, "MINFER_CUDA_GEMM_STAGES", ["2", "3"]) || "2") as 2 | 3,
    mmqBlocks: Number(choice(env, "MINFER_CUDA_MMQ_BLOCKS", ["2", "3"]) || "2") as 2 | 3,
    mmqRows: Number(choice(env, "MINFER_CUDA_MMQ_ROWS", ["auto", "64", "128"]).replace("auto", "0") || "0") as
      | 0
      | 64
      | 128,
    mmqStreamk: intIn(env, "MINFER_CUDA_MMQ_STREAMK", 0, 512, 0),
    topkChunks: topk === "chunks",
    topkRadixRows: topk === "auto" ? undefined : topk === "radix" ? 1 : 0,
    attnDecode: (choice(env, "MINFER_CUDA_DECODE_ATTN", ["auto", "tile", "vec", "flash"]) ||
      "auto") as DecodeAttn,
    fuse: choice(env, "MINFER_CUDA_FUSE", ["0", "1"]) !== "0",
    pdl: choice(env, "MINFER_CUDA_PDL", ["0", "1"]) !== "0",
    attnPerQuery: choice(env, "MINFER_CUDA_ATTN_PER_QUERY", ["0", "1"]) !== "0",
    mmqCols: mmqRange(env),
    mvWideLoads: choice(env, "MINFER_CUDA_MV_WIDE", ["0", "1"]) !== "0",
    mvShape: mvShapeFrom(env),
    stepTimes: choice(env, "MINFER_CUDA_STEP_TIMES", ["0", "1"]) === "1",
    decodeRows: intIn(env, "MINFER_CUDA_DECODE_ROWS", 1, 64, 1),
    ropeBlock: choice(env, "MINFER_CUDA_ROPE_BLOCK", ["0", "1"]) !== "0",
    qkvRope: choice(env, "MINFER_CUDA_QKV_ROPE", ["0", "1"]) !== "0",
    fuseRows: intIn(env, "MINFER_CUDA_FUSE_ROWS", 1, 64, 64),
    attnQuantRows: intIn(env, "MINFER_CUDA_ATTN_QUANT_ROWS", 1, 64, 64),
    fusedCombine: choice(env, "MINFER_CUDA_FUSED_COMBINE", ["0", "1"]) !== "0",
    invariantBatched: choice(env, "MINFER_CUDA_INV_BATCHED", ["0", "1"]) === "1",
    perQueryFlash: choice(env, "MINFER_CUDA_PER_QUERY_ATTN", ["flash", "vec"]) !== "vec",
    perQueryBlocks: intIn(env, "MINFER_CUDA_PER_QUERY_BLOCKS", 1, 64, 0),
    perQuerySplits: intIn(env, "MINFER_CUDA_PER_QUERY_SPLITS", 1, 16, 0),
    normSliceRows: intIn(env, "MINFER_CUDA_NORM_SLICE_ROWS", 0, 263, 8),
    mmqTargetBlocks: intIn(env, "MINFER_CUDA_MMQ_TARGET_BLOCKS", 1, 512, 264),
    replayOnThread: choice(env, "MINFER_CUDA_POLL", ["0", "1"]) !== "0",
  };
}
