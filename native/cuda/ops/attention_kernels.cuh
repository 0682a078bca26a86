// The device side of ATTENTION (ops/attention.cu describes the design): the launch parameters,
// the shared-memory layout shared with the host plan, element and tile loads, the tile kernel
// (scores, online softmax, P·V over KV tiles) and the split-combine kernel. Included by
// attention.cu only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "../cuda_util.cuh"
#include "act_quant.cuh"
#include "../kernel.h"

namespace minfer::cuda::attn {

using program::DType;

constexpr int kThreads = 128;  // threads of the tile kernel (4 warps)
constexpr int kCombineThreads = 128;
constexpr int kMaxSplits = 128;          // most KV splits of one row
static_assert(kMaxSplits % kWarp == 0 && kMaxSplits <= 4 * kWarp, "the combine kernel's warp 0 takes 4 splits a lane");

// Shared-memory layout of the tile kernel, in floats; every section starts on a 16-byte boundary.
// Rows are padded to a multiple of kRowChunk (the score and P·V loops work on row chunks).
constexpr int kRowChunk = 4;
struct SmemLayout {
  int64_t q, kv, v, p, acc, m, l, corr, lo, hi, range, total;
};
__host__ __device__ inline int64_t round4(int64_t x) { return (x + 3) / 4 * 4; }
// v_sep: the V tile has its own buffer (loaded together with the K tile) instead of replacing it.
__host__ __device__ inline SmemLayout smem_layout(int br, int bc, int64_t hd, int64_t hdv, bool v_sep) {
  const int64_t brp = (br + kRowChunk - 1) / kRowChunk * kRowChunk;
  const int64_t dmax = hd > hdv ? hd : hdv;
  SmemLayout s;
  s.q = 0;                               // q [brp][hd]
  s.kv = s.q + round4(brp * hd);         // k or v tile [bc][dmax + 1] (padded: conflict-free column reads)
  s.v = v_sep ? s.kv + round4(bc * (hd + 1)) : s.kv;  // v tile [bc][hdv + 1] (or the k tile's buffer)
  s.p = v_sep ? s.v + round4(bc * (hdv + 1)) : s.kv + round4(bc * (dmax + 1));  // mask, scores, weights [brp][bc]
  s.acc = s.p + round4(brp * bc);        // accumulators [brp][hdv]
  s.m = s.acc + round4(brp * hdv);       // running max [brp]
  s.l = s.m + round4(brp);               // running sum [brp]
  s.corr = s.l + round4(brp);            // this tile's rescale factor [brp]
  s.lo = s.corr + round4(brp);           // span start (int) [brp]
  s.hi = s.lo + round4(brp);             // span end (int) [brp]
  s.range = s.hi + round4(brp);          // the block's cell range (int) [2]
  s.total = s.range + 4;
  return s;
}

// ---- device side ----

struct AttnParams {
  const uint8_t *q, *k, *v, *m;
  uint8_t* o;
  int64_t q_nb0, q_nb1, q_nb2;
  int64_t k_nb1, k_nb2, v_nb1, v_nb2;
  int64_t m_nb0, m_nb1;
  int64_t o_nb0, o_nb1, o_nb2;
  int hd, hdv, n_head, n_kv_head, n_q, n_kv, group;
  int rows;       // group * n_q
  int br, bc;     // rows per block, cells per tile
  int n_splits;   // KV chunks (grid.z); 1: write the output directly
  int mask_kind;  // 0 F32 mask, 1 F16 mask, 2 spans
  bool aligned;   // every pointer and stride is a multiple of its element size (else byte loads)
  bool k_vec, v_vec;  // k/v rows may be read in 16-byte units (Q8_0: 2-byte units); see vec_rows
  bool hd4;       // hd % 4 == 0: q rows read as float4
  bool v_sep;     // the V tile has its own shared buffer and is loaded with the K tile
  int dec_rows;   // decode kernel: rows of a kv head per block (divides rows; grid.z = rows / dec_rows)
  bool flash_pq;  // flash kernel, one warp a block: block x is query x, its rows the query's q heads
                  // of the kv head (group <= 16; rows g and g + 8 of the warp, those past group idle)
  int8_t* act_q;   // the output also quantized as Q8A by its last writer (the decode kernel's store,
  float2* act_d;   // a merge of splits): act_index's codes, one {d, d·Σq} per 32; nullptr: not
  unsigned* counters;  // decode kernel with splits: zeroed, one per (kv head, grid.z) — the last
                       // split to finish merges them (nullptr: attn_combine_kernel does)
  float scale, softcap;
  float* part;    // partials (n_splits > 1): [split][kv head][row][m, l, acc[hdv]]
  DeviceError* err;
  int node;
};

// Where element 0 of q head h's output for query j sits among the quantized activations: query j
// is column j of the o product's activations (n_head * hdv elements: qs_bytes' layout, the codes
// of column j from j * K on), head h its elements from h * hdv.
__host__ __device__ inline int64_t act_index(const AttnParams& p, int j, int h) {
  return (static_cast<int64_t>(j) * p.n_head + h) * p.hdv;
}

__device__ inline uint32_t ld_u16(const uint8_t* p, bool aligned) {
  if (aligned) return *reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
}
__device__ inline float ld_f32(const uint8_t* p, bool aligned) {
  if (aligned) return *reinterpret_cast<const float*>(p);
  const uint32_t b = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                     (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
  return __uint_as_float(b);
}
__device__ inline int32_t ld_i32(const uint8_t* p, bool aligned) { return __float_as_int(ld_f32(p, aligned)); }
__device__ inline void st_f32(uint8_t* p, float v, bool aligned) {
  if (aligned) {
    *reinterpret_cast<float*>(p) = v;
    return;
  }
  const uint32_t b = __float_as_uint(v);
  p[0] = b & 0xff;
  p[1] = (b >> 8) & 0xff;
  p[2] = (b >> 16) & 0xff;
  p[3] = b >> 24;
}
__device__ inline float f16_bits(uint32_t b) { return __half2float(__ushort_as_half(static_cast<unsigned short>(b))); }
__device__ inline float bf16_bits(uint32_t b) { return __uint_as_float(b << 16); }

// Element d of a k/v row of dtype T.
template <DType T>
__device__ inline float load_kv(const uint8_t* row, int d, bool aligned) {
  if constexpr (T == DType::F32) {
    return ld_f32(row + 4 * static_cast<int64_t>(d), aligned);
  } else if constexpr (T == DType::F16) {
    return f16_bits(ld_u16(row + 2 * static_cast<int64_t>(d), aligned));
  } else if constexpr (T == DType::BF16) {
    return bf16_bits(ld_u16(row + 2 * static_cast<int64_t>(d), aligned));
  } else {  // Q8_0: blocks of {f16 d, int8 q[32]}; the scale is read bytewise (34-byte blocks)
    const uint8_t* blk = row + static_cast<int64_t>(d >> 5) * 34;
    return f16_bits(ld_u16(blk, false)) * static_cast<float>(static_cast<int8_t>(blk[2 + (d & 31)]));
  }
}

// The mask value of (cell c, query j) for the mask forms.
__device__ inline float load_mask(const AttnParams& p, int c, int j) {
  const uint8_t* mp = p.m + static_cast<int64_t>(j) * p.m_nb1 + static_cast<int64_t>(c) * p.m_nb0;
  return p.mask_kind == 1 ? f16_bits(ld_u16(mp, p.aligned)) : ld_f32(mp, p.aligned);
}

// The cells query j sees: its span [lo, hi) with a spans mask, else all nKv cells (a dense mask
// hides cells one by one). A span outside [0, nKv] or reversed sees nothing, and is reported when
// `report` (each kernel reports once per query: one thread of its first head, first split).
__device__ inline int2 query_span(const AttnParams& p, int j, bool report) {
  if (p.mask_kind != 2) return make_int2(0, p.n_kv);
  const uint8_t* sp = p.m + static_cast<int64_t>(j) * p.m_nb1;
  const int lo = ld_i32(sp, p.aligned), hi = ld_i32(sp + p.m_nb0, p.aligned);
  if (lo < 0 || hi > p.n_kv || lo > hi) {
    if (report) report_error(p.err, p.node, lo < 0 || lo > hi ? lo : hi);
    return make_int2(0, 0);
  }
  return make_int2(lo, hi);
}

// The union [lo, hi) of n rows' spans, empty ones skipped ({nKv, 0} when every one is empty).
__device__ inline int2 span_union(const int* lo_s, const int* hi_s, int n, int n_kv) {
  int lo = n_kv, hi = 0;
  for (int r = 0; r < n; r++)
    if (lo_s[r] < hi_s[r]) {
      lo = min(lo, lo_s[r]);
      hi = max(hi, hi_s[r]);
    }
  return make_int2(lo, hi);
}

// The cells [x, y) of split `split` of n_splits when the span union u is cut into whole tiles of
// `tile` cells dealt out evenly (split s takes tiles [s·T/n, (s+1)·T/n) of the union's T): at most
// ceil(T/n) tiles each, so n ≥ T gives every split one tile or none (empty when u is).
__device__ inline int2 split_cells(int2 u, int n_splits, int split, int tile) {
  if (u.x >= u.y) return make_int2(0, 0);
  const int64_t tiles = (static_cast<int64_t>(u.y) - u.x + tile - 1) / tile;
  const int64_t t0 = tiles * split / n_splits, t1 = tiles * (split + 1) / n_splits;
  const int b = static_cast<int>(min(static_cast<int64_t>(u.y), u.x + t0 * tile));
  return make_int2(b, static_cast<int>(min(static_cast<int64_t>(u.y), u.x + t1 * tile)));
}

// A cell's score from q·k and its mask value mv: -inf for a hidden cell (mv == -inf, tested before
// the score, as on the CPU), else dot · scale, softcapped when softcap != 0, plus mv.
__device__ inline float cell_score(const AttnParams& p, float dot, float mv) {
  if (mv == -INFINITY) return -INFINITY;
  float s = dot * p.scale;
  if (p.softcap != 0.0f) s = p.softcap * tanhf(s / p.softcap);
  return s + mv;
}

// Lane 0's update of row r's online-softmax state after a tile whose largest score gives the new
// running max m_new and whose weights e^(s - m_new) sum to tile_sum: the rescale factor of the
// row's accumulator (corr_s), the running max and the running sum.
__device__ inline void row_softmax_step(float* m_s, float* l_s, float* corr_s, int r, float m_new, float tile_sum) {
  const float m_old = m_s[r];
  const float corr = m_old == -INFINITY ? (m_new == -INFINITY ? 1.0f : 0.0f) : expf(m_old - m_new);
  corr_s[r] = corr;
  m_s[r] = m_new;
  l_s[r] = l_s[r] * corr + tile_sum;
}

// The elements of 32-bit word e of a 16-byte unit (1 float or 2 halves) into o.
template <DType T>
__device__ inline void store_unit(float* o, uint32_t word, int e) {
  if constexpr (T == DType::F32) {
    o[e] = __uint_as_float(word);
  } else if constexpr (T == DType::F16) {
    o[2 * e] = f16_bits(word & 0xffff);
    o[2 * e + 1] = f16_bits(word >> 16);
  } else {
    o[2 * e] = bf16_bits(word & 0xffff);
    o[2 * e + 1] = bf16_bits(word >> 16);
  }
}

// Cells [c0, c0 + n_cells) of a k/v head (row c at base + c * nb_cell) into dst[c * stride + d] as f32;
// rows n_cells..bc-1 become zeros. `vec`: the rows start on 16-byte boundaries and dim is a multiple
// of the unit (Q8_0: on 2-byte boundaries), so whole units are read at once. Each thread issues a
// batch of unit loads into registers before converting and storing any, so a tile costs one or two
// global-memory latencies rather than one per unit.
template <DType T>
__device__ __forceinline__ void load_tile(float* dst, int stride, const uint8_t* base, int64_t nb_cell, int n_cells, int bc,
                                 int dim, bool vec, bool aligned) {
  const int nt = blockDim.x;
  if constexpr (T == DType::Q8_0) {
    if (vec) {  // a unit is half a block: its scale and 16 quants read as 8 aligned u16
      constexpr int kBatch = 4;
      const int upr = dim / 16, total = bc * upr;
      for (int i0 = 0; i0 < total; i0 += kBatch * nt) {
        uint32_t sc[kBatch], qw[kBatch][8];
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
          const int i = i0 + b * nt + threadIdx.x, c = i / upr, u = i % upr;
          const bool live = i < total && c < n_cells;
          const uint8_t* blk = base + (live ? c * nb_cell + static_cast<int64_t>(u >> 1) * 34 : 0);
          const uint16_t* qp = reinterpret_cast<const uint16_t*>(blk + 2 + (u & 1) * 16);
          sc[b] = live ? __ldg(reinterpret_cast<const unsigned short*>(blk)) : 0u;
#pragma unroll
          for (int e = 0; e < 8; e++) qw[b][e] = live ? __ldg(reinterpret_cast<const unsigned short*>(qp) + e) : 0u;
        }
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
          const int i = i0 + b * nt + threadIdx.x, c = i / upr, u = i % upr;
          if (i >= total) break;
          float* o = dst + c * stride + u * 16;
          const float scf = f16_bits(sc[b]);
#pragma unroll
          for (int e = 0; e < 8; e++) {
            o[2 * e] = scf * static_cast<float>(static_cast<int8_t>(qw[b][e] & 0xff));
            o[2 * e + 1] = scf * static_cast<float>(static_cast<int8_t>(qw[b][e] >> 8));
          }
        }
      }
      return;
    }
  } else {
    if (vec) {
      constexpr int per = T == DType::F32 ? 4 : 8;  // elements per 16 bytes
      constexpr int kBatch = 8;
      const int upr = dim / per, total = bc * upr;
      for (int i0 = 0; i0 < total; i0 += kBatch * nt) {
        uint4 w[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
          const int i = i0 + b * nt + threadIdx.x, c = i / upr, u = i % upr;
          w[b] = i < total && c < n_cells ? __ldg(reinterpret_cast<const uint4*>(base + c * nb_cell) + u) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
          const int i = i0 + b * nt + threadIdx.x, c = i / upr, u = i % upr;
          if (i >= total) break;
          float* o = dst + c * stride + u * per;
          store_unit<T>(o, w[b].x, 0);
          store_unit<T>(o, w[b].y, 1);
          store_unit<T>(o, w[b].z, 2);
          store_unit<T>(o, w[b].w, 3);
        }
      }
      return;
    }
  }
  for (int i = threadIdx.x; i < bc * dim; i += blockDim.x) {
    const int c = i / dim, d = i % dim;
    dst[c * stride + d] = c < n_cells ? load_kv<T>(base + c * nb_cell, d, aligned) : 0.0f;
  }
}

template <DType KT, DType VT>
__global__ void attn_tile_kernel(const AttnParams p) {
  pdl_begin();
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int br = p.br, bc = p.bc, hd = p.hd, hdv = p.hdv;
  const int ks = hd + 1, vs = hdv + 1;  // padded tile row strides (conflict-free column reads)
  const SmemLayout L = smem_layout(br, bc, hd, hdv, p.v_sep);
  float* q_s = smem + L.q;
  float* kv_s = smem + L.kv;
  float* v_s = smem + L.v;  // == kv_s unless v_sep
  float* p_s = smem + L.p;
  float* acc_s = smem + L.acc;
  float* m_s = smem + L.m;
  float* l_s = smem + L.l;
  float* corr_s = smem + L.corr;
  int* lo_s = reinterpret_cast<int*>(smem + L.lo);
  int* hi_s = reinterpret_cast<int*>(smem + L.hi);
  int* range_s = reinterpret_cast<int*>(smem + L.range);

  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp, n_warps = blockDim.x / kWarp;
  const int kvh = blockIdx.y, split = blockIdx.z;
  const int row0 = blockIdx.x * br;
  const int n_rows = min(br, p.rows - row0);                  // valid rows of this block (>= 1)
  const int n_rc = (n_rows + kRowChunk - 1) / kRowChunk;      // row chunks (rows up to n_rc * 4 exist in smem)
  const uint8_t* kbase = p.k + static_cast<int64_t>(kvh) * p.k_nb1;
  const uint8_t* vbase = p.v + static_cast<int64_t>(kvh) * p.v_nb1;

  // Rows: q into shared memory (zeros past n_rows), state reset, spans checked.
  // (Loads are issued in register batches: the compiler cannot move a global load above a shared
  // store through generic pointers, so a plain copy loop waits one memory latency per element.)
  {
    constexpr int kBatch = 8;
    const int total = n_rc * kRowChunk * hd;
    for (int i0 = 0; i0 < total; i0 += kBatch * blockDim.x) {
      float x[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; b++) {
        const int i = i0 + b * blockDim.x + tid;
        x[b] = 0.0f;
        if (i < total && i / hd < n_rows) {
          const int r = i / hd, d = i % hd, row = row0 + r, j = row / p.group, h = kvh * p.group + row % p.group;
          x[b] = ld_f32(p.q + static_cast<int64_t>(h) * p.q_nb1 + static_cast<int64_t>(j) * p.q_nb2 +
                            static_cast<int64_t>(d) * p.q_nb0,
                        p.aligned);
        }
      }
#pragma unroll
      for (int b = 0; b < kBatch; b++) {
        const int i = i0 + b * blockDim.x + tid;
        if (i < total) q_s[i] = x[b];
      }
    }
  }
  for (int i = tid; i < n_rows * hdv; i += blockDim.x) acc_s[i] = 0.0f;
  for (int r = tid; r < n_rows; r += blockDim.x) {
    m_s[r] = -INFINITY;
    l_s[r] = 0.0f;
    const int2 sp = query_span(p, (row0 + r) / p.group, (row0 + r) % p.group == 0 && split == 0);
    lo_s[r] = sp.x;
    hi_s[r] = sp.y;
  }
  __syncthreads();
  if (tid == 0) {
    // The union of the rows' spans is cut into the splits on the device, in whole tiles (as the
    // decode kernel cuts it), so that a graph planned for the whole cache spreads the cells in use
    // over every split instead of leaving all but the splits that hold them empty.
    const int2 r = split_cells(span_union(lo_s, hi_s, n_rows, p.n_kv), p.n_splits, split, bc);
    range_s[0] = r.x;
    range_s[1] = r.y;
  }
  __syncthreads();
  const int c_lo = range_s[0], c_hi = range_s[1];

  for (int c0 = c_lo; c0 < c_hi; c0 += bc) {
    const int n_cells = min(bc, c_hi - c0);
    // K tile into shared memory (rows past n_cells are zero), the V tile too with v_sep, and the
    // mask values of (row, cell) into p_s: -inf where hidden, out of the span or out of the tile.
    load_tile<KT>(kv_s, ks, kbase + static_cast<int64_t>(c0) * p.k_nb2, p.k_nb2, n_cells, bc, hd, p.k_vec, p.aligned);
    if (p.v_sep)
      load_tile<VT>(v_s, vs, vbase + static_cast<int64_t>(c0) * p.v_nb2, p.v_nb2, n_cells, bc, hdv, p.v_vec, p.aligned);
    {
      constexpr int kBatch = 8;  // mask loads issued together, then stored
      const int total = n_rc * kRowChunk * bc;
      for (int i0 = 0; i0 < total; i0 += kBatch * blockDim.x) {
        float mv[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
          const int i = i0 + b * blockDim.x + tid, r = i / bc, c = i % bc, cell = c0 + c;
          mv[b] = -INFINITY;
          if (i < total && r < n_rows && c < n_cells && cell >= lo_s[r] && cell < hi_s[r])
            mv[b] = p.mask_kind == 2 ? 0.0f : load_mask(p, cell, (row0 + r) / p.group);
        }
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
          const int i = i0 + b * blockDim.x + tid;
          if (i < total) p_s[i] = mv[b];
        }
      }
    }
    __syncthreads();
    // Scores of (row chunk, cell) items; a hidden cell, or a row past n_rows, is -inf.
    int any = 0;
    for (int i = tid; i < n_rc * bc; i += blockDim.x) {
      const int r0 = (i / bc) * kRowChunk, c = i % bc;
      float dot[kRowChunk] = {};
      if (c < n_cells) {
        const float* kr = kv_s + c * ks;
        if (p.hd4) {
          for (int d = 0; d < hd; d += 4) {
            const float k0 = kr[d], k1 = kr[d + 1], k2 = kr[d + 2], k3 = kr[d + 3];
#pragma unroll
            for (int rr = 0; rr < kRowChunk; rr++) {
              const float4 qv = *reinterpret_cast<const float4*>(q_s + (r0 + rr) * hd + d);
              dot[rr] = fmaf(qv.x, k0, dot[rr]);
              dot[rr] = fmaf(qv.y, k1, dot[rr]);
              dot[rr] = fmaf(qv.z, k2, dot[rr]);
              dot[rr] = fmaf(qv.w, k3, dot[rr]);
            }
          }
        } else {
          for (int d = 0; d < hd; d++) {
            const float kd = kr[d];
#pragma unroll
            for (int rr = 0; rr < kRowChunk; rr++) dot[rr] = fmaf(q_s[(r0 + rr) * hd + d], kd, dot[rr]);
          }
        }
      }
#pragma unroll
      for (int rr = 0; rr < kRowChunk; rr++) {
        const int r = r0 + rr;
        const float s = cell_score(p, dot[rr], p_s[r * bc + c]);  // the mask value: this thread's item only
        any |= s != -INFINITY;
        p_s[r * bc + c] = s;
      }
    }
    if (!__syncthreads_or(any)) continue;  // nobody sees a cell of this tile: no V read
    // V tile into shared memory (the K tile is no longer read) while the rows' softmax updates.
    if (!p.v_sep)
      load_tile<VT>(kv_s, vs, vbase + static_cast<int64_t>(c0) * p.v_nb2, p.v_nb2, n_cells, bc, hdv, p.v_vec, p.aligned);
    for (int r = warp; r < n_rows; r += n_warps) {
      float* pr = p_s + r * bc;
      float mx = -INFINITY;
      for (int c = lane; c < bc; c += kWarp) mx = fmaxf(mx, pr[c]);
      mx = warp_max(mx);
      const float m_old = m_s[r], m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
      for (int c = lane; c < bc; c += kWarp) {
        const float e = m_new == -INFINITY || pr[c] == -INFINITY ? 0.0f : expf(pr[c] - m_new);
        pr[c] = e;
        sum += e;
      }
      sum = warp_sum(sum);
      if (lane == 0) row_softmax_step(m_s, l_s, corr_s, r, m_new, sum);
    }
    __syncthreads();
    // acc = acc * corr + p · V over (row chunk, dim) items. Weights of cells past n_cells are 0 and
    // their V rows zeros, so the loop runs over the whole tile; rows past n_rows are not stored.
    for (int i = tid; i < n_rc * hdv; i += blockDim.x) {
      const int r0 = (i / hdv) * kRowChunk, d = i % hdv;
      float a[kRowChunk];
#pragma unroll
      for (int rr = 0; rr < kRowChunk; rr++) a[rr] = r0 + rr < n_rows ? acc_s[(r0 + rr) * hdv + d] * corr_s[r0 + rr] : 0.0f;
      for (int c = 0; c < bc; c += 4) {
        const float v0 = v_s[c * vs + d], v1 = v_s[(c + 1) * vs + d], v2 = v_s[(c + 2) * vs + d],
                    v3 = v_s[(c + 3) * vs + d];
#pragma unroll
        for (int rr = 0; rr < kRowChunk; rr++) {
          if (r0 + rr >= n_rows) break;
          const float4 pw = *reinterpret_cast<const float4*>(p_s + (r0 + rr) * bc + c);
          a[rr] = fmaf(pw.x, v0, a[rr]);
          a[rr] = fmaf(pw.y, v1, a[rr]);
          a[rr] = fmaf(pw.z, v2, a[rr]);
          a[rr] = fmaf(pw.w, v3, a[rr]);
        }
      }
#pragma unroll
      for (int rr = 0; rr < kRowChunk; rr++)
        if (r0 + rr < n_rows) acc_s[(r0 + rr) * hdv + d] = a[rr];
    }
    __syncthreads();
  }

  // Output (one split) or partial (several).
  for (int i = tid; i < n_rows * hdv; i += blockDim.x) {
    const int r = i / hdv, d = i % hdv, row = row0 + r;
    if (p.n_splits == 1) {
      const int j = row / p.group, h = kvh * p.group + row % p.group;
      const float l = l_s[r];
      const float out = l > 0.0f ? acc_s[i] * (1.0f / l) : 0.0f;
      st_f32(p.o + static_cast<int64_t>(h) * p.o_nb1 + static_cast<int64_t>(j) * p.o_nb2 + static_cast<int64_t>(d) * p.o_nb0,
             out, p.aligned);
    } else {
      float* part = p.part + ((static_cast<int64_t>(split) * p.n_kv_head + kvh) * p.rows + row) * (hdv + 2);
      if (d == 0) {
        part[0] = m_s[r];
        part[1] = l_s[r];
      }
      part[2 + d] = acc_s[i];
    }
  }
}

// Merges the splits of row `row` of kv head `kvh` with the block's threads: warp 0 forms the split
// weights e^(m_s - M) and the total l (up to four splits a lane), then each thread sums its dims
// over the splits. w_s holds kMaxSplits floats; the block's threads all call it (it has barriers). The
// partials are read past L1 (__ldcg): the decode kernel's last block reads what others wrote.
__device__ inline void combine_row(const AttnParams& p, int kvh, int row, float* w_s, float* inv_s) {
  constexpr int kPerLane = kMaxSplits / kWarp;
  const int tid = threadIdx.x;
  const int64_t stride = static_cast<int64_t>(p.n_kv_head) * p.rows * (p.hdv + 2);
  const float* part0 = p.part + (static_cast<int64_t>(kvh) * p.rows + row) * (p.hdv + 2);
  if (tid < kWarp) {
    float m[kPerLane], l[kPerLane];
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < kPerLane; i++) {
      const int s = tid + i * kWarp;
      m[i] = s < p.n_splits ? __ldcg(part0 + s * stride) : -INFINITY;
      l[i] = s < p.n_splits ? __ldcg(part0 + s * stride + 1) : 0.0f;
      mx = fmaxf(mx, m[i]);
    }
    mx = warp_max(mx);
    float lsum = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; i++) {
      const float w = mx == -INFINITY || m[i] == -INFINITY ? 0.0f : expf(m[i] - mx);
      w_s[tid + i * kWarp] = w;
      lsum += w * l[i];
    }
    const float l_total = warp_sum(lsum);
    if (tid == 0) *inv_s = l_total > 0.0f ? 1.0f / l_total : 0.0f;
  }
  __syncthreads();
  const int j = row / p.group, h = kvh * p.group + row % p.group;
  uint8_t* orow = p.o + static_cast<int64_t>(h) * p.o_nb1 + static_cast<int64_t>(j) * p.o_nb2;
  const int64_t act0 = act_index(p, j, h);
  const float inv = *inv_s;
  for (int d = tid; d < p.hdv; d += blockDim.x) {
    // Every split's partial is read, kGroup loads in flight at once: a split that saw no cell wrote
    // acc 0 and has weight 0. (Reading only the splits of non-zero weight made each load wait for
    // the one before it: 18 us for 65 splits of one row, Nsight Compute on the H200.)
    constexpr int kGroup = 16;
    float a = 0.0f;
    for (int s0 = 0; s0 < p.n_splits; s0 += kGroup) {
      float v[kGroup];
#pragma unroll
      for (int g = 0; g < kGroup; g++) v[g] = s0 + g < p.n_splits ? __ldcg(part0 + (s0 + g) * stride + 2 + d) : 0.0f;
#pragma unroll
      for (int g = 0; g < kGroup; g++)
        if (s0 + g < p.n_splits) a = fmaf(w_s[s0 + g], v[g], a);
    }
    st_f32(orow + static_cast<int64_t>(d) * p.o_nb0, a * inv, p.aligned);
    // (hdv and blockDim are multiples of 32: a warp's lanes are all here, on one block of 32)
    if (p.act_q) q8a_warp_block(a * inv, p.act_q + act0 + d, p.act_d + (act0 + d) / 32);
  }
  __syncthreads();  // w_s and inv_s are rewritten by the next row
}

// Merges the splits of one row (blockIdx.x) of one kv head (blockIdx.y).
__global__ void __launch_bounds__(kCombineThreads) attn_combine_kernel(const AttnParams p) {
  pdl_begin();
  __shared__ float w_s[kMaxSplits];
  __shared__ float inv_s;
  combine_row(p, blockIdx.y, blockIdx.x, w_s, &inv_s);
}

}  // namespace minfer::cuda::attn
