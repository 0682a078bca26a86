// Quantized matrix products of a few activation columns on int8 tensor cores (included by
// ops/matmul.cu only): a step of several sequences decoding together (serving) and small prompts.
//
//   out[m + n·o_col] = Σ_k W(k, m) · x[k, n]      m < M, n < N (2 ≤ N ≤ kMmqMaxCols), one 2-D plane
//
// Activations are the Q8A codes of matvec_q.cuh (int8 per element, {d, d·Σq} per 32), for every
// weight type: the K-quants too, so that each 32-element chunk of a weight row is one integer dot
// per column with its own activation scale (finer than the mat-vec's Q8K, whose scale is per 256).
//
// The weights stay in their blocks. A weight chunk of 32 elements is decoded to 32 int8 codes
// (centred on zero for the symmetric types: Q4_0 q−8, Q5_0 q−16, Q3_K q−4, Q6_K q−32; 0..31 for the
// types with a minimum) and a float scale per 32 (or per 16: Q3_K, Q6_K), plus the minimum m per 32
// for Q4_1, Q5_1, Q4_K, Q5_K. The chunk's contribution to (row, column) is then
//     s · d_a · Σ q·a            (+ m · d_a·Σa, the activation block's sum)
// with Σ q·a from mma.sync m16n8k32 (s8·s8 → s32; two m16n8k16 for the 16-element scales).
//
// Tiles: a block of 256 threads (8 warps) owns 64 weight rows and a range of k-tiles of 256
// elements (8 chunks; the last tile of a 32-element type may be shorter); warp w takes rows
// 16·(w % 4) .. +15 against every column, over chunks 0-3 (w < 4) or 4-7 of each tile, and the two
// halves' sums are added once at the end. Or 128 rows (Tuning::mmq_rows; by default for the large
// products at 16-64 columns): warp w takes rows 16·w .. +15 over all 8 chunks, so each stage's
// activation codes serve twice the weight rows.
// Each stage holds a tile's raw weight bytes (every row's bytes copied as the 16-byte-aligned
// chunks that cover them, so blocks of any size and rows of any even stride copy with 16-byte
// cp.async), the activation codes of the tile for the NT columns and their {d, d·Σq}; three stages
// in flight (two for 64 columns; cp.async, one __syncthreads per tile). Rows past M and columns
// past N read row M−1 and column N−1 and are not stored.
//
// Columns: up to 64 in one column tile (NT of 8, 16, 32 or 64, the smallest that holds N); more
// (a prompt) in tiles of 64, each a block of its own, the blocks of one row range next to each other
// in the grid so that they run together and read its weights from L2 after the first.
// Split-K: when the M blocks alone cannot fill the device (512-row K/V projections, the 3584-row
// products of a 7B model), blockIdx.y takes a contiguous range of k-tiles and writes its partial
// product to scratch; mmq_reduce_kernel adds the partials in a fixed order (deterministic, no
// atomics) and stores them with MUL_MAT_ADD's c. The split count depends only on the shape and
// Tuning::mmq_target_blocks (a constant, 264 by default), not on the device, so every GPU computes
// the same sums.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "matmul_generic.cuh"
#include "matvec_q.cuh"

namespace minfer::cuda::mm {

constexpr int kMmqThreads = 256;           // 8 warps
// Opt-in shared memory of a block on the smallest GPU the prebuilt targets (sm_86 / sm_89: 99 KB;
// sm_80 163 KB, sm_90 227 KB): every variant fits it.
constexpr int kMmqMaxSmem = 99 * 1024;
// The 128-row tiles' (Tuning::mmq_rows) may need more (Q8_0, Q6_K: 121 and 104 KB): they run only
// where asked (Tuning::mmq_rows 128) and the device's opt-in shared memory holds them (launch_mmq_t),
// else the 64-row tiles do.
constexpr int kMmqMaxSmem128 = 227 * 1024;
constexpr int kMmqTileCols = 64;           // the widest column tile
// The most columns a product on the kernel may have: beyond kMmqTileCols, blocks take column tiles
// of 64 (a prompt's micro-batch; Tuning::mmq_max_cols up to this).
constexpr int kMmqMaxCols = 8192;
// split-K until M blocks × splits reaches Tuning::mmq_target_blocks, at most this (scratch is sized for it)
constexpr int64_t kMmqTargetBlocks = 512;
constexpr int kMmqMaxSplits = 32;
constexpr int64_t kMmqSkMaxGrid = 512;     // stream-K: at most this many blocks (its slots' scratch)

// A block's tile for NT columns: kRows weight rows × kParts chunks of 32 (64 × 256 elements), 8
// warps as kRows / 16 row groups × kGroups k-groups: warp w takes rows 16·(w % row groups) .. + 15
// against every column, over its k-group's share of each tile's chunks; the k-groups' sums are
// added in a fixed order at the end. (Measured on the H200 and dropped, docs/PERFORMANCE.md: 4
// warps of 16 rows over whole tiles, and 32 rows × 512 elements for 16 columns or fewer, which
// read each row in longer runs; neither was faster, the second up to 20% slower on the K-quants.)
template <int NT, int R = 64>
struct MmqShape {
  static constexpr int kRows = R;  // 64, or 128 (Tuning::mmq_rows, 16-64 columns): every warp all of a tile's chunks
  static constexpr int kParts = 8;
  static constexpr int kRowGroups = kRows / 16;
  static constexpr int kGroups = 8 / kRowGroups;
  static constexpr int kGroupParts = kParts / kGroups;
  static constexpr int kActStride = kParts * 32 + 16;  // bytes per column of a stage's codes (padded)
};

// ---- PTX ------------------------------------------------------------------------------------------

__device__ __forceinline__ void mma_s8_k32(int* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                           uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_s8_k16(int* c, uint32_t a0, uint32_t a1, uint32_t b0) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(b0));
}
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void cp_async8(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- weight chunks ----------------------------------------------------------------------------
// decode(s, c, t): from the block (32-element types) or super-block (K-quants, chunk c) at s in
// shared memory, lane t's (0..3) two words of codes: lo = elements 4t..4t+3 and hi = elements
// 16+4t..16+4t+3 of the chunk (the words of an m16n8k32 A fragment), with the scale of each half
// (equal unless kHalves) and the chunk's minimum (kMin). Every field sits at an even offset, and
// a row's bytes start at an even offset of its stage row: 16-bit shared loads throughout.

__device__ inline uint32_t sh32(const uint8_t* p) {  // 2-byte aligned shared memory
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}
__device__ inline float shf16(const uint8_t* p) { return __half2float(*reinterpret_cast<const __half*>(p)); }

struct Chunk {
  uint32_t lo, hi;
  float slo, shi, m;
};

struct MQ4_0 {
  static constexpr int kBlockBytes = kQ4_0Bytes, kBlockElems = 32;
  static constexpr bool kHalves = false, kMin = false;
  __device__ static Chunk decode(const uint8_t* s, int, int t) {
    const uint32_t w = sh32(s + 2 + 4 * t);
    const float d = shf16(s);
    return {__vsub4(w & 0x0f0f0f0fu, 0x08080808u), __vsub4((w >> 4) & 0x0f0f0f0fu, 0x08080808u), d, d, 0.0f};
  }
};
struct MQ4_1 {
  static constexpr int kBlockBytes = kQ4_1Bytes, kBlockElems = 32;
  static constexpr bool kHalves = false, kMin = true;
  __device__ static Chunk decode(const uint8_t* s, int, int t) {
    const uint32_t w = sh32(s + 4 + 4 * t);
    const float d = shf16(s);
    return {w & 0x0f0f0f0fu, (w >> 4) & 0x0f0f0f0fu, d, d, shf16(s + 2)};
  }
};
struct MQ5_0 {
  static constexpr int kBlockBytes = kQ5_0Bytes, kBlockElems = 32;
  static constexpr bool kHalves = false, kMin = false;
  __device__ static Chunk decode(const uint8_t* s, int, int t) {
    const uint32_t qh = sh32(s + 2), w = sh32(s + 6 + 4 * t);
    const float d = shf16(s);
    const uint32_t lo = (w & 0x0f0f0f0fu) | static_cast<uint32_t>(spread4(qh >> (4 * t)));
    const uint32_t hi = ((w >> 4) & 0x0f0f0f0fu) | static_cast<uint32_t>(spread4(qh >> (16 + 4 * t)));
    return {__vsub4(lo, 0x10101010u), __vsub4(hi, 0x10101010u), d, d, 0.0f};
  }
};
struct MQ5_1 {
  static constexpr int kBlockBytes = kQ5_1Bytes, kBlockElems = 32;
  static constexpr bool kHalves = false, kMin = true;
  __device__ static Chunk decode(const uint8_t* s, int, int t) {
    const uint32_t qh = sh32(s + 4), w = sh32(s + 8 + 4 * t);
    const float d = shf16(s);
    const uint32_t lo = (w & 0x0f0f0f0fu) | static_cast<uint32_t>(spread4(qh >> (4 * t)));
    const uint32_t hi = ((w >> 4) & 0x0f0f0f0fu) | static_cast<uint32_t>(spread4(qh >> (16 + 4 * t)));
    return {lo, hi, d, d, shf16(s + 2)};
  }
};
struct MQ8_0 {
  static constexpr int kBlockBytes = kQ8_0Bytes, kBlockElems = 32;
  static constexpr bool kHalves = false, kMin = false;
  __device__ static Chunk decode(const uint8_t* s, int, int t) {
    const float d = shf16(s);
    return {sh32(s + 2 + 4 * t), sh32(s + 18 + 4 * t), d, d, 0.0f};
  }
};
struct MQ3_K {
  static constexpr int kBlockBytes = kQ3_KBytes, kBlockElems = 256;
  static constexpr bool kHalves = true, kMin = false;
  __device__ static Chunk decode(const uint8_t* s, int c, int t) {
    const uint8_t* qp = s + 32 + 32 * (c >> 2);
    const int shift = 2 * (c & 3);
    const uint32_t lo = ((sh32(qp + 4 * t) >> shift) & 0x03030303u) | (((sh32(s + 4 * t) >> c) & 0x01010101u) << 2);
    const uint32_t hi =
        ((sh32(qp + 16 + 4 * t) >> shift) & 0x03030303u) | (((sh32(s + 16 + 4 * t) >> c) & 0x01010101u) << 2);
    const float d = shf16(s + 108);
    return {__vsub4(lo, 0x04040404u), __vsub4(hi, 0x04040404u), d * static_cast<float>(q_scale_q3k(2 * c, s + 96)),
            d * static_cast<float>(q_scale_q3k(2 * c + 1, s + 96)), 0.0f};
  }
};
template <bool kFive>
struct MQ45_K {
  static constexpr int kBlockBytes = kFive ? kQ5_KBytes : kQ4_KBytes, kBlockElems = 256;
  static constexpr bool kHalves = false, kMin = true;
  __device__ static Chunk decode(const uint8_t* s, int c, int t) {
    const uint8_t* qp = s + (kFive ? 48 : 16) + 32 * (c >> 1);
    const int shift = 4 * (c & 1);
    uint32_t lo = (sh32(qp + 4 * t) >> shift) & 0x0f0f0f0fu;
    uint32_t hi = (sh32(qp + 16 + 4 * t) >> shift) & 0x0f0f0f0fu;
    if (kFive) {
      lo |= ((sh32(s + 16 + 4 * t) >> c) & 0x01010101u) << 4;
      hi |= ((sh32(s + 32 + 4 * t) >> c) & 0x01010101u) << 4;
    }
    int sc, mn;
    q_scale_min_k4(c, s + 4, &sc, &mn);
    const float d = shf16(s), dmin = shf16(s + 2);
    const float ds = d * static_cast<float>(sc);
    return {lo, hi, ds, ds, -dmin * static_cast<float>(mn)};
  }
};
struct MQ6_K {
  static constexpr int kBlockBytes = kQ6_KBytes, kBlockElems = 256;
  static constexpr bool kHalves = true, kMin = false;
  __device__ static Chunk decode(const uint8_t* s, int c, int t) {
    const int h = c >> 2, r = c & 3;
    const uint8_t* ql = s + 64 * h + 32 * (r & 1);
    const uint8_t* qh = s + 128 + 32 * h;
    const int lshift = 4 * (r >> 1), hshift = 2 * r;
    const uint32_t lo = ((sh32(ql + 4 * t) >> lshift) & 0x0f0f0f0fu) | (((sh32(qh + 4 * t) >> hshift) & 0x03030303u) << 4);
    const uint32_t hi =
        ((sh32(ql + 16 + 4 * t) >> lshift) & 0x0f0f0f0fu) | (((sh32(qh + 16 + 4 * t) >> hshift) & 0x03030303u) << 4);
    const float d = shf16(s + 208);
    const int8_t* sc = reinterpret_cast<const int8_t*>(s + 192 + 8 * h + 2 * r);
    return {__vsub4(lo, 0x20202020u), __vsub4(hi, 0x20202020u), d * static_cast<float>(sc[0]),
            d * static_cast<float>(sc[1]), 0.0f};
  }
};

__host__ __device__ constexpr bool mmq_dtype(DType t) {
  return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q5_0 || t == DType::Q5_1 || t == DType::Q8_0 ||
         t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
}

// The column counts the kernel takes by default, from measurements on the H200 (docs/PERFORMANCE.md;
// types not measured take the figure of their family). From 3 columns (below, the dp4a mat-vec) for
// Q6_K, whose mat-vec is slow at 3-4 columns; from 5 for the others: the K-quants' mat-vec was as
// fast at 3-4 columns, and the 32-element types' with 2 warps a row group (session 20: a step of 4
// sequences of qwen2-7b Q4_0 773 against 754 t/s on this kernel; it had won over the mat-vec of a
// warp a row, 757 against 705, in session 12). Up to 64 columns for the
// 32-element types (64 sequences: 4709 against 4250 t/s on the f16 GEMM), 32 for the K-quants,
// whose 64-column products measured slower than the GEMM's (Q4_K gate/up 105.5 against 82.9 us).
inline bool mmq_small_block(DType t) {
  return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q5_0 || t == DType::Q5_1 || t == DType::Q8_0;
}
inline int mmq_default_min_cols(DType t) { return t == DType::Q6_K ? 3 : 5; }
inline int mmq_default_max_cols(DType t) { return mmq_small_block(t) ? 64 : 32; }

// ---- tile geometry ----------------------------------------------------------------------------

template <class Q, int NT, int R = 64>
struct MmqTile {
  using S = MmqShape<NT, R>;
  static constexpr int kBlockParts = Q::kBlockElems / 32;  // chunks of 32 per block (1 or 8)
  // bytes of one row's full k-tile
  static constexpr int kBytes = S::kParts / kBlockParts * Q::kBlockBytes;
  // 16-byte chunks per stage row: the tile's bytes from an offset of 0..14 in their first chunk
  // (rows and tiles need not be 16-byte aligned: Q6_K's 210-byte super-blocks), made odd so that
  // the 8 rows one shared load touches fall in different banks
  static constexpr int kRawChunks = (kBytes + 14 + 15) / 16;
  static constexpr int kChunks = kRawChunks | 1;
  static constexpr int kRowBytes = kChunks * 16;
  static constexpr int kWeightBytes = S::kRows * kRowBytes;
  static constexpr int kActBytes = NT * S::kActStride;
  static constexpr int kStageBytes = kWeightBytes + kActBytes + NT * S::kParts * 8;
  // k-tiles staged per block: three, two for 64 columns (whose activations make a stage 41 KB) and
  // for 128 rows
  static constexpr int kStages = NT >= 64 || R > 64 ? 2 : 3;
  static constexpr int kSmemBytes = kStages * kStageBytes;
};

// One weight of a launch. Several weights against the same activations (MUL_MAT_MULTI's q/k/v or
// gate/up) share one launch: their blocks fill one grid, so the last wave of one weight's blocks is
// filled by the next weight's (q/k/v of qwen2-7b at 64 columns: 560 + 112 + 112 blocks, three
// short waves as one launch, five apart). Each weight keeps its own split count (mmq_plan of its
// shape), so the sums are those of a launch of its own.
struct MmqOne {
  Planes p;              // one plane (p.n_planes == 1, no ids); p.c: MUL_MAT_ADD's addend
  float* partial;        // split-K partials [splits][N][M] (nullptr when splits == 1)
  int64_t mblocks;       // blocks of kRows rows
  int64_t ctiles;        // column tiles of NT columns
  int tiles_per_split, splits;
  const uint8_t* w_end;  // end of the plane's last weight row (no 16-byte chunk reads past it)
};
constexpr int kMmqMaxBatch = 3;

struct MmqArgs {
  MmqOne w[kMmqMaxBatch];
  // split-K: weight i owns blocks [first[i], first[i + 1]) of grid.x; stream-K: output tiles
  int64_t first[kMmqMaxBatch + 1];
  int n;
  const int8_t* aq;    // Q8A codes: column n at aq + n·K
  const float2* ads;   // Q8A {d, d·Σq}: column n, part j at ads[n·K/32 + j]
  int tiles;           // k-tiles of the whole row (one K for every weight)
  // Stream-K (units > 0): the launch's work is `units` = output tiles × tiles k-tiles (unit u: k-tile
  // u % tiles of output tile u / tiles; a weight's output tiles row-block-major, column tile minor),
  // block b takes units [b·units/G, (b+1)·units/G) of the G blocks. An output tile whose units one
  // block holds is stored by it; the blocks that share one write their sums to `slots` ([G][2]
  // [NT][kRows]: a block's first segment in slot 0, its last in slot 1) and mmq_streamk_fixup adds
  // them in block order. 0: split-K as above.
  int64_t units;
  int64_t grid;  // G
  float* slots;
};

// ---- the kernel ---------------------------------------------------------------------------------

// Where a segment's sums go: the output (plus MUL_MAT_ADD's c), split-K partials, or a stream-K slot.
enum class MmqSink { Out, Split, Slot };

// Tiles [tile0, tile0 + ntiles) of weight wi's output tile (row block mb, column tile ct), 256
// threads; `sink_idx` is the split (Split) or the slot (Slot). Every thread returns from it (its
// last act is a __syncthreads), so a block may run several segments.
template <class Q, int NT, int R>
__device__ __forceinline__ void mmq_segment(const MmqArgs& a, uint8_t* smem, int wi, int64_t mb, int64_t ct, int tile0,
                                            int ntiles, MmqSink sink, int sink_idx) {
  using S = MmqShape<NT, R>;
  using T = MmqTile<Q, NT, R>;
  const MmqOne& one = a.w[wi];
  const Planes& p = one.p;
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp, g = lane / 4, t = lane % 4;
  const int64_t m0 = mb * S::kRows;
  const int64_t c0 = ct * NT;  // the tile's first column
  const int64_t K = p.K, nparts = K / 32;
  const int ncols = static_cast<int>(min(static_cast<int64_t>(NT), p.ncols - c0));  // the tile's columns

  auto stage_ptr = [&](int s) { return smem + static_cast<size_t>(s) * T::kStageBytes; };
  auto row_ptr = [&](int r) { return p.w + min(m0 + r, p.M - 1) * p.w_nb1; };
  auto tile_parts = [&](int ti) {
    const int64_t left = nparts - static_cast<int64_t>(ti) * S::kParts;
    return static_cast<int>(left < S::kParts ? left : S::kParts);
  };

  // Stage s ← k-tile ti: each row's bytes as the 16-byte-aligned chunks that cover them (a chunk
  // that would read past the plane's last row is copied 2 bytes at a time), the tile's activation
  // codes for NT columns, and their {d, d·Σq} as [part][column].
  auto load = [&](int s, int ti) {
    uint8_t* st = stage_ptr(s);
    const int64_t part0 = static_cast<int64_t>(ti) * S::kParts;
    const int nch = tile_parts(ti);
    const int64_t boff = static_cast<int64_t>(ti) * T::kBytes;
    const int bytes = nch / T::kBlockParts * Q::kBlockBytes;
    for (int i = tid; i < S::kRows * T::kRawChunks; i += kMmqThreads) {
      const int r = i / T::kRawChunks, q = i % T::kRawChunks;
      const uint8_t* src = row_ptr(r) + boff;
      const int off = static_cast<int>(reinterpret_cast<uintptr_t>(src) & 15u);
      if (q * 16 >= off + bytes) continue;
      const uint8_t* chunk = src - off + 16 * q;
      uint8_t* dst = st + r * T::kRowBytes + 16 * q;
      if (chunk + 16 <= one.w_end) {
        cp_async16(dst, chunk);
      } else {  // the end of the plane: no read past its last byte
        for (int b = 0; b < 16 && chunk + b < one.w_end; b += 2)
          *reinterpret_cast<uint16_t*>(dst + b) = *reinterpret_cast<const uint16_t*>(chunk + b);
      }
    }
    uint8_t* act = st + T::kWeightBytes;
    for (int i = tid; i < NT * S::kParts * 2; i += kMmqThreads) {
      const int c = i / (S::kParts * 2), q = i % (S::kParts * 2);
      if (q >= 2 * nch) continue;
      const int64_t col = c0 + min(c, ncols - 1);
      cp_async16(act + c * S::kActStride + q * 16, a.aq + col * K + part0 * 32 + q * 16);
    }
    float2* ds = reinterpret_cast<float2*>(act + T::kActBytes);
    for (int i = tid; i < NT * S::kParts; i += kMmqThreads) {
      const int c = i / S::kParts, j = i % S::kParts;
      if (j >= nch) continue;
      const int64_t col = c0 + min(c, ncols - 1);
      cp_async8(ds + j * NT + c, a.ads + col * nparts + part0 + j);
    }
  };

  float acc[NT / 8][4];
#pragma unroll
  for (int j = 0; j < NT / 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[j][e] = 0.0f;

  const int rg = warp % S::kRowGroups, kg = warp / S::kRowGroups;
  const int r0 = rg * 16 + g, r1 = r0 + 8;
#pragma unroll
  for (int s = 0; s < T::kStages - 1; s++) {
    if (s < ntiles) load(s, tile0 + s);
    cp_commit();
  }
  for (int it = 0; it < ntiles; it++) {
    cp_wait<T::kStages - 2>();
    __syncthreads();
    if (it + T::kStages - 1 < ntiles) load((it + T::kStages - 1) % T::kStages, tile0 + it + T::kStages - 1);
    cp_commit();

    const int ti = tile0 + it;
    const uint8_t* st = stage_ptr(it % T::kStages);
    const int nch = tile_parts(ti);
    const int64_t boff = static_cast<int64_t>(ti) * T::kBytes;
    const uint8_t* w0 = st + r0 * T::kRowBytes + (reinterpret_cast<uintptr_t>(row_ptr(r0) + boff) & 15u);
    const uint8_t* w1 = st + r1 * T::kRowBytes + (reinterpret_cast<uintptr_t>(row_ptr(r1) + boff) & 15u);
    const uint8_t* act = st + T::kWeightBytes;
    const float2* ds = reinterpret_cast<const float2*>(act + T::kActBytes);
    // chunk c (0 .. kParts-1) of the tile: block c of a 32-element type, chunk c % 8 of
    // super-block c / 8 of a K-quant
    auto chunk = [&](int c) {
      const int bo = c / T::kBlockParts * Q::kBlockBytes, ci = c % T::kBlockParts;
      const Chunk q0 = Q::decode(w0 + bo, ci, t), q1 = Q::decode(w1 + bo, ci, t);
#pragma unroll
      for (int j = 0; j < NT / 8; j++) {
        const uint8_t* ab = act + (8 * j + g) * S::kActStride + c * 32;
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(ab + 4 * t);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(ab + 16 + 4 * t);
        const float4 dd = *reinterpret_cast<const float4*>(ds + c * NT + 8 * j + 2 * t);
        if (Q::kHalves) {
          int cl[4] = {0, 0, 0, 0}, ch[4] = {0, 0, 0, 0};
          mma_s8_k16(cl, q0.lo, q1.lo, b0);
          mma_s8_k16(ch, q0.hi, q1.hi, b1);
          acc[j][0] += dd.x * (q0.slo * static_cast<float>(cl[0]) + q0.shi * static_cast<float>(ch[0]));
          acc[j][1] += dd.z * (q0.slo * static_cast<float>(cl[1]) + q0.shi * static_cast<float>(ch[1]));
          acc[j][2] += dd.x * (q1.slo * static_cast<float>(cl[2]) + q1.shi * static_cast<float>(ch[2]));
          acc[j][3] += dd.z * (q1.slo * static_cast<float>(cl[3]) + q1.shi * static_cast<float>(ch[3]));
        } else {
          int cc[4] = {0, 0, 0, 0};
          mma_s8_k32(cc, q0.lo, q1.lo, q0.hi, q1.hi, b0, b1);
          acc[j][0] += q0.slo * dd.x * static_cast<float>(cc[0]);
          acc[j][1] += q0.slo * dd.z * static_cast<float>(cc[1]);
          acc[j][2] += q1.slo * dd.x * static_cast<float>(cc[2]);
          acc[j][3] += q1.slo * dd.z * static_cast<float>(cc[3]);
          if (Q::kMin) {
            acc[j][0] += q0.m * dd.y;
            acc[j][1] += q0.m * dd.w;
            acc[j][2] += q1.m * dd.y;
            acc[j][3] += q1.m * dd.w;
          }
        }
      }
    };
    const int c0 = kg * S::kGroupParts;
    if (nch == S::kParts) {
#pragma unroll
      for (int cc = 0; cc < S::kGroupParts; cc++) chunk(c0 + cc);
    } else {
      for (int cc = 0; cc < S::kGroupParts; cc++)
        if (c0 + cc < nch) chunk(c0 + cc);
    }
  }
  cp_wait<0>();
  // The other k-groups' sums join group 0's through shared memory (the stages are free now), in
  // the order of the groups.
  __syncthreads();
  constexpr int kPer = NT / 2;  // accumulators a thread holds
  float* red = reinterpret_cast<float*>(smem);
  if (kg > 0) {
#pragma unroll
    for (int j = 0; j < NT / 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) red[(((kg - 1) * S::kRowGroups + rg) * kWarp + lane) * kPer + 4 * j + e] = acc[j][e];
  }
  __syncthreads();
  if (kg == 0) {
    for (int k = 1; k < S::kGroups; k++)
#pragma unroll
      for (int j = 0; j < NT / 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[j][e] += red[(((k - 1) * S::kRowGroups + rg) * kWarp + lane) * kPer + 4 * j + e];
    float* slot = sink == MmqSink::Slot ? a.slots + ((static_cast<int64_t>(blockIdx.x) * 2 + sink_idx) * NT) * S::kRows : nullptr;
#pragma unroll
    for (int j = 0; j < NT / 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int rl = e < 2 ? r0 : r1;
        const int64_t row = m0 + rl;
        const int col = 8 * j + 2 * t + (e & 1);
        if (sink == MmqSink::Slot) {  // the whole tile (the fixup reads only what is in range)
          slot[col * S::kRows + rl] = acc[j][e];
          continue;
        }
        if (row >= p.M || col >= ncols) continue;
        const int64_t gcol = c0 + col;
        if (sink == MmqSink::Split)
          one.partial[(static_cast<int64_t>(sink_idx) * p.ncols + gcol) * p.M + row] = acc[j][e];
        else
          reinterpret_cast<float*>(p.out + gcol * p.o_nb1)[row] = plus_c(p, 0, gcol, row, acc[j][e]);
      }
  }
  __syncthreads();  // (the next segment's copies go to the stages the sums were added through)
}

// The block of stream-K unit u: start(b) <= u < start(b + 1), start(b) = b·units/G.
__host__ __device__ inline int64_t mmq_sk_start(int64_t b, int64_t units, int64_t G) { return b * units / G; }
__device__ inline int64_t mmq_sk_block(int64_t u, int64_t units, int64_t G) {
  int64_t b = u * G / units;
  while (b + 1 < G && mmq_sk_start(b + 1, units, G) <= u) b++;
  while (b > 0 && mmq_sk_start(b, units, G) > u) b--;
  return b;
}

// grid: split-K, Σ over the weights of ceil(M / kRows) × column tiles × splits; stream-K, G blocks
// (at most the units). 256 threads.
// MINB: blocks an SM must fit (registers: 128 a thread for 2, 80 for 3). Three (Tuning::mmq_blocks,
// for 8 and 16 columns) trade registers for a third block of warps to hide the loads' latency
// (Nsight Compute on the 64-column kernel: 25% occupancy, 1.4 eligible warps a scheduler);
// measured no faster than two (docs/PERFORMANCE.md, session 19). SK: the stream-K loop (a kernel of its own, so that the split-K kernels keep
// their registers: the loop around a segment made several spill).
template <class Q, int NT, int MINB = 2, bool SK = false, int R = 64>
__global__ void __launch_bounds__(kMmqThreads, MINB) mmq_kernel(const __grid_constant__ MmqArgs a) {
  pdl_begin();
  extern __shared__ __align__(16) uint8_t smem[];
  if constexpr (!SK) {
    int wi = 0;
    while (wi + 1 < a.n && static_cast<int64_t>(blockIdx.x) >= a.first[wi + 1]) wi++;
    const MmqOne& one = a.w[wi];
    const int64_t local = static_cast<int64_t>(blockIdx.x) - a.first[wi];
    const int64_t per_split = one.mblocks * one.ctiles;
    const int split_idx = static_cast<int>(local / per_split);
    const int tile0 = split_idx * one.tiles_per_split;
    const int ntiles = min(one.tiles_per_split, a.tiles - tile0);
    if (ntiles <= 0) return;
    const int64_t o = local % per_split;
    mmq_segment<Q, NT, R>(a, smem, wi, o / one.ctiles, o % one.ctiles, tile0, ntiles,
                       one.splits > 1 ? MmqSink::Split : MmqSink::Out, split_idx);
  } else {
    const int64_t G = a.grid, u0 = mmq_sk_start(blockIdx.x, a.units, G), u1 = mmq_sk_start(blockIdx.x + 1, a.units, G);
    for (int64_t u = u0; u < u1;) {
      const int64_t o = u / a.tiles, end = min(u1, (o + 1) * a.tiles);
      int wi = 0;
      while (wi + 1 < a.n && o >= a.first[wi + 1]) wi++;
      const int64_t lo = o - a.first[wi];
      const int ct = static_cast<int>(lo % a.w[wi].ctiles);
      const bool whole = u == o * a.tiles && end == (o + 1) * a.tiles;
      mmq_segment<Q, NT, R>(a, smem, wi, lo / a.w[wi].ctiles, ct, static_cast<int>(u - o * a.tiles), static_cast<int>(end - u),
                         whole ? MmqSink::Out : MmqSink::Slot, u == u0 ? 0 : 1);
      u = end;
    }
  }
}

// Stream-K: every output tile that several blocks share, their slots added in block order (plus
// c). Grid over the elements of every output tile of the launch (kRows·NT a tile); the others
// were stored by their one block.
template <int NT>
__global__ void mmq_streamk_fixup(const __grid_constant__ MmqArgs a) {
  pdl_begin();
  constexpr int kRows = MmqShape<NT>::kRows;
  const int64_t G = a.grid;
  const int64_t tiles_total = a.first[a.n];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < tiles_total * kRows * NT;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / (kRows * NT);
    const int e = static_cast<int>(i % (kRows * NT)), col = e / kRows, rl = e % kRows;
    const int64_t b0 = mmq_sk_block(o * a.tiles, a.units, G), b1 = mmq_sk_block((o + 1) * a.tiles - 1, a.units, G);
    if (b0 == b1) continue;
    int wi = 0;
    while (wi + 1 < a.n && o >= a.first[wi + 1]) wi++;
    const MmqOne& one = a.w[wi];
    const Planes& p = one.p;
    const int64_t lo = o - a.first[wi];
    const int64_t row = lo / one.ctiles * kRows + rl, gcol = lo % one.ctiles * NT + col;
    if (row >= p.M || gcol >= p.ncols) continue;
    float sum = 0.0f;
    for (int64_t b = b0; b <= b1; b++) {
      const int slot = mmq_sk_start(b, a.units, G) >= o * a.tiles ? 0 : 1;
      sum += a.slots[((b * 2 + slot) * NT + col) * kRows + rl];
    }
    reinterpret_cast<float*>(p.out + gcol * p.o_nb1)[row] = plus_c(p, 0, gcol, row, sum);
  }
}

// out (col, row) = Σ_s partial[s][col][row] in order s = 0, 1, …, plus c.
__global__ void mmq_reduce_kernel(Planes p, const float* __restrict__ partial, int splits) {
  pdl_begin();
  const int64_t total = p.M * p.ncols;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i % p.M, col = i / p.M;
    float s = 0.0f;
    for (int k = 0; k < splits; k++) s += partial[k * total + i];
    reinterpret_cast<float*>(p.out + col * p.o_nb1)[row] = plus_c(p, 0, col, row, s);
  }
}

// ---- host side --------------------------------------------------------------------------------

struct MmqPlan {
  int64_t mblocks, ctiles;
  int tiles, tiles_per_split, splits;
};

// The column tile for N columns (8, 16, 32 or 64; 64 beyond).
inline int mmq_nt(int64_t N) { return N <= 8 ? 8 : N <= 16 ? 16 : N <= 32 ? 32 : kMmqTileCols; }

// The rows of a block for N columns when 128 are asked (Tuning::mmq_rows): 128 at 16-64 columns.
inline int mmq_rows_for(int64_t N, int rows) { return rows == 128 && mmq_nt(N) >= 16 ? 128 : 64; }
// Tuning::mmq_rows 0 (auto) takes 128 rows at 16-64 columns for launches of at least this many weight
// elements (Σ M·K): on the H200 (docs/PERFORMANCE.md, session 22) the 3584 × 18944 products were
// 4-19% faster with them, the 3584 × 3584 ones the same alone, the 512-row K/V products alone slower;
// a step of 64 sequences of qwen2-7b Q4_0 3% faster with its q/k/v (16.5M) and o (12.8M) on them too.
constexpr int64_t kMmqRows128MinElems = int64_t{1} << 23;

// target: split K until the launch's blocks (row blocks × column tiles × splits) reach this
// (Tuning::mmq_target_blocks, at most kMmqTargetBlocks: the splits, and so the partials' bytes, grow
// with it, and scratch is sized for kMmqTargetBlocks).
inline MmqPlan mmq_plan(int64_t M, int64_t K, int64_t N, int rows_asked = 64, int64_t target = kMmqTargetBlocks) {
  const int rows = mmq_rows_for(N, rows_asked);
  const int parts = MmqShape<8>::kParts;  // (every shape: tiles of 256 elements)
  MmqPlan pl{};
  pl.mblocks = ceil_div(M, rows);
  pl.ctiles = ceil_div(N, static_cast<int64_t>(mmq_nt(N)));
  pl.tiles = static_cast<int>(ceil_div(K / 32, parts));
  const int64_t want = ceil_div(std::min<int64_t>(std::max<int64_t>(target, 1), kMmqTargetBlocks), pl.mblocks * pl.ctiles);
  const int splits = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({want, pl.tiles, kMmqMaxSplits})));
  pl.tiles_per_split = static_cast<int>(ceil_div(pl.tiles, splits));
  pl.splits = static_cast<int>(ceil_div(pl.tiles, pl.tiles_per_split));
  return pl;
}

// Bytes of split-K partials for an M×K weight against N columns (0 without a split), rounded up
// so that the partials of the weights of one launch lie one after another (mmq_batch_partial_bytes).
// With `streamk`, at least the slots of a stream-K launch (every weight's share of a launch is at
// least that, so their sum is too).
// Sized for either row count (Tuning::mmq_rows), so that scratch does not depend on it.
inline size_t mmq_partial_bytes(int64_t M, int64_t K, int64_t N, bool streamk = false) {
  size_t b = 0;
  for (int rows : {64, 128}) {
    const MmqPlan pl = mmq_plan(M, K, N, rows);
    if (pl.splits > 1) b = std::max(b, static_cast<size_t>(pl.splits) * static_cast<size_t>(M * N) * 4);
  }
  if (streamk) b = std::max(b, static_cast<size_t>(kMmqSkMaxGrid * 2 * MmqShape<64>::kRows * mmq_nt(N)) * 4);
  return (b + 255) & ~static_cast<size_t>(255);
}

// Whether the MMQ kernel takes planes p: a supported dtype, one plane, 2..kMmqMaxCols columns, weights
// starting 16-byte aligned (a row's 16-byte chunks may then begin before the row, never before
// the weights) with even row strides, and 4-byte aligned output columns.
inline bool mmq_weight_aligned(const uint8_t* w, int64_t row_bytes) {
  return reinterpret_cast<uintptr_t>(w) % 16 == 0 && row_bytes % 2 == 0;
}
inline bool mmq_takes(const Planes& p) {
  return mmq_dtype(p.wtype) && !p.ids && p.n_planes == 1 && p.ncols >= 2 && p.ncols <= kMmqMaxCols && p.K % 32 == 0 &&
         mmq_weight_aligned(p.w, p.w_nb1) && p.o_nb1 % 4 == 0 && p.M > 0;
}

// Stream-K's G: the blocks the device holds at once (SMs × this kernel's blocks an SM), at most the
// units and kMmqSkMaxGrid. So the sums of a stream-K launch depend on the GPU's SM count (as
// llama.cpp's); split-K's do not.
template <class Q, int NT, int MINB, bool SK = false, int R = 64>
cudaError_t launch_mmq_nt(MmqArgs a, cudaStream_t s) {
  constexpr size_t smem = MmqTile<Q, NT, R>::kSmemBytes;
  static_assert(R == 128 || smem <= kMmqMaxSmem, "the MMQ stages must fit a block's shared memory on every target GPU");
  static_assert(smem <= kMmqMaxSmem128, "the 128-row MMQ stages must fit a block's shared memory on sm_90");
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(mmq_kernel<Q, NT, MINB, SK, R>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  if constexpr (!SK)
    return launch_k(mmq_kernel<Q, NT, MINB, false, R>, dim3(static_cast<unsigned>(a.first[a.n])), dim3(kMmqThreads), smem, s, a);
  int dev = 0, sms = 0, per_sm = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev); e != cudaSuccess) return e;
  if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mmq_kernel<Q, NT, MINB, SK>, kMmqThreads, smem);
      e != cudaSuccess)
    return e;
  const int64_t held = a.grid > 1 ? a.grid : static_cast<int64_t>(sms) * std::max(per_sm, 1);
  a.grid = std::max<int64_t>(1, std::min<int64_t>({a.units, held, kMmqSkMaxGrid}));
  if (cudaError_t e = launch_k(mmq_kernel<Q, NT, MINB, SK>, dim3(static_cast<unsigned>(a.grid)), dim3(kMmqThreads), smem, s, a);
      e != cudaSuccess)
    return e;
  const int64_t elems = a.first[a.n] * MmqShape<NT>::kRows * NT;
  return launch_k(mmq_streamk_fixup<NT>, dim3(static_cast<unsigned>(std::min<int64_t>(ceil_div(elems, 256), 65535))), dim3(256),
                  0, s, a);
}

template <class Q>
cudaError_t launch_mmq_q(const MmqArgs& a, bool three, int rows, cudaStream_t s) {  // (a: copied, launch_mmq_nt sets a.grid)
  const int64_t n = a.w[0].p.ncols;
  if (rows == 128) {
    if (n <= 16) return launch_mmq_nt<Q, 16, 2, false, 128>(a, s);
    return n <= 32 ? launch_mmq_nt<Q, 32, 2, false, 128>(a, s) : launch_mmq_nt<Q, 64, 2, false, 128>(a, s);
  }
  if (a.units > 0) {  // stream-K: built for two blocks an SM only
    if (n <= 8) return launch_mmq_nt<Q, 8, 2, true>(a, s);
    if (n <= 16) return launch_mmq_nt<Q, 16, 2, true>(a, s);
    if (n <= 32) return launch_mmq_nt<Q, 32, 2, true>(a, s);
    return launch_mmq_nt<Q, 64, 2, true>(a, s);
  }
  if (n <= 8) return three ? launch_mmq_nt<Q, 8, 3>(a, s) : launch_mmq_nt<Q, 8, 2>(a, s);
  if (n <= 16) return three ? launch_mmq_nt<Q, 16, 3>(a, s) : launch_mmq_nt<Q, 16, 2>(a, s);
  if (n <= 32) return launch_mmq_nt<Q, 32, 2>(a, s);
  return launch_mmq_nt<Q, 64, 2>(a, s);
}

// One weight type's launch_mmq (below).
template <class Q>
cudaError_t launch_mmq_t(const Planes* ps, int n, const uint8_t* act, float* partial, cudaStream_t s, int min_blocks,
                         int streamk, int rows_asked, int target) {
  // 128 rows where asked, at 16-64 columns, split-K only, and where the device holds their stages;
  // auto (0): for large products, where two blocks fit an SM of every target GPU (not Q8_0 and Q6_K
  // at 64 columns: Q8_0's measured slower with one block an SM, Q6_K's the same)
  const int64_t N = ps[0].ncols;
  const size_t need = N <= 16   ? MmqTile<Q, 16, 128>::kSmemBytes
                      : N <= 32 ? MmqTile<Q, 32, 128>::kSmemBytes
                                : MmqTile<Q, 64, 128>::kSmemBytes;
  if (rows_asked == 0) {
    int64_t elems = 0;
    for (int i = 0; i < n; i++) elems += ps[i].M * ps[i].K;
    rows_asked = N > 8 && elems >= kMmqRows128MinElems && need <= static_cast<size_t>(kMmqMaxSmem) ? 128 : 64;
  }
  int rows = streamk ? 64 : mmq_rows_for(ps[0].ncols, rows_asked);
  if (rows == 128 && need > static_cast<size_t>(kMmqMaxSmem)) {  // (every target holds kMmqMaxSmem)
    int dev = 0, optin = 0;
    if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
    if (cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev); e != cudaSuccess)
      return e;
    if (need > static_cast<size_t>(optin)) rows = 64;
  }
  MmqArgs a{};
  a.n = n;
  a.aq = reinterpret_cast<const int8_t*>(act);
  a.ads = reinterpret_cast<const float2*>(act + qs_bytes(ps[0].K, ps[0].ncols));
  size_t off = 0;
  int64_t blocks = 0;
  for (int i = 0; i < n; i++) {
    const Planes& p = ps[i];
    if (!mmq_takes(p) || p.wtype != ps[0].wtype || p.K != ps[0].K || p.ncols != ps[0].ncols) return cudaErrorInvalidValue;
    const MmqPlan pl = mmq_plan(p.M, p.K, p.ncols, rows, target);
    MmqOne& one = a.w[i];
    one.p = p;
    one.mblocks = pl.mblocks;
    one.ctiles = pl.ctiles;
    one.tiles_per_split = pl.tiles_per_split;
    one.splits = pl.splits;
    one.w_end = p.w + (p.M - 1) * p.w_nb1 + p.K / qblock_elems(p.wtype) * qblock_bytes(p.wtype);
    if (pl.splits > 1 && !streamk) {
      if (!partial) return cudaErrorInvalidValue;
      one.partial = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(partial) + off);
      off += mmq_partial_bytes(p.M, p.K, p.ncols);
    }
    if (streamk) one.splits = 1;  // (no split-K reduction after a stream-K launch)
    a.tiles = pl.tiles;
    a.first[i] = blocks;
    blocks += pl.mblocks * pl.ctiles * (streamk ? 1 : pl.splits);  // stream-K: output tiles
  }
  a.first[n] = blocks;
  if (blocks > 0x7fffffff) return cudaErrorInvalidConfiguration;
  if (streamk) {
    if (!partial) return cudaErrorInvalidValue;
    a.units = blocks * a.tiles;
    a.slots = partial;
    a.grid = streamk;  // (launch_mmq_nt: 1 = the device's, else a cap)
  }
  cudaError_t e = launch_mmq_q<Q>(a, min_blocks == 3, rows, s);
  for (int i = 0; i < n && e == cudaSuccess; i++) {
    const MmqOne& one = a.w[i];
    if (one.splits == 1) continue;
    const int64_t total = one.p.M * one.p.ncols;
    const unsigned rb = static_cast<unsigned>(std::min<int64_t>(ceil_div(total, 256), 65535));
    e = launch_k(mmq_reduce_kernel, dim3(rb), dim3(256), 0, s, one.p, static_cast<const float*>(one.partial), one.splits);
  }
  return e;
}

// Weights ps[0..n) (1 <= n <= kMmqMaxBatch; each mmq_takes, one dtype, K and column count) against
// the Q8A region `act` filled for their columns, in one launch; `partial`: scratch of the sum of
// their mmq_partial_bytes, weight i's partials after those of weights 0..i-1. `min_blocks` 3: the
// kernels of 8 and 16 columns built to fit three blocks an SM (Tuning::mmq_blocks). `streamk`: the
// stream-K decomposition (Tuning::mmq_streamk: 1, G from the device; 2..kMmqSkMaxGrid, G that many
// at most; `partial` then holds its slots). `rows` 128: blocks of 128 weight rows at 16-64 columns
// (Tuning::mmq_rows); 0: 128 at 16-64 columns for large products (kMmqRows128MinElems) where they fit, else 64.
// `target`: split-K's blocks a launch (mmq_plan; Tuning::mmq_target_blocks).
inline cudaError_t launch_mmq(const Planes* ps, int n, const uint8_t* act, float* partial, cudaStream_t s,
                              int min_blocks = 2, int streamk = 0, int rows = 0, int target = kMmqTargetBlocks) {
  if (n < 1 || n > kMmqMaxBatch) return cudaErrorInvalidValue;
  switch (ps[0].wtype) {
    case DType::Q4_0: return launch_mmq_t<MQ4_0>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    case DType::Q4_1: return launch_mmq_t<MQ4_1>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    case DType::Q5_0: return launch_mmq_t<MQ5_0>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    case DType::Q5_1: return launch_mmq_t<MQ5_1>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    case DType::Q8_0: return launch_mmq_t<MQ8_0>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    case DType::Q3_K: return launch_mmq_t<MQ3_K>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    case DType::Q4_K: return launch_mmq_t<MQ45_K<false>>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    case DType::Q5_K: return launch_mmq_t<MQ45_K<true>>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    case DType::Q6_K: return launch_mmq_t<MQ6_K>(ps, n, act, partial, s, min_blocks, streamk, rows, target);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace minfer::cuda::mm
