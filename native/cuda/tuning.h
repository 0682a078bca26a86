// Kernel variants chosen at run time, so that one GPU run can measure several of them side by side.
// Set per executor from JavaScript (packages/backend-cuda/src/config.ts reads the environment).
#pragma once

namespace minfer::cuda {

// Which kernel runs decode attention (few rows, F16 k/v, head size 64 or 128).
enum class DecodeAttn {
  Auto,  // Vec for caches of at most kDecAutoMaxCells cells (ops/attention_decode.cuh), Flash beyond
  Tile,  // the f32 tile kernel (ops/attention_kernels.cuh)
  Vec,   // the decode kernel (ops/attention_decode.cuh)
  Flash, // the tensor-core kernel with tiles copied ahead, one warp a block, cells split over many
         // blocks (ops/attention_flash.cuh); Auto takes it beyond kDecAutoMaxCells
};

// The dp4a mat-vec's launch shape (ops/matvec_q.cuh): warps that share a group of rows, taking the
// parts of K in turn (1 or 2), and rows a group (1 or 2; 0: 2 when the rows fill the device), for one
// activation column and for 2-8. warps 0 (the default for 2-8 columns): by measurement on the H200
// (docs/PERFORMANCE.md, session 20), 2 warps a group of 2 rows for 2 columns, and for 3-4 columns of
// the 32-element types; a warp a row otherwise (Q4_0 3584 x 18944 at 2 / 4 columns 26.4 / 38.0
// against 27.6 / 39.6 us; Q4_K at 4 columns 45.0 against 43.3). One column: a warp a group of 1 or
// 2 rows, what was measured fastest there.
struct MvShape {
  int warps1 = 1, rows1 = 0;  // one column
  int warps = 0, rows = 0;    // 2-8 columns (rows 0: as for one column)
  // 3-4 columns over a K above 4096 (the FFN's down product): warps a group of 2 rows (1: one row),
  // 1, 2 or 4; 0: 4 for the 32-element types (a block's 4 warps over each row pair's parts, as
  // llama.cpp's mat-vec of 2-8 columns; on the H200 Q4_0 18944 x 3584 at 4 columns 32.6 against
  // 38.2 us for 2 warps, docs/PERFORMANCE.md session 20; bench -npl 4 of qwen2-7b Q4_0 841-849 against
  // 825-831 tok/s, session 26), as before for the K-quants; Q4_0's on a kernel held to 72
  // registers, each row's part first (launch_mv_q_warp; 4 here: the earlier kernel, the same sums).
  int warps_long = 0;
  // 3-4 columns of a Q4_0 product of at most 4096 rows over a K of at most 4096 (the o product):
  // warps a group (1 or 2) and rows a group (1, 2 or 3); 0: 2 warps a group of 3 rows above 3072
  // rows, 2 of 2 below (at 2 x 2 the o product's 896 blocks are one wave and a tail of 104 at 6
  // blocks an SM, Nsight Compute, docs/PERFORMANCE.md session 34; 2 x 3 is 598 blocks: on the H100
  // 12.35 against 14.88 us, a warp a row 13.79, 1 x 3 16.54; the 512-row k/v shape 10.69 at 2 x 3
  // against 9.34, session 38).
  int warps_few = 0, rows_few = 0;
  // 3-4 columns of a Q4_0 product (every shape but the q/k/v product with its RoPE epilogue), for
  // measurement: tight_warps (2 or 4) warps a group of tight_rows (1-3) rows, on
  //   tight_rows_first 0 or 1: a kernel asked for 7 blocks an SM (ptxas keeps it to 72 registers,
  //     llama.cpp's mat-vec's occupancy at 4 columns, against 80-96 for the default's kernels), the
  //     columns' codes first (0) or each row's part first (1, launch_mv_q_warp's order for a short K);
  //   tight_rows_first 2: each part's columns split between a lane pair (ops/matvec_q_split.cuh: 2
  //     columns' codes a lane, so a pass's loads stay in flight at 70 registers; on the H100 at 2 x 2
  //     mmq-bench's down product 26.8 against 31.1-31.6 us, o 11.3 against 12.3-12.5, gate/up 33.9
  //     against 34.3-34.5, bench -npl 4 of qwen2-7b Q4_0 974-995 against 922-925 tok/s,
  //     docs/PERFORMANCE.md session 39; the op suite, memcheck and the smoke passed at 2 x 2 as the
  //     default, session 40).
  // tight_warps 0: off.
  int tight_warps = 0, tight_rows = 0, tight_rows_first = 0;
  // 3-4 columns of a Q4_0 product (not the q/k/v product with its RoPE epilogue), unless another
  // shape is set (warps, warps_few, warps_long, tight_warps): 1, each part's columns split between
  // a lane pair, 2 warps a group of 2 rows (ops/matvec_q_split.cuh; figures above, tight_rows_first
  // 2); 0: the kernels before it (groups of 3 rows for the o product, rows first, and the
  // 72-register kernel over a K above 4096); 2: as 1, and the q/k/v product with its RoPE
  // epilogue over a K of up to 4096 too (a RoPE pair a group, 2 warps). On the H100, bench -npl 4
  // of llama-quantize's qwen2-7b Q4_0: 953.0 (1) against 900.7 (0) and 954.1 (2) tok/s, llama.cpp
  // 922.3 (docs/PERFORMANCE.md session 40).
  int split = 1;
  // One column, products of fewer than few_rows rows in all (the launch's weights together; the
  // FFN's down and the o product of qwen2-7b are 3584): warps1_few warps (2 or 4) a group of
  // rows1_few rows (1 or 2; 0: 1), for measurement (MINFER_CUDA_MV1_FEW, e.g. "4x1@8192"). Few rows
  // over a warp a row pair leave an SM a dozen warps (3584 rows: 1792 warps on 132 SMs) to keep
  // loads in flight; llama.cpp's mat-vec gives a row 4 warps. warps1_few 0: off.
  int warps1_few = 0, rows1_few = 0;
  long long few_rows = 0;
  // Batch-invariant launches (Tuning::batch_invariant): 2 or more columns take the one-column
  // launch's warps a group (warps1, or warps1_few below few_rows), so that each column's sum is
  // the one-column launch's in the same order (a lane's parts, then the warp's reduction, then the
  // group's warps in slice order); more columns than one launch takes run in chunks.
  bool invariant = false;
  // Batch-invariant launches of more columns than one launch takes: every chunk in one launch, the
  // chunks as planes (mv_col_planes), instead of a launch a chunk (Tuning::invariant_batched).
  bool invariant_planes = false;
};

struct Tuning {
  // ATTENTION over many rows (prefill) with F16 k/v and head size 64 or 128: the tensor-core kernel
  // (ops/attention_flash.cuh: K/V tiles copied ahead into two stages, q and P rounded to f16, f32
  // accumulation) instead of the f32 tile kernel. attn_warps: warps (16 rows each) of a block, 1, 2
  // or 4. (It replaced ops/attention_mma.cuh, which loaded each tile and waited for it: pp512 at
  // depth 4096 11349 against 8813 tok/s on the H200, docs/PERFORMANCE.md session 18.)
  bool attn_mma = true;
  int attn_warps = 4;
  // ATTENTION over few rows (decode) with F16 k/v and head size 64 or 128. On the H200 (qwen2-7b
  // Q4_0, tg128) the decode kernel measured 273 against 260 tok/s at depth 0 and 231 against 249 at
  // depth 4096, where its narrow V loads from memory lose to the tile kernel's (docs/PERFORMANCE.md).
  DecodeAttn attn_decode = DecodeAttn::Auto;
  // Decode attention of several queries (sequences decoding together) one query per block on the
  // decode kernel (ops/attention_decode.cuh per_query_takes), instead of the tile or tensor-core
  // kernels whose blocks walk the union of their queries' spans. On the H200, 16 queries with their
  // own 256-cell regions: 19 against 197 us (docs/PERFORMANCE.md).
  bool attn_per_query = true;
  // Adjacent nodes run as one launch where a fused kernel exists (fused.cu: RoPE of q and k with
  // the k and v cache stores).
  bool fuse = true;
  // Programmatic dependent launch (pdl.cuh) for the decode path's kernels, on compute capability 9.0
  // and later: each kernel's launch overlaps the tail of the one before it.
  bool pdl = true;
  // Quantized products of mmq_min_cols..mmq_max_cols activation columns (one plane) run on the
  // int8 tensor-core kernel (ops/mmq.cuh) instead of the dp4a mat-vec (up to 8 columns) or the
  // f16 tensor-core GEMM (beyond). mmq_min_cols > mmq_max_cols turns it off; the kernel takes
  // 2..8192 (kMmqMaxCols; beyond 64 in column tiles of 64, slower than the GEMM for a prompt).
  // mmq_min_cols 0 and mmq_max_cols -1 mean the per-type defaults measured on the H200
  // (ops/mmq.cuh mmq_default_min_cols / mmq_default_max_cols, docs/PERFORMANCE.md).
  int mmq_min_cols = 0;
  int mmq_max_cols = -1;
  // Shared-memory stages of the f16 tensor-core GEMM's k-tile pipeline (ops/gemm_tc.cu): 2, or 3
  // with B copied and A loaded two k-tiles ahead (to be measured against 2 on the H200).
  int gemm_stages = 2;
  // Blocks an SM fits of the int8 kernel at 8 and 16 columns (ops/mmq.cuh MINB): 2 (128 registers a
  // thread) or 3 (80; a few spill for Q6_K and Q3_K), to be measured.
  int mmq_blocks = 2;
  // The int8 kernel's work dealt out stream-K (ops/mmq.cuh): as many blocks as the GPU holds at
  // once, each a contiguous run of (output tile, k-tile) units, the tiles that blocks share added
  // in block order after, instead of split-K blocks that fill whole waves and a partial last one
  // (measured on the H200, docs/PERFORMANCE.md session 19: 5-16% faster on the FFN products at
  // 4-16 columns, slower on the 512-row K/V products and at 32-64 columns; the sums depend on the
  // SM count). 0: split-K; 1: as many blocks as the GPU holds; 2..512: that many (a test's, to run
  // blocks of several segments).
  int mmq_streamk = 0;
  // Weight rows of an int8 kernel block at 16-64 columns (ops/mmq.cuh): 64, or 128 (every warp 16
  // rows over all of a k-tile's chunks; each activation tile read once for twice the weights; on
  // split-K launches only, and where the device's shared memory holds the stages); 0 (auto): 128
  // for launches of at least 2^23 weight elements whose stages fit two blocks an SM, else 64.
  int mmq_rows = 0;
  // Split-K of the int8 kernel: K is split until a launch's blocks reach this many (1-512; at most
  // ops/mmq.cuh kMmqTargetBlocks, for which scratch is sized). A constant, not the device's SM count,
  // so that the sums do not depend on the GPU. On the H200 (132 SMs, two blocks each), a step of 64
  // sequences of qwen2-7b Q4_0 5712-5839 tok/s with 264 against 5371-5454 with 512 (the 3584-row
  // products at 64 columns then 10 splits, not 19), 16 sequences 2735-2818 against 2656-2689; 132,
  // 200 and 384 in between or slower (docs/PERFORMANCE.md session 25).
  int mmq_target_blocks = 264;
  // TOP_K of long rows (a vocabulary's candidate ids) from each 128-element chunk's best, the k best
  // chunks' keys sorted (ops/sort.cu chunk_select_kernel), instead of sorting tiles of 4096 keys
  // (to be measured on the H200: 1017 us for 64 rows of 152,064 on the tiles).
  bool topk_chunks = false;
  // TOP_K of long rows (a vocabulary's candidate ids, k <= 1024) by a radix selection of the k-th
  // best value, one block a row reading it four times (ops/sort.cu radix_select_kernel), when there
  // are at least this many rows (0: never); it comes before topk_chunks and the tile sorts. One
  // block a row is slower than the tiles' many blocks for a row or a few: on the H200 the server's
  // step of 1 / 16 / 64 sequences of qwen2-7b took 2.93 / 7.12 / 15.49 ms with it against 2.83 /
  // 7.31 / 16.60 on the tiles (docs/PERFORMANCE.md session 21).
  int topk_radix_rows = 8;
  // The dp4a mat-vec reads the quants of Q4_0, Q8_0 and Q6_K (2-byte aligned blocks) with 8-byte
  // loads shifted into place instead of 2-byte loads (ops/matvec_q.cuh ld_words2). On the H200 at
  // one column: Q6_K 3584 x 18944 37.3 against 40.9 us, 18944 x 3584 29.5 against 41.7; Q8_0 26.5
  // against 29.3; Q4_0 20.8 against 21.3 (docs/PERFORMANCE.md). For Q4_K, 16-byte loads measured
  // slower (24.1 against 21.6 us), so its 4-byte loads stay. Q6_K's wide parts are also laid out so
  // that each quant byte is read once (ops/matvec_q.cuh PQ6_Ks, to be measured on the H200).
  bool mv_wide_loads = true;
  // The dp4a mat-vec's launch shape (MvShape above; MINFER_CUDA_MV1, MINFER_CUDA_MV).
  MvShape mv;
  // Time every execute (MINFER_CUDA_STEP_TIMES=1): the GPU time from its first node to its last
  // (two events around the launch) and the host time inside execute, summed in the executor's
  // stats, so the host's part of a step (the GPU idle between steps) can be measured. Off by
  // default: two event records and a query per execute.
  bool step_times = false;
  // Decode attention of one query (ops/attention_decode.cuh): rows of a kv head per block (the
  // largest divisor of its rows not above this). One row a block gives each block the shortest
  // chain and the grid the most blocks (K/V is read once per block, from L2 after the first): on
  // the H200, llama-quantize's qwen2-7b Q4_0 tg128 367.6 against 349.6 tok/s for all 7 rows of a kv
  // head in one block (docs/PERFORMANCE.md). Several queries (attn_per_query) keep one query's
  // rows a block: their grid is large already, and rows apart multiplied their K/V reads (a step
  // of 64 sequences lost 12%).
  int decode_rows = 1;
  // RoPE of q and k with the K/V stores of one decode token (ops/rope_store.cu): one block that
  // loads every input before it stores anything, instead of the flat kernel's one or two launches.
  bool rope_block = true;
  // The q/k/v product's mat-vec also rotates q and k and stores k and v into the caches (its
  // epilogue, ops/qkv_rope.cu) instead of rope_store's launch (one token) or launches after it.
  // Off until it has run the op suite and memcheck on a GPU (written in a session without one).
  bool qkv_rope = false;
  // Rows (sequences of a decode step) up to which RMS_NORM_MUL and SWIGLU / GEGLU also write the
  // quantized activations of the product reading them (ops/producer_matvec.cu), 1-64: one launch
  // a product less; more rows quantize in the product's own launch.
  int fuse_rows = 64;
  // Queries (sequences of a decode step) up to which the attention's last writer (its decode
  // kernel's store, the merge of its splits) also writes the o product's quantized activations
  // (ops/attn_matvec.cu), 1-64: one launch a layer less at 2-64 sequences; 1: one sequence's
  // steps only, the others quantize in the product's own launch.
  int attn_quant_rows = 64;
  // Decode attention over several splits of blocks of one or two rows merges them in the last block
  // of each row group to finish (a device counter finds it) instead of in a combine kernel launched
  // after it. (With more rows a block, the last block's merge of each row one after another cost
  // more than the launch: 289-302 against 334 tok/s with 7 rows, docs/PERFORMANCE.md.)
  bool fused_combine = true;
  // Decode attention of several queries one query per block (attn_per_query) on the tensor-core
  // kernel (ops/attention_flash.cuh, a warp a block: the query's q heads of a kv head as its 16
  // rows) instead of the decode kernel (which DecodeAttn::Vec still asks for). On the H200, a step of 64 sequences of qwen2-7b Q4_0: 26 us
  // of attention a layer against 58 (Nsight Compute), bench -npl 64 5183-5189 against 4630-4666
  // tok/s; 16 sequences 2580-2593 against 2523-2548 (docs/PERFORMANCE.md session 25).
  bool per_query_flash = true;
  // Blocks an SM the splits of that attention aim for (each query's cells cut over its blocks,
  // ops/attention_decode.cuh per_query_splits); 0: 1 on the tensor-core kernel (no split of a
  // 128-256-cell query, so no merge: 64 sequences 5298-5308 against 5183-5189 tok/s with 4), 4 on
  // the decode kernel (what one query measured best with; 16 measured slower for 64 sequences).
  int per_query_blocks = 0;
  // At most this many splits a query for that attention (1: none, so no merge of partials); 0: as
  // per_query_blocks gives. (A few queries over short spans get splits with no cells of their own
  // but a merge of all of them: a step of 4 sequences, Nsight Compute on the H200, 12.7 us of the
  // kernel and 4.0 of its combine a layer, docs/PERFORMANCE.md session 35. Capping them was then
  // slower: bench -npl 4 of qwen2-7b Q4_0 on the H100, 878.8 t/s with 1 against 908.2 by default;
  // splits taken only per tile of the query's own span measured alike, 908.5 against 912.2 —
  // session 36: the empty splits cost nothing a step shows, the splits that hold a tile are the
  // parallelism.)
  int per_query_splits = 0;
  // RMS_NORM / NORM of up to this many rows (below 264) cut each row into slices of 256, a block a
  // slice, every block reducing the whole row (ops/norm.cu norm_slice_kernel); more rows take a block
  // of 1024 threads a row. On the H200 a step of 64 sequences took 12.7 us a norm on slices and
  // 6.4 a block a row (Nsight Compute); one row stays on slices (its launch is one block otherwise).
  int norm_slice_rows = 8;
  // Set for the programs flagged PROGRAM_FLAG_BATCH_INVARIANT (a speculative verification), never
  // from the environment: each token's results must be the bits of a one-token decode of it
  // (batch_invariant_tuning below).
  bool batch_invariant = false;
  // A batch-invariant program's attention queries together on the decode kernel and each product's
  // column chunks in one launch (ops/attention.cu launch_decode_invariant, MvShape::invariant_planes),
  // instead of a launch a query and a launch a chunk of 8 columns (MINFER_CUDA_INV_BATCHED=1; off
  // until measured on a GPU: written in session 49 when no GPU was left to check its bits).
  bool invariant_batched = false;
};

// The tuning of a batch-invariant program under t: every quantized product on the dp4a mat-vec
// with the one-column launch's warps (MvShape::invariant; no int8 tensor-core kernel, no f16 GEMM,
// none of the 2-8-column shapes), norms of up to 263 rows on slices as one row's are, and
// attention one query at a time as a one-token decode runs it (ops/attention.cu).
inline Tuning batch_invariant_tuning(Tuning t) {
  t.batch_invariant = true;
  t.mv.invariant = true;
  t.mv.invariant_planes = t.invariant_batched;
  t.mmq_min_cols = 2;
  t.mmq_max_cols = 1;  // (min above max: off)
  t.norm_slice_rows = 263;
  return t;
}

}  // namespace minfer::cuda
