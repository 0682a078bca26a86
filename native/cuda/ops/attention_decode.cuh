// Decode attention (ops/attention.cu picks it for caches of up to kDecAutoMaxCells cells, or always
// with MINFER_CUDA_DECODE_ATTN=vec): few rows per kv head (one or a few queries times
// the q heads of a group, at most kDecMaxRows), F16 K and V, head size 64 or 128. Decode is bound
// by latency, not by arithmetic or bandwidth (depth 512 of a 7B model reads about 1 MB), so the
// kernel keeps each block's dependency chain short:
//
//  * A block (HD threads) owns one kv head and one split of the cells its rows can see: the union
//    of the rows' spans (or all cells with a mask) is cut into n_splits equal chunks on the device,
//    so a graph captured for the whole cache spreads the cells actually in use over every split.
//  * A tile is kTile cells (4 per warp: 16 for head size 128). Scores: 8 lanes per cell, each
//    reading 16-byte units u = sub, sub + 8, … of the K row (the 8 lanes of a cell cover 128
//    contiguous bytes, and their q reads fall on distinct banks), then three shuffles give the dot
//    of every row. Small tiles keep each warp's instruction chain short: with one warp per
//    scheduler nothing hides latency, so a block's time is its instruction count times their
//    latency (Nsight Compute: "wait" and short-scoreboard stalls), and the splits give the GPU the
//    parallelism instead.
//  * Each row's online softmax is updated by one warp (running max and sum in shared memory), then
//    thread d accumulates dim d of every row: acc = acc * corr + Σ_c p_c V[c][d]. A tile's V loads
//    are issued before its scores, so K and V cost one memory latency together, and the next
//    tile's loads are issued before this tile's arithmetic (registers double-buffer them).
//  * One split writes the output; several write partials (m, l, acc) that attn_combine_kernel
//    (attention_kernels.cuh) merges, in the tile kernel's layout.
//
// Semantics are the tile kernel's (the CPU's): a cell is hidden when it is outside the row's span or
// its mask value is -inf (tested before the score), softcap before the mask add, a weight of 0 never
// multiplies V (an unwritten cache cell may hold NaN bits), a row that sees no cell gets zeros, and a
// bad span is reported (detail: the offending value) and sees nothing.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "attention_kernels.cuh"

namespace minfer::cuda::attn {

constexpr int kDecMaxRows = 8;       // rows of one kv head (group × queries)
constexpr int kDecLanesPerCell = 8;                            // lanes that score one cell
constexpr int kDecCellsPerWarp = kWarp / kDecLanesPerCell;     // cells a warp scores at once
constexpr int kDecAutoMaxCells = 2048;  // DecodeAttn::Auto takes this kernel for caches up to this long
constexpr int kDecMaxSplits = 128;  // most splits (the combine kernel takes up to kMaxSplits)
static_assert(kDecMaxSplits <= kMaxSplits, "the combine kernel merges at most kMaxSplits splits");

// Whether the decode kernel takes an ATTENTION: `vec` and `aligned` as in AttnParams.
inline bool decode_takes(DType kt, DType vt, int64_t hd, int64_t hdv, bool vec, bool aligned, int64_t rows) {
  return kt == DType::F16 && vt == DType::F16 && hd == hdv && (hd == 64 || hd == 128) && vec && aligned && rows >= 1 &&
         rows <= kDecMaxRows;
}

// Several queries whose q heads of a kv head fit one block (a batch of sequences decoding together):
// with Tuning::attn_per_query a block takes one query's rows (grid.z), so it walks that query's
// span alone, not the union of the spans of every query in the block. On by default: 16 queries with
// their own 256-cell regions took 19 against 196 us on the tile kernel (docs/PERFORMANCE.md).
constexpr int kDecMaxQueries = 64;
constexpr int kDecMaxSplitsPerQuery = 16;
constexpr size_t kDecPerQueryScratch = size_t{8} << 20;  // partials of all splits at most this large
inline bool per_query_takes(int64_t n_q, int64_t group, int64_t rows) {
  return n_q > 1 && n_q <= kDecMaxQueries && group <= kDecMaxRows && rows > kDecMaxRows;
}
// The most splits per query: a function of the shapes (scratch is sized with it).
inline int per_query_max_splits(int64_t total_rows, int64_t hdv) {
  const size_t per_split = static_cast<size_t>(total_rows) * static_cast<size_t>(hdv + 2) * 4;
  const size_t fit = per_split > 0 ? kDecPerQueryScratch / per_split : 1;
  return static_cast<int>(fit < 1 ? 1 : fit > kDecMaxSplitsPerQuery ? kDecMaxSplitsPerQuery : fit);
}
// Splits per query: about `per_sm` blocks per SM over all queries and kv heads (Tuning::per_query_blocks),
// one tile of `tile` cells each at least (the decode kernel's, or the flash kernel's with
// Tuning::per_query_flash).
inline int per_query_splits(int64_t n_kv, int64_t n_kv_head, int64_t n_q, int64_t tile, int sm_count, int max_splits,
                            int per_sm) {
  const int64_t tiles = (n_kv + tile - 1) / tile;
  const int64_t blocks = n_kv_head * n_q;
  const int64_t want =
      (static_cast<int64_t>(per_sm > 0 ? per_sm : 1) * (sm_count > 0 ? sm_count : 1) + blocks - 1) / blocks;
  int64_t s = tiles < want ? tiles : want;
  if (s > max_splits) s = max_splits;
  return static_cast<int>(s < 1 ? 1 : s);
}

// Splits for n_kv cells over n_kv_head heads: about four blocks per SM (each is latency-bound with
// four warps, so several per SM overlap), one tile each at least.
inline int decode_splits(int64_t n_kv, int64_t n_kv_head, int hd, int sm_count) {
  const int64_t tile = (hd / 32) * kDecCellsPerWarp;  // kTile of the kernel
  const int64_t tiles = (n_kv + tile - 1) / tile;
  const int64_t want = (4 * static_cast<int64_t>(sm_count > 0 ? sm_count : 1) + n_kv_head - 1) / n_kv_head;
  int64_t s = tiles < want ? tiles : want;
  if (s > kDecMaxSplits) s = kDecMaxSplits;
  return static_cast<int>(s < 1 ? 1 : s);
}

// Split `split`'s cells of the span u: split_cells, except that a span of at most n_splits tiles
// gives tile t to split t (the splits past it see no cell). A query's partials then sit at the same
// split indices whatever the split count (the cells of the node's graph: a one-token decode's and a
// verification's differ), so combine_row adds them in the same lanes and order, and the empty
// splits add exact zeros: the merged output does not depend on the count (batch invariance,
// Tuning::batch_invariant).
__device__ inline int2 split_cells_dec(int2 u, int n_splits, int split, int tile) {
  if (u.x >= u.y) return make_int2(0, 0);
  const int64_t tiles = (static_cast<int64_t>(u.y) - u.x + tile - 1) / tile;
  if (tiles > n_splits) return split_cells(u, n_splits, split, tile);
  if (split >= tiles) return make_int2(u.y, u.y);
  return make_int2(u.x + split * tile, static_cast<int>(min(static_cast<int64_t>(u.y), u.x + (split + 1) * static_cast<int64_t>(tile))));
}

template <int HD>
__global__ void __launch_bounds__(HD) attn_decode_kernel(const AttnParams p) {
  pdl_begin();
  constexpr int kWarps = HD / kWarp;
  constexpr int kTile = kWarps * kDecCellsPerWarp;   // 16 cells (HD 128) or 8 (HD 64)
  constexpr int kUnits = HD / 8 / kDecLanesPerCell;  // 16-byte units of a K row per lane: 2 or 1
  __shared__ __align__(16) float q_s[kDecMaxRows][HD];
  __shared__ __align__(16) float w_s[kDecMaxRows][kTile];  // scores, then weights
  __shared__ float m_s[kDecMaxRows], l_s[kDecMaxRows], corr_s[kDecMaxRows];
  __shared__ int lo_s[kDecMaxRows], hi_s[kDecMaxRows], range_s[2];

  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  // Rows of this block: dec_rows of the kv head's rows from row0 (all of them, one query's with
  // Tuning::attn_per_query, or fewer: Tuning::decode_rows).
  const int split = blockIdx.x, kvh = blockIdx.y;
  const int row0 = static_cast<int>(blockIdx.z) * p.dec_rows, R = p.dec_rows;
  const uint8_t* kbase = p.k + static_cast<int64_t>(kvh) * p.k_nb1;
  const uint8_t* vbase = p.v + static_cast<int64_t>(kvh) * p.v_nb1;

  // q rows into shared memory (loads first, then stores), row state, spans.
  {
    float x[kDecMaxRows];
#pragma unroll
    for (int r = 0; r < kDecMaxRows; r++) {
      x[r] = 0.0f;
      if (r < R) {
        const int j = (row0 + r) / p.group, h = kvh * p.group + (row0 + r) % p.group;
        x[r] = *reinterpret_cast<const float*>(p.q + static_cast<int64_t>(h) * p.q_nb1 +
                                               static_cast<int64_t>(j) * p.q_nb2 + static_cast<int64_t>(tid) * p.q_nb0);
      }
    }
#pragma unroll
    for (int r = 0; r < kDecMaxRows; r++) q_s[r][tid] = x[r];
  }
  if (tid < kDecMaxRows) {
    const int2 sp = tid < R ? query_span(p, (row0 + tid) / p.group, (row0 + tid) % p.group == 0 && split == 0)
                            : make_int2(0, 0);
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.0f;
    lo_s[tid] = sp.x;
    hi_s[tid] = sp.y;
  }
  __syncthreads();
  if (tid == 0) {
    const int2 r = split_cells_dec(span_union(lo_s, hi_s, R, p.n_kv), p.n_splits, split, kTile);
    range_s[0] = r.x;
    range_s[1] = r.y;
  }
  __syncthreads();
  const int c_lo = range_s[0], c_hi = range_s[1];

  float acc[kDecMaxRows];
#pragma unroll
  for (int r = 0; r < kDecMaxRows; r++) acc[r] = 0.0f;
  const int sub = lane % kDecLanesPerCell, my_cell = warp * kDecCellsPerWarp + lane / kDecLanesPerCell;

  // A tile's loads: V of dim tid for its cells and this lane's K units (cells past c_hi read as zeros).
  float vv[kTile];
  uint4 kw[kUnits];
  auto load = [&](int c0, float* v_out, uint4* k_out) {
#pragma unroll
    for (int c = 0; c < kTile; c++) {
      const int cell = c0 + c;
      v_out[c] = cell < c_hi
                     ? __half2float(__ldg(reinterpret_cast<const __half*>(vbase + static_cast<int64_t>(cell) * p.v_nb2) + tid))
                     : 0.0f;
    }
    const int cell = c0 + my_cell;
#pragma unroll
    for (int u = 0; u < kUnits; u++)
      k_out[u] = cell < c_hi
                     ? __ldg(reinterpret_cast<const uint4*>(kbase + static_cast<int64_t>(cell) * p.k_nb2) + sub + kDecLanesPerCell * u)
                     : make_uint4(0, 0, 0, 0);
  };
  if (c_lo < c_hi) load(c_lo, vv, kw);

  for (int c0 = c_lo; c0 < c_hi; c0 += kTile) {
    // The next tile's loads go out now; this tile's arithmetic covers their latency.
    float vv_next[kTile];
    uint4 kw_next[kUnits];
    if (c0 + kTile < c_hi) load(c0 + kTile, vv_next, kw_next);
    const int cell = c0 + my_cell;
    const bool live = cell < c_hi;
    float kf[kUnits * 8];
#pragma unroll
    for (int u = 0; u < kUnits; u++) {
      const uint32_t w[4] = {kw[u].x, kw[u].y, kw[u].z, kw[u].w};
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[e]));
        kf[u * 8 + 2 * e] = f.x;
        kf[u * 8 + 2 * e + 1] = f.y;
      }
    }
    // Scores of every row for this lane's cell.
#pragma unroll
    for (int r = 0; r < kDecMaxRows; r++) {
      if (r >= R) break;
      float dot = 0.0f;
#pragma unroll
      for (int u = 0; u < kUnits; u++) {
        const float4 a = *reinterpret_cast<const float4*>(&q_s[r][(sub + kDecLanesPerCell * u) * 8]);
        const float4 b = *reinterpret_cast<const float4*>(&q_s[r][(sub + kDecLanesPerCell * u) * 8 + 4]);
        dot = fmaf(a.x, kf[u * 8 + 0], dot);
        dot = fmaf(a.y, kf[u * 8 + 1], dot);
        dot = fmaf(a.z, kf[u * 8 + 2], dot);
        dot = fmaf(a.w, kf[u * 8 + 3], dot);
        dot = fmaf(b.x, kf[u * 8 + 4], dot);
        dot = fmaf(b.y, kf[u * 8 + 5], dot);
        dot = fmaf(b.z, kf[u * 8 + 6], dot);
        dot = fmaf(b.w, kf[u * 8 + 7], dot);
      }
#pragma unroll
      for (int o = 1; o < kDecLanesPerCell; o <<= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      if (sub == 0) {
        w_s[r][my_cell] = live && cell >= lo_s[r] && cell < hi_s[r]
                              ? cell_score(p, dot, p.mask_kind == 2 ? 0.0f : load_mask(p, cell, (row0 + r) / p.group))
                              : -INFINITY;
      }
    }
    __syncthreads();
    // Online softmax of each row over the tile: one warp per row.
    for (int r = warp; r < R; r += kWarps) {
      const float s = lane < kTile ? w_s[r][lane] : -INFINITY;
      const float m_old = m_s[r], m_new = fmaxf(m_old, warp_max(s));
      const float e = m_new == -INFINITY || s == -INFINITY ? 0.0f : expf(s - m_new);
      const float sum = warp_sum(e);
      if (lane < kTile) w_s[r][lane] = e;
      if (lane == 0) row_softmax_step(m_s, l_s, corr_s, r, m_new, sum);
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kDecMaxRows; r++) {
      if (r >= R) break;
      float a = acc[r] * corr_s[r];
#pragma unroll
      for (int c = 0; c < kTile; c += 4) {
        const float4 w = *reinterpret_cast<const float4*>(&w_s[r][c]);
        if (w.x != 0.0f) a = fmaf(w.x, vv[c], a);
        if (w.y != 0.0f) a = fmaf(w.y, vv[c + 1], a);
        if (w.z != 0.0f) a = fmaf(w.z, vv[c + 2], a);
        if (w.w != 0.0f) a = fmaf(w.w, vv[c + 3], a);
      }
      acc[r] = a;
    }
    __syncthreads();  // w_s and corr_s are rewritten by the next tile
    if (c0 + kTile < c_hi) {
#pragma unroll
      for (int c = 0; c < kTile; c++) vv[c] = vv_next[c];
#pragma unroll
      for (int u = 0; u < kUnits; u++) kw[u] = kw_next[u];
    }
  }

  if (p.n_splits == 1) {
#pragma unroll
    for (int r = 0; r < kDecMaxRows; r++) {
      if (r >= R) break;
      const int j = (row0 + r) / p.group, h = kvh * p.group + (row0 + r) % p.group;
      const float l = l_s[r];
      const float out = l > 0.0f ? acc[r] * (1.0f / l) : 0.0f;
      *reinterpret_cast<float*>(p.o + static_cast<int64_t>(h) * p.o_nb1 + static_cast<int64_t>(j) * p.o_nb2 +
                                static_cast<int64_t>(tid) * p.o_nb0) = out;
      if (p.act_q) {
        const int64_t a = act_index(p, j, h) + tid;
        q8a_warp_block(out, p.act_q + a, p.act_d + a / 32);
      }
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < kDecMaxRows; r++) {
    if (r >= R) break;
    float* part = p.part + ((static_cast<int64_t>(split) * p.n_kv_head + kvh) * p.rows + row0 + r) * (HD + 2);
    if (tid == 0) {
      part[0] = m_s[r];
      part[1] = l_s[r];
    }
    part[2 + tid] = acc[r];
  }
  if (!p.counters) return;  // attn_combine_kernel merges the splits
  // The last split of this (kv head, row group) to finish merges them: every thread's partials are
  // made visible device-wide before the block counts itself, and the last block reads after it.
  __shared__ bool last_s;
  __shared__ float cw_s[kMaxSplits];
  __shared__ float inv_s;
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    unsigned* c = p.counters + static_cast<int64_t>(kvh) * gridDim.z + blockIdx.z;
    const bool last = atomicAdd(c, 1u) == static_cast<unsigned>(p.n_splits - 1);
    if (last) *c = 0;  // every split has counted: zero for the next launch
    last_s = last;
  }
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  for (int r = 0; r < R; r++) combine_row(p, kvh, row0 + r, cw_s, &inv_s);
}

// Rows per block of the decode kernel: the largest divisor of `all` (a kv head's rows, or one
// query's) not above `want` (all of them when want <= 0 or want >= all).
inline int decode_rows_per_block(int all, int want) {
  if (want <= 0 || want >= all) return all;
  int r = want;
  while (all % r != 0) r--;
  return r;
}

// Launches the decode kernel with p.n_splits splits (p.part set when more than one) and the
// combine kernel after it.
inline cudaError_t launch_decode(const AttnParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.n_splits), static_cast<unsigned>(p.n_kv_head),
                  static_cast<unsigned>(p.rows / p.dec_rows));
  const cudaError_t e = p.hd == 128 ? launch_k(attn_decode_kernel<128>, grid, dim3(128), 0, stream, p)
                                    : launch_k(attn_decode_kernel<64>, grid, dim3(64), 0, stream, p);
  if (e != cudaSuccess || p.n_splits <= 1 || p.counters) return e;
  return launch_k(attn_combine_kernel, dim3(static_cast<unsigned>(p.rows), static_cast<unsigned>(p.n_kv_head)),
                  dim3(kCombineThreads), 0, stream, p);
}

}  // namespace minfer::cuda::attn
