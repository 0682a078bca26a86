// ATTENTION on CUDA: out[:, h, j] = softmax_c(softcap(q[:, h, j] · k[:, h/g, c] * scale) + mask[c, j]) · v[:, h/g, c]
// (the semantics of native/cpu/attention.cpp, which this mirrors; see check_attention there).
//
// Design. One kernel (attn_tile_kernel) does all the work, in flash-attention style:
//
//  * A block owns one kv head, a tile of up to `br` ROWS and a CHUNK of the KV cells. The rows of a
//    kv head are its (query j, q head of the group) pairs, row = j * group + head_in_group, so the
//    q heads that share a kv head (GQA) sit in the same block and each K/V tile is read once for
//    all of them.
//  * It walks its cells in tiles of `bc`: the K tile is dequantized into shared memory (f32) with
//    batched 16-byte loads, together with the tile's mask values (-inf where hidden or outside the
//    row's span); every (row, cell) score is formed, four rows per thread item (dot · scale,
//    softcap, + mask); each row's online softmax is updated (running max m, running sum l, the
//    accumulator rescaled by exp(m_old - m_new)); then acc += p · V (four rows per item). Blocks of
//    few rows (decode) load the V tile with the K tile into a second buffer; blocks of many rows
//    (prefill) load it after the scores into the K tile's buffer, and skip it when no row sees any
//    cell of the tile. With spans the block only walks [min start, max end) of its rows, so causal
//    prefill never touches the tiles above the diagonal.
//  * Many blocks (prefill): chunk = all cells, one split; the block divides acc by l and writes the
//    output row (0 when the row sees no cell, as the CPU does).
//  * Few blocks (decode, short prefills: fewer than kSplitBelow (row tile, kv head) pairs):
//    flash-decoding. The KV range is split into `n_splits` chunks (grid.z) so the grid fills the
//    GPU (about two blocks per SM) even with a handful of kv heads; each block writes its partial
//    (m, l, acc[hdv]) to scratch and attn_combine_kernel merges the splits of each row:
//    out = Σ_s e^(m_s - M) acc_s / Σ_s e^(m_s - M) l_s, M = max_s m_s (0 when M = -inf).
//
// Spans are read on the device. A span outside [0, nKv] or with start > end is reported with
// report_error (detail: the offending value) and its query sees no cells (output 0), like the CPU.
// A cell is hidden when its mask value is -inf (tested before the score, like the CPU) or when its
// final score is -inf. Softcap applies when softcap != 0 (the CPU's test), before the mask add.
//
// Every tensor is addressed through its nb (q, o and the mask may be strided; k/v rows are
// contiguous in dim 0). When some pointer or stride is not a multiple of its element size, the
// loads fall back to byte loads (a runtime flag), so odd views are still read correctly.
//
// Scratch (split path only): max_splits * nHead * nQ * (hdv + 2) floats, max_splits =
// min(64, ceil(nKv / bc), 1024 / blocks) from the shapes alone (plan_attention); launch uses at most
// that many. Tiles: br = 8/16/32 rows by rows per kv head, bc = 64 cells, shrunk to fit 200 KB of
// shared memory; head sizes too large even for br = 1, bc = 8 (thousands) are refused in check, the
// one condition the CPU does not have.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../cuda_util.cuh"
#include "../kernel.h"

namespace minfer::cuda {
namespace {

using program::DType;
namespace P = program::param::ATTENTION;

constexpr int kThreads = 128;  // threads of the tile kernel (4 warps)
constexpr int kCombineThreads = 128;
constexpr int kMaxSplits = 64;           // most KV splits of one row
static_assert(kMaxSplits <= kCombineThreads, "the combine kernel loads one split per thread");
constexpr int64_t kSplitBelow = 256;     // split the KV range when fewer (row tile, kv head) blocks than this
constexpr int64_t kMaxSplitBlocks = 1024;  // at most this many blocks in all when splitting (bounds the scratch)
constexpr size_t kMaxSmem = 200 * 1024;  // dynamic shared memory we allow one block (H100/H200: 227 KB)

// ---- checks (exactly the CPU's) ----

int64_t elem_size(DType t) { return t == DType::Q8_0 ? 34 : t == DType::F32 || t == DType::I32 ? 4 : 2; }
bool is_kv_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0; }

// ---- the launch plan: tile sizes, splits, shared memory, scratch; a function of the shapes only ----

struct Plan {
  int br = 0, bc = 0;      // rows per block, cells per tile
  int64_t rows = 0;        // rows of one kv head: group * nQ
  int64_t row_tiles = 0;   // ceil(rows / br)
  int max_splits = 1;      // splits the scratch is sized for (1: no split, no scratch)
  size_t smem = 0;         // dynamic shared memory bytes
  bool v_sep = false;      // separate V tile buffer (few rows: one global-load wait per tile, not two)
  bool ok = false;
};

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
size_t smem_bytes(int br, int bc, int64_t hd, int64_t hdv, bool v_sep = false) {
  return static_cast<size_t>(smem_layout(br, bc, hd, hdv, v_sep).total) * 4;
}

Plan plan_attention(const NodeArgs& a) {
  const Tensor *q = a.in[0], *k = a.in[1], *v = a.in[2];
  const int64_t hd = q->ne[0], hdv = v->ne[0], n_head = q->ne[1], n_q = q->ne[2];
  const int64_t n_kv_head = k->ne[1], n_kv = k->ne[2];
  Plan p;
  p.rows = (n_head / std::max<int64_t>(n_kv_head, 1)) * n_q;
  // Few rows: small row tiles (decode); many: larger ones (prefill).
  int br = p.rows <= 8 ? 8 : p.rows <= 16 ? 16 : 32;
  int bc = 64;
  while (smem_bytes(br, bc, hd, hdv) > kMaxSmem && bc > 8) bc /= 2;
  while (smem_bytes(br, bc, hd, hdv) > kMaxSmem && br > 1) br /= 2;
  if (smem_bytes(br, bc, hd, hdv) > kMaxSmem) return p;  // head sizes in the thousands
  p.br = br;
  p.bc = bc;
  p.v_sep = br <= 16 && smem_bytes(br, bc, hd, hdv, true) <= kMaxSmem;
  p.smem = smem_bytes(br, bc, hd, hdv, p.v_sep);
  p.row_tiles = (p.rows + br - 1) / br;
  const int64_t base = p.row_tiles * n_kv_head;
  const int64_t tiles = (n_kv + bc - 1) / bc;
  if (base > 0 && base < kSplitBelow && tiles > 1) {
    p.max_splits = static_cast<int>(std::min<int64_t>({kMaxSplits, tiles, std::max<int64_t>(1, kMaxSplitBlocks / base)}));
  }
  p.ok = true;
  return p;
}

const char* check_attention(const NodeArgs& args) {
  if (args.n_inputs != 4 || args.n_outputs != 1)
    return check_fail("attention: takes 4 inputs and 1 output, got %d and %d", args.n_inputs, args.n_outputs);
  const Tensor *q = args.in[0], *k = args.in[1], *v = args.in[2], *m = args.in[3], *o = args.out[0];
  using program::dtype_name;
  if (q->dtype != DType::F32) return check_fail("attention: q must be F32, got %s", dtype_name(q->dtype));
  if (!is_kv_type(k->dtype)) return check_fail("attention: k must be F32, F16, BF16 or Q8_0, got %s", dtype_name(k->dtype));
  if (!is_kv_type(v->dtype)) return check_fail("attention: v must be F32, F16, BF16 or Q8_0, got %s", dtype_name(v->dtype));
  if ((k->dtype == DType::Q8_0 && k->ne[0] % 32 != 0) || (v->dtype == DType::Q8_0 && v->ne[0] % 32 != 0))
    return check_fail("attention: Q8_0 k/v need head sizes that are multiples of 32 (%lld, %lld)", (long long)k->ne[0],
                      (long long)v->ne[0]);
  if (o->dtype != DType::F32) return check_fail("attention: the output must be F32, got %s", dtype_name(o->dtype));
  if (k->nb[0] != elem_size(k->dtype) || v->nb[0] != elem_size(v->dtype))
    return check_fail("attention: k and v rows must be contiguous in dim 0 (nb[0] %lld and %lld)", (long long)k->nb[0],
                      (long long)v->nb[0]);
  if (q->ne[0] != k->ne[0])
    return check_fail("attention: q and k must have the same head size (%lld vs %lld)", (long long)q->ne[0],
                      (long long)k->ne[0]);
  if (k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2]) return check_fail("attention: k and v must have the same heads and length");
  if (k->ne[1] <= 0 || q->ne[1] % k->ne[1] != 0)
    return check_fail("attention: q heads (%lld) must be a multiple of kv heads (%lld)", (long long)q->ne[1],
                      (long long)k->ne[1]);
  if (q->ne[3] != 1 || k->ne[3] != 1 || v->ne[3] != 1) return check_fail("attention: takes 3-D q, k and v");
  if (o->ne[0] != v->ne[0] || o->ne[1] != q->ne[1] || o->ne[2] != q->ne[2] || o->ne[3] != 1)
    return check_fail("attention: the output must be [hdv, nHead, nQ]");
  if (m->dtype == DType::I32) {
    if (m->ne[0] != 2 || m->ne[1] != q->ne[2] || m->ne[2] != 1 || m->ne[3] != 1)
      return check_fail("attention: spans must be I32 [2, nQ]");
  } else {
    if (m->dtype != DType::F32 && m->dtype != DType::F16)
      return check_fail("attention: the mask must be F32 or F16 (or spans I32), got %s", dtype_name(m->dtype));
    if (m->ne[0] != k->ne[2] || m->ne[1] < q->ne[2] || m->ne[2] != 1 || m->ne[3] != 1)
      return check_fail("attention: the mask must be [nKv, >= nQ] = [%lld, %lld], got [%lld, %lld, %lld, %lld]",
                        (long long)k->ne[2], (long long)q->ne[2], (long long)m->ne[0], (long long)m->ne[1],
                        (long long)m->ne[2], (long long)m->ne[3]);
  }
  // The one limit the CPU does not have: a block's tiles must fit in shared memory.
  if (!plan_attention(args).ok)
    return check_fail("attention: head sizes %lld/%lld are too large for the CUDA kernel's shared-memory tiles",
                      (long long)q->ne[0], (long long)v->ne[0]);
  return nullptr;
}

size_t scratch_attention(const NodeArgs& args) {
  const Plan p = plan_attention(args);
  if (!p.ok || p.max_splits <= 1) return 0;
  const int64_t hdv = args.in[2]->ne[0];
  const int64_t total_rows = p.rows * args.in[1]->ne[1];
  return static_cast<size_t>(p.max_splits) * static_cast<size_t>(total_rows) * static_cast<size_t>(hdv + 2) * 4;
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
  int chunk;      // cells per chunk (a multiple of bc)
  int mask_kind;  // 0 F32 mask, 1 F16 mask, 2 spans
  bool aligned;   // every pointer and stride is a multiple of its element size (else byte loads)
  bool k_vec, v_vec;  // k/v rows may be read in 16-byte units (Q8_0: 2-byte units); see vec_rows
  bool hd4;       // hd % 4 == 0: q rows read as float4
  bool v_sep;     // the V tile has its own shared buffer and is loaded with the K tile
  float scale, softcap;
  float* part;    // partials (n_splits > 1): [split][kv head][row][m, l, acc[hdv]]
  DeviceError* err;
  int node;
};

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
  for (int i = tid; i < n_rc * kRowChunk * hd; i += blockDim.x) {
    const int r = i / hd, d = i % hd;
    float x = 0.0f;
    if (r < n_rows) {
      const int row = row0 + r, j = row / p.group, h = kvh * p.group + row % p.group;
      x = ld_f32(p.q + static_cast<int64_t>(h) * p.q_nb1 + static_cast<int64_t>(j) * p.q_nb2 + static_cast<int64_t>(d) * p.q_nb0,
                 p.aligned);
    }
    q_s[i] = x;
  }
  for (int i = tid; i < n_rows * hdv; i += blockDim.x) acc_s[i] = 0.0f;
  for (int r = tid; r < n_rows; r += blockDim.x) {
    m_s[r] = -INFINITY;
    l_s[r] = 0.0f;
    int lo = 0, hi = p.n_kv;
    if (p.mask_kind == 2) {
      const int j = (row0 + r) / p.group;
      const uint8_t* sp = p.m + static_cast<int64_t>(j) * p.m_nb1;
      lo = ld_i32(sp, p.aligned);
      hi = ld_i32(sp + p.m_nb0, p.aligned);
      if (lo < 0 || hi > p.n_kv || lo > hi) {
        // Out of range: report (once per query: from its first head, first split) and see no cells.
        if ((row0 + r) % p.group == 0 && split == 0) report_error(p.err, p.node, lo < 0 || lo > hi ? lo : hi);
        lo = hi = 0;
      }
    }
    lo_s[r] = lo;
    hi_s[r] = hi;
  }
  __syncthreads();
  if (tid == 0) {
    int lo = p.n_kv, hi = 0;
    for (int r = 0; r < n_rows; r++)
      if (lo_s[r] < hi_s[r]) {
        lo = min(lo, lo_s[r]);
        hi = max(hi, hi_s[r]);
      }
    const int64_t c_begin = static_cast<int64_t>(split) * p.chunk;
    const int64_t c_end = min(static_cast<int64_t>(p.n_kv), c_begin + p.chunk);
    range_s[0] = static_cast<int>(max(static_cast<int64_t>(lo), c_begin));
    range_s[1] = static_cast<int>(min(static_cast<int64_t>(hi), c_end));
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
        const float mv = p_s[r * bc + c];  // written by this thread's item only
        float s = -INFINITY;
        if (mv != -INFINITY) {  // hidden cells are skipped before the score, as on the CPU
          s = dot[rr] * p.scale;
          if (p.softcap != 0.0f) s = p.softcap * tanhf(s / p.softcap);
          s += mv;
        }
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
      if (lane == 0) {
        const float corr = m_old == -INFINITY ? (m_new == -INFINITY ? 1.0f : 0.0f) : expf(m_old - m_new);
        corr_s[r] = corr;
        m_s[r] = m_new;
        l_s[r] = l_s[r] * corr + sum;
      }
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

// Merges the splits of one row (blockIdx.x) of one kv head (blockIdx.y): the split weights
// e^(m_s - M) and the total l are formed once in shared memory, then each thread sums its dims.
__global__ void __launch_bounds__(kCombineThreads) attn_combine_kernel(const AttnParams p) {
  __shared__ float w_s[kMaxSplits];
  __shared__ float red_s[kCombineThreads / kWarp];
  const int row = blockIdx.x, kvh = blockIdx.y, tid = threadIdx.x;
  const int64_t stride = static_cast<int64_t>(p.n_kv_head) * p.rows * (p.hdv + 2);
  const float* part0 = p.part + (static_cast<int64_t>(kvh) * p.rows + row) * (p.hdv + 2);
  const float ms = tid < p.n_splits ? part0[tid * stride] : -INFINITY;
  const float ls = tid < p.n_splits ? part0[tid * stride + 1] : 0.0f;
  const float mx = block_max(ms, red_s);
  const float w = mx == -INFINITY || ms == -INFINITY ? 0.0f : expf(ms - mx);
  if (tid < p.n_splits) w_s[tid] = w;
  const float l = block_sum(w * ls, red_s);  // its barriers also publish w_s
  const int j = row / p.group, h = kvh * p.group + row % p.group;
  uint8_t* orow = p.o + static_cast<int64_t>(h) * p.o_nb1 + static_cast<int64_t>(j) * p.o_nb2;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int d = tid; d < p.hdv; d += blockDim.x) {
    float a = 0.0f;
#pragma unroll 8
    for (int s = 0; s < p.n_splits; s++) a = fmaf(w_s[s], part0[s * stride + 2 + d], a);
    st_f32(orow + static_cast<int64_t>(d) * p.o_nb0, a * inv, p.aligned);
  }
}

// ---- host side ----

template <DType KT, DType VT>
cudaError_t launch_tiles(const AttnParams& p, dim3 grid, size_t smem, cudaStream_t stream) {
  if (smem > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(attn_tile_kernel<KT, VT>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  attn_tile_kernel<KT, VT><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

template <DType KT>
cudaError_t launch_tiles_v(DType vt, const AttnParams& p, dim3 grid, size_t smem, cudaStream_t stream) {
  switch (vt) {
    case DType::F32: return launch_tiles<KT, DType::F32>(p, grid, smem, stream);
    case DType::F16: return launch_tiles<KT, DType::F16>(p, grid, smem, stream);
    case DType::BF16: return launch_tiles<KT, DType::BF16>(p, grid, smem, stream);
    case DType::Q8_0: return launch_tiles<KT, DType::Q8_0>(p, grid, smem, stream);
    default: return cudaErrorInvalidValue;
  }
}

bool is_aligned(const void* ptr, int64_t a) { return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(a) == 0; }

cudaError_t launch_attention(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor *q = args.in[0], *k = args.in[1], *v = args.in[2], *m = args.in[3], *o = args.out[0];
  const Plan plan = plan_attention(args);
  if (!plan.ok) return cudaErrorInvalidValue;
  const int64_t n_head = q->ne[1], n_q = q->ne[2], hdv = v->ne[0], n_kv = k->ne[2], n_kv_head = k->ne[1];
  if (n_head == 0 || n_q == 0 || hdv == 0) return cudaGetLastError();  // nothing to write

  AttnParams p{};
  p.q = q->data;
  p.k = k->data;
  p.v = v->data;
  p.m = m->data;
  p.o = o->data;
  p.q_nb0 = q->nb[0], p.q_nb1 = q->nb[1], p.q_nb2 = q->nb[2];
  p.k_nb1 = k->nb[1], p.k_nb2 = k->nb[2];
  p.v_nb1 = v->nb[1], p.v_nb2 = v->nb[2];
  p.m_nb0 = m->nb[0], p.m_nb1 = m->nb[1];
  p.o_nb0 = o->nb[0], p.o_nb1 = o->nb[1], p.o_nb2 = o->nb[2];
  p.hd = static_cast<int>(q->ne[0]);
  p.hdv = static_cast<int>(hdv);
  p.n_head = static_cast<int>(n_head);
  p.n_kv_head = static_cast<int>(n_kv_head);
  p.n_q = static_cast<int>(n_q);
  p.n_kv = static_cast<int>(n_kv);
  p.group = static_cast<int>(n_head / n_kv_head);
  p.rows = static_cast<int>(plan.rows);
  p.br = plan.br;
  p.bc = plan.bc;
  p.mask_kind = m->dtype == DType::I32 ? 2 : m->dtype == DType::F16 ? 1 : 0;
  p.scale = param_f32(args, P::scale);
  p.softcap = param_f32(args, P::softcap);
  p.err = ctx.err;
  p.node = ctx.node;

  // Element alignment of every pointer and stride the kernels use (else byte loads).
  const int64_t ka = k->dtype == DType::F32 ? 4 : k->dtype == DType::Q8_0 ? 1 : 2;
  const int64_t va = v->dtype == DType::F32 ? 4 : v->dtype == DType::Q8_0 ? 1 : 2;
  const int64_t ma = m->dtype == DType::F16 ? 2 : 4;
  p.aligned = is_aligned(q->data, 4) && q->nb[0] % 4 == 0 && q->nb[1] % 4 == 0 && q->nb[2] % 4 == 0 &&
              is_aligned(o->data, 4) && o->nb[0] % 4 == 0 && o->nb[1] % 4 == 0 && o->nb[2] % 4 == 0 &&
              is_aligned(k->data, ka) && k->nb[1] % ka == 0 && k->nb[2] % ka == 0 && is_aligned(v->data, va) &&
              v->nb[1] % va == 0 && v->nb[2] % va == 0 && is_aligned(m->data, ma) && m->nb[0] % ma == 0 &&
              m->nb[1] % ma == 0;

  // Whole-unit row reads: 16-byte aligned rows (Q8_0: 2-byte aligned) and dims in whole units.
  auto vec_rows = [](const Tensor* t) {
    if (t->dtype == DType::Q8_0) return is_aligned(t->data, 2) && t->nb[1] % 2 == 0 && t->nb[2] % 2 == 0;
    const int64_t per = t->dtype == DType::F32 ? 4 : 8;
    return is_aligned(t->data, 16) && t->nb[1] % 16 == 0 && t->nb[2] % 16 == 0 && t->ne[0] % per == 0;
  };
  p.k_vec = vec_rows(k);
  p.v_vec = vec_rows(v);
  p.hd4 = q->ne[0] % 4 == 0;
  p.v_sep = plan.v_sep;

  // Splits: enough blocks for about two waves, never more than the scratch holds.
  const int64_t base = plan.row_tiles * n_kv_head;
  int n_splits = 1;
  if (plan.max_splits > 1 && ctx.scratch) {
    const int64_t want = (2 * static_cast<int64_t>(std::max(ctx.sm_count, 1)) + base - 1) / base;
    n_splits = static_cast<int>(std::min<int64_t>(plan.max_splits, std::max<int64_t>(1, want)));
  }
  const int64_t tiles = (n_kv + plan.bc - 1) / plan.bc;
  const int64_t tiles_per_split = std::max<int64_t>(1, (tiles + n_splits - 1) / n_splits);
  p.chunk = static_cast<int>(std::min<int64_t>(tiles_per_split * plan.bc, std::max<int64_t>(n_kv, 1)));
  n_splits = static_cast<int>(std::max<int64_t>(1, (n_kv + p.chunk - 1) / p.chunk));
  p.n_splits = n_splits;
  p.part = n_splits > 1 ? static_cast<float*>(ctx.scratch) : nullptr;
  if (n_kv == 0) p.chunk = 0;

  const dim3 grid(static_cast<unsigned>(plan.row_tiles), static_cast<unsigned>(n_kv_head), static_cast<unsigned>(n_splits));
  cudaError_t e;
  switch (k->dtype) {
    case DType::F32: e = launch_tiles_v<DType::F32>(v->dtype, p, grid, plan.smem, ctx.stream); break;
    case DType::F16: e = launch_tiles_v<DType::F16>(v->dtype, p, grid, plan.smem, ctx.stream); break;
    case DType::BF16: e = launch_tiles_v<DType::BF16>(v->dtype, p, grid, plan.smem, ctx.stream); break;
    case DType::Q8_0: e = launch_tiles_v<DType::Q8_0>(v->dtype, p, grid, plan.smem, ctx.stream); break;
    default: return cudaErrorInvalidValue;
  }
  if (e != cudaSuccess) return e;
  if (n_splits > 1) {
    attn_combine_kernel<<<dim3(static_cast<unsigned>(plan.rows), static_cast<unsigned>(n_kv_head)), kCombineThreads, 0,
                          ctx.stream>>>(p);
  }
  return cudaGetLastError();
}

const Registrar attention_kernel(program::Op::ATTENTION, {check_attention, scratch_attention, launch_attention});

}  // namespace
}  // namespace minfer::cuda
