// Tensor-core GEMM for prefill (gemm_tc.h): out[m + n*out_col] = Σ_k W(k, m) · X[k + n*x_col].
//
// Design
// ------
// 1. convert_x: X (F32, K × N) becomes F16 in scratch, column-major [Npad][Kpad] (K contiguous,
//    Kpad = K rounded up to 64, Npad = N rounded up to 128, the padding zero). Each column is
//    scaled by a power of two, 2^-e, chosen so that its largest magnitude stays below 2^15: F16
//    cannot hold |x| ≥ 65504 and LLM activations (FFN-down inputs above all) can get there. The
//    scale is exact (a power of two) and undone in the GEMM's epilogue (out column n × 2^e); for
//    ordinary columns e = 0. F16 keeps 11 significant bits, enough for every tolerance of the
//    conformance suite (F32 weights: NMSE ~4e-8 against 1e-6), where BF16's 8 would not be.
// 2. gemm_kernel<dtype, BN>: block tile 128 (M, weight rows) × BN (N, tokens; 128 or 64) × 64 (K),
//    256 threads = 8 warps laid out 2×4 (BN 128: warp tile 64×32) or 4×2 (BN 64: 32×32); each warp
//    runs mma.sync.m16n8k16 (f16 × f16 → f32) from fragments read with ldmatrix.x4.
//    Shared memory: two stages of A (128 × 64 f16) and B (BN × 64 f16), rows of 128 bytes with
//    their 16-byte chunks XOR-swizzled by (row & 7) so that ldmatrix reads are conflict-free.
//    - B (activations) comes from the F16 scratch with cp.async (16 bytes a thread a copy).
//    - A (weights) is dequantized on the fly: thread t owns weight row t/2 of the tile and 32 of its
//      64 k's. It loads the raw block bytes of the next k-tile into registers before the current
//      tile's MMAs and decodes them to F16 into the other stage after them (register double
//      buffering; the global loads' latency is hidden behind the MMAs). Q4_0's and Q8_0's 2-byte
//      aligned blocks keep their 8-byte loads raw until then (loads.cuh ld_block2_raw): shifted
//      into words at load time, the shifts waited for the loads before the MMAs and Q8_0's loader
//      spilled registers (10-21% slower). Q4_K, Q6_K, Q4_0, Q8_0, F16, BF16 and F32 have
//      specialised decoders (wide loads, nibbles turned into halves with the 0x6400 exponent
//      trick, scales applied with half2 FMAs); every other dtype of quants.cuh goes through its
//      generic dequant32 (F32 → F16).
//    - One __syncthreads per k-tile.
//    - Epilogue: f32 accumulators × the column scale, stored with M/N bounds checks.
// 3. Split-K when the tile grid is too small for the GPU (M = 512 K/V projections, K = 18944 FFN
//    down at N = 512): blockIdx.z takes a range of k-tiles and writes its partial product to scratch;
//    reduce_splits adds them in a fixed order (deterministic, no atomics) into out.
//    plan() chooses BN and the split count from a small cost model of waves on the device's SMs.
//
// Measured on an H200 (gemm_tc_selftest.cuh bench, N = 512, TFLOP/s, X conversion included,
// 2026-12-04; F16 weights measured 78-265 on these shapes in 2026-11):
//   M×K            Q4_K   Q6_K   Q4_0   Q8_0
//   3584×3584       168    131    174    157
//   512×3584         80     71     81     77   (8 splits)
//   18944×3584      231    175    239    211
//   3584×18944      206    171    210    191   (7 splits)
// Q6_K and Q8_0 pay for their 2-byte-aligned blocks (more, narrower loads and more decode work).
//
// Precision: weights are rounded to F16 after decoding (Q4_K's d·sc·q − dmin·m and Q6_K's d·sc·q
// computed with half2 FMAs: a relative error ~1e-3 of one element, NMSE ~1e-7, far below the 5e-4
// tolerance); products accumulate in f32.
//
// Scratch: Npad·Kpad·2 bytes (F16 X) + Npad·4 (column scales) + splits·M·N·4 (partials, split-K
// only), each part 256-byte aligned. Requirements checked by gemm_tc: F16/BF16/F32 and Q4_K
// weights 16-byte aligned (pointer and row stride), the others 2-byte aligned; a misaligned weight
// returns cudaErrorMisalignedAddress.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../cuda_util.cuh"
#include "../gemm_tc.h"
#include "../loads.cuh"
#include "../mma.cuh"
#include "../quants.cuh"

namespace minfer::cuda {
namespace {

using program::DType;

constexpr int kBM = 128;       // weight rows per block
constexpr int kBK = 64;        // k per tile (128-byte shared rows)
constexpr int kThreads = 256;  // 8 warps
constexpr int kNPad = 128;     // N padding of the F16 activations
constexpr float kXLimit = 32768.0f;

// ---- PTX wrappers ---------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}

// Offset (in halves) of 16-byte chunk c (0..7) of shared row r: chunks XOR-swizzled by r & 7.
__device__ __forceinline__ int swz(int r, int c) { return r * kBK + ((c ^ (r & 7)) << 3); }

__device__ __forceinline__ void st_chunk(__half* s, int r, int c, uint32_t a, uint32_t b, uint32_t cc, uint32_t d) {
  *reinterpret_cast<uint4*>(s + swz(r, c)) = make_uint4(a, b, cc, d);
}

__device__ __forceinline__ uint32_t h2u(__half2 h) { return *reinterpret_cast<uint32_t*>(&h); }
__device__ __forceinline__ __half2 u2h(uint32_t u) { return *reinterpret_cast<__half2*>(&u); }
__device__ __forceinline__ uint32_t ld16(const uint8_t* p) { return __ldg(reinterpret_cast<const unsigned short*>(p)); }
// 16 bytes from a 2-byte aligned address as 4 little-endian words (loads.cuh: three 8-byte loads,
// the same for every address).
__device__ __forceinline__ uint4 ld16u(const uint8_t* p) {
  uint32_t w[4];
  ld_words2(p, w);
  return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ uint4 ldg128(const uint8_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
__device__ __forceinline__ uint32_t word(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// Bytes b0, b1 of w (selector 0x4140) or b2, b3 (0x4342) as the low bytes of two halves whose high
// byte is `hi` (0x64: 1024 + byte).
__device__ __forceinline__ uint32_t spread(uint32_t w, uint32_t hi, uint32_t sel) { return __byte_perm(w, hi, sel); }

// ---- weight loaders ---------------------------------------------------------------------------------
// Thread (r, h) of a k-tile starting at k0 (a multiple of 64) loads raw bytes for its 32 elements in
// load() and decodes them into shared row r in store(). Layout within the tile's 64 k's: the
// K-quants give thread h positions 16h..16h+15 and 32+16h..32+16h+15 (both nibbles of one byte
// range); the 32-element types and plain types give it positions 32h..32h+31.

template <DType T>
struct Loader;

template <>
struct Loader<DType::Q4_K> {
  uint4 hdr, qs;
  __device__ __forceinline__ void load(const uint8_t* row, int64_t k0, int h, int64_t) {
    const uint8_t* s = row + (k0 >> 8) * 144;
    const int i = static_cast<int>((k0 >> 6) & 3);
    hdr = ldg128(s);
    qs = ldg128(s + 16 + 32 * i + 16 * h);
  }
  __device__ __forceinline__ void store(__half* sA, int r, int h, int64_t k0, int64_t) const {
    const int i = static_cast<int>((k0 >> 6) & 3);
    const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(hdr.x & 0xffff)));
    const float dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(hdr.x >> 16)));
    // scale/min bytes 0..11 are header words y, z, w; sub-blocks 2i (low nibbles), 2i+1 (high).
    int sc[2], mn[2];
#pragma unroll
    for (int u = 0; u < 2; u++) {
      const int j = 2 * i + u;
      if (j < 4) {
        sc[u] = (hdr.y >> (8 * j)) & 63;
        mn[u] = (hdr.z >> (8 * j)) & 63;
      } else {
        const int jj = j - 4;
        const uint32_t bw = (hdr.w >> (8 * jj)) & 255, by = (hdr.y >> (8 * jj)) & 255, bz = (hdr.z >> (8 * jj)) & 255;
        sc[u] = static_cast<int>((bw & 15) | ((by >> 6) << 4));
        mn[u] = static_cast<int>((bw >> 4) | ((bz >> 6) << 4));
      }
    }
    const __half2 d0 = __float2half2_rn(d * static_cast<float>(sc[0]));
    const __half2 m0 = __float2half2_rn(-(dmin * static_cast<float>(mn[0])));
    const __half2 d1 = __float2half2_rn(d * static_cast<float>(sc[1]));
    const __half2 m1 = __float2half2_rn(-(dmin * static_cast<float>(mn[1])));
    const __half2 k1024 = __float2half2_rn(1024.0f);
    uint32_t lo[8], hi[8];
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const uint32_t w = word(qs, q);
#pragma unroll
      for (int p = 0; p < 2; p++) {
        const uint32_t t = spread(w, 0, p ? 0x4342 : 0x4140);
        const __half2 l = __hsub2(u2h((t & 0x000f000fu) | 0x64006400u), k1024);
        const __half2 g = __hsub2(u2h(((t >> 4) & 0x000f000fu) | 0x64006400u), k1024);
        lo[2 * q + p] = h2u(__hfma2(l, d0, m0));
        hi[2 * q + p] = h2u(__hfma2(g, d1, m1));
      }
    }
    st_chunk(sA, r, 2 * h, lo[0], lo[1], lo[2], lo[3]);
    st_chunk(sA, r, 2 * h + 1, lo[4], lo[5], lo[6], lo[7]);
    st_chunk(sA, r, 4 + 2 * h, hi[0], hi[1], hi[2], hi[3]);
    st_chunk(sA, r, 5 + 2 * h, hi[4], hi[5], hi[6], hi[7]);
  }
};

template <>
struct Loader<DType::Q6_K> {
  // (shifted into place at load time: deferring the shifts to store(), as Q4_0's and Q8_0's loaders
  // do, measured 4% slower, 2026-12-04)
  uint4 a, b, c;
  int sc0, sc1;
  uint32_t d;
  __device__ __forceinline__ void load(const uint8_t* row, int64_t k0, int h, int64_t) {
    const uint8_t* s = row + (k0 >> 8) * 210;
    const int i = static_cast<int>((k0 >> 6) & 3), n = i >> 1, up = i & 1;
    a = ld16u(s + 64 * n + 16 * h);
    b = ld16u(s + 64 * n + 32 + 16 * h);
    c = ld16u(s + 128 + 32 * n + 16 * h);
    // scales of quadrants 2·up (from a) and 2·up + 1 (from b), for l = 16h..16h+15
    sc0 = static_cast<int8_t>(__ldg(s + 192 + 8 * n + 4 * up + h));
    sc1 = static_cast<int8_t>(__ldg(s + 192 + 8 * n + 4 * up + 2 + h));
    d = ld16(s + 208);
  }
  __device__ __forceinline__ void store(__half* sA, int r, int h, int64_t k0, int64_t) const {
    const int up = static_cast<int>((k0 >> 6) & 1);
    const float df = __half2float(__ushort_as_half(static_cast<unsigned short>(d)));
    const __half2 ds0 = __float2half2_rn(df * static_cast<float>(sc0));
    const __half2 ds1 = __float2half2_rn(df * static_cast<float>(sc1));
    const __half2 k1056 = __float2half2_rn(1056.0f);
    const int nsh = 4 * up, hs0 = 4 * up, hs1 = 4 * up + 2;
    uint32_t va[8], vb[8];
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const uint32_t wc = word(c, q);
      const uint32_t qa = ((word(a, q) >> nsh) & 0x0f0f0f0fu) | (((wc >> hs0) & 0x03030303u) << 4);
      const uint32_t qb = ((word(b, q) >> nsh) & 0x0f0f0f0fu) | (((wc >> hs1) & 0x03030303u) << 4);
#pragma unroll
      for (int p = 0; p < 2; p++) {
        const uint32_t sel = p ? 0x4342 : 0x4140;
        va[2 * q + p] = h2u(__hmul2(__hsub2(u2h(spread(qa, 0x64646464u, sel)), k1056), ds0));
        vb[2 * q + p] = h2u(__hmul2(__hsub2(u2h(spread(qb, 0x64646464u, sel)), k1056), ds1));
      }
    }
    st_chunk(sA, r, 2 * h, va[0], va[1], va[2], va[3]);
    st_chunk(sA, r, 2 * h + 1, va[4], va[5], va[6], va[7]);
    st_chunk(sA, r, 4 + 2 * h, vb[0], vb[1], vb[2], vb[3]);
    st_chunk(sA, r, 5 + 2 * h, vb[4], vb[5], vb[6], vb[7]);
  }
};

template <>
struct Loader<DType::Q4_0> {
  // The block's raw 8-byte words, shifted into place in store() (after the k-tile's MMAs: the
  // loads land meanwhile). The two threads of a row read blocks 2 bytes apart in alignment: the
  // same loads for both (loads.cuh), not a branch on the address.
  Block2Raw<4> raw;
  __device__ __forceinline__ void load(const uint8_t* row, int64_t k0, int h, int64_t K) {
    if (k0 + 32 * h >= K) return;
    ld_block2_raw(row + ((k0 >> 5) + h) * 18, raw);
  }
  __device__ __forceinline__ void store(__half* sA, int r, int h, int64_t k0, int64_t K) const {
    if (k0 + 32 * h >= K) {
      for (int c = 0; c < 4; c++) st_chunk(sA, r, 4 * h + c, 0, 0, 0, 0);
      return;
    }
    uint32_t d, qs[4];
    block2_words(raw, &d, qs);
    const __half2 dd = __half2half2(__ushort_as_half(static_cast<unsigned short>(d)));
    const __half2 k1032 = __float2half2_rn(1032.0f);
    uint32_t lo[8], hi[8];
#pragma unroll
    for (int q = 0; q < 4; q++) {
#pragma unroll
      for (int p = 0; p < 2; p++) {
        const uint32_t t = spread(qs[q], 0, p ? 0x4342 : 0x4140);
        lo[2 * q + p] = h2u(__hmul2(__hsub2(u2h((t & 0x000f000fu) | 0x64006400u), k1032), dd));
        hi[2 * q + p] = h2u(__hmul2(__hsub2(u2h(((t >> 4) & 0x000f000fu) | 0x64006400u), k1032), dd));
      }
    }
    st_chunk(sA, r, 4 * h + 0, lo[0], lo[1], lo[2], lo[3]);
    st_chunk(sA, r, 4 * h + 1, lo[4], lo[5], lo[6], lo[7]);
    st_chunk(sA, r, 4 * h + 2, hi[0], hi[1], hi[2], hi[3]);
    st_chunk(sA, r, 4 * h + 3, hi[4], hi[5], hi[6], hi[7]);
  }
};

template <>
struct Loader<DType::Q8_0> {
  Block2Raw<8> raw;  // (as Q4_0's)
  __device__ __forceinline__ void load(const uint8_t* row, int64_t k0, int h, int64_t K) {
    if (k0 + 32 * h >= K) return;
    ld_block2_raw(row + ((k0 >> 5) + h) * 34, raw);
  }
  __device__ __forceinline__ void store(__half* sA, int r, int h, int64_t k0, int64_t K) const {
    if (k0 + 32 * h >= K) {
      for (int c = 0; c < 4; c++) st_chunk(sA, r, 4 * h + c, 0, 0, 0, 0);
      return;
    }
    uint32_t d, qs[8];
    block2_words(raw, &d, qs);
    const __half2 dd = __half2half2(__ushort_as_half(static_cast<unsigned short>(d)));
    const __half2 k1152 = __float2half2_rn(1152.0f);
    uint32_t v[16];
#pragma unroll
    for (int q = 0; q < 8; q++) {
      const uint32_t w = qs[q] ^ 0x80808080u;  // int8 + 128 as a byte
#pragma unroll
      for (int p = 0; p < 2; p++)
        v[2 * q + p] = h2u(__hmul2(__hsub2(u2h(spread(w, 0x64646464u, p ? 0x4342 : 0x4140)), k1152), dd));
    }
#pragma unroll
    for (int c = 0; c < 4; c++) st_chunk(sA, r, 4 * h + c, v[4 * c], v[4 * c + 1], v[4 * c + 2], v[4 * c + 3]);
  }
};

template <>
struct Loader<DType::F16> {
  uint4 v[4];
  __device__ __forceinline__ void load(const uint8_t* row, int64_t k0, int h, int64_t K) {
    if (k0 + 32 * h >= K) return;
    const uint8_t* s = row + (k0 + 32 * h) * 2;
#pragma unroll
    for (int c = 0; c < 4; c++) v[c] = ldg128(s + 16 * c);
  }
  __device__ __forceinline__ void store(__half* sA, int r, int h, int64_t k0, int64_t K) const {
    const bool ok = k0 + 32 * h < K;
#pragma unroll
    for (int c = 0; c < 4; c++) {
      const uint4 x = ok ? v[c] : make_uint4(0, 0, 0, 0);
      st_chunk(sA, r, 4 * h + c, x.x, x.y, x.z, x.w);
    }
  }
};

__device__ __forceinline__ uint32_t bf2_to_h2(uint32_t w) {
  return h2u(__floats2half2_rn(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u)));
}

template <>
struct Loader<DType::BF16> {
  uint4 v[4];
  __device__ __forceinline__ void load(const uint8_t* row, int64_t k0, int h, int64_t K) {
    if (k0 + 32 * h >= K) return;
    const uint8_t* s = row + (k0 + 32 * h) * 2;
#pragma unroll
    for (int c = 0; c < 4; c++) v[c] = ldg128(s + 16 * c);
  }
  __device__ __forceinline__ void store(__half* sA, int r, int h, int64_t k0, int64_t K) const {
    const bool ok = k0 + 32 * h < K;
#pragma unroll
    for (int c = 0; c < 4; c++) {
      const uint4 x = ok ? v[c] : make_uint4(0, 0, 0, 0);
      st_chunk(sA, r, 4 * h + c, bf2_to_h2(x.x), bf2_to_h2(x.y), bf2_to_h2(x.z), bf2_to_h2(x.w));
    }
  }
};

template <>
struct Loader<DType::F32> {
  float4 v[8];
  __device__ __forceinline__ void load(const uint8_t* row, int64_t k0, int h, int64_t K) {
    if (k0 + 32 * h >= K) return;
    const float4* s = reinterpret_cast<const float4*>(row + (k0 + 32 * h) * 4);
#pragma unroll
    for (int c = 0; c < 8; c++) v[c] = __ldg(s + c);
  }
  __device__ __forceinline__ void store(__half* sA, int r, int h, int64_t k0, int64_t K) const {
    const bool ok = k0 + 32 * h < K;
#pragma unroll
    for (int c = 0; c < 4; c++) {
      const float4 x = ok ? v[2 * c] : make_float4(0, 0, 0, 0), y = ok ? v[2 * c + 1] : make_float4(0, 0, 0, 0);
      st_chunk(sA, r, 4 * h + c, h2u(__floats2half2_rn(x.x, x.y)), h2u(__floats2half2_rn(x.z, x.w)),
               h2u(__floats2half2_rn(y.x, y.y)), h2u(__floats2half2_rn(y.z, y.w)));
    }
  }
};

// Every other dtype: quants.cuh's dequant32 at store time (no prefetch; correct, not fast).
constexpr DType kGeneric = DType::Q8_K;  // a tag (Q8_K is never a weight dtype here)
template <>
struct Loader<kGeneric> {
  DType t;
  const uint8_t* row;
  __device__ __forceinline__ void load(const uint8_t* r, int64_t, int, int64_t) { row = r; }
  __device__ __forceinline__ void store(__half* sA, int r, int h, int64_t k0, int64_t K) const {
    const int64_t i0 = k0 + 32 * h;
    if (i0 >= K) {
      for (int c = 0; c < 4; c++) st_chunk(sA, r, 4 * h + c, 0, 0, 0, 0);
      return;
    }
    float f[32];
    dequant32(t, row, i0, f);
#pragma unroll
    for (int c = 0; c < 4; c++)
      st_chunk(sA, r, 4 * h + c, h2u(__floats2half2_rn(f[8 * c], f[8 * c + 1])),
               h2u(__floats2half2_rn(f[8 * c + 2], f[8 * c + 3])), h2u(__floats2half2_rn(f[8 * c + 4], f[8 * c + 5])),
               h2u(__floats2half2_rn(f[8 * c + 6], f[8 * c + 7])));
  }
};

// ---- the GEMM -----------------------------------------------------------------------------------------

struct KArgs {
  const uint8_t* w;
  int64_t w_row_bytes;
  const __half* xh;     // [Npad][Kpad]
  int64_t kpad;
  const float* cscale;  // [Npad] column scales (2^e)
  float* out;           // split z writes out + z * split_stride
  int64_t out_col;
  int64_t split_stride;
  int M, N;
  int64_t K;
  int nkt;     // k-tiles (ceil(K / 64))
  int splits;  // gridDim.z
  DType wtype;  // for the generic loader
};

template <int BN, int STAGES = 2>
constexpr int smem_bytes() {
  return STAGES * (kBM + BN) * kBK * 2;
}

// STAGES 2: the next k-tile's B copy and A loads are issued before this tile's MMAs and must land
// by their end. STAGES 3 (Tuning::gemm_stages): B is copied two tiles ahead, and A's registers are
// loaded two tiles ahead too (tile t + 1's, loaded a tile earlier, are stored into their stage at
// the top of tile t, then tile t + 2's loads go out), so each load has a whole tile of MMAs to land.
template <DType T, int BN, int STAGES = 2>
__global__ void __launch_bounds__(kThreads, 2) gemm_kernel(const KArgs p) {
  static_assert(STAGES == 2 || STAGES == 3, "two or three stages");
  constexpr int WN_WARPS = BN == 128 ? 4 : 2;
  constexpr int WM_WARPS = 8 / WN_WARPS;
  constexpr int WM = kBM / WM_WARPS;  // 64 or 32
  constexpr int MT = WM / 16;         // m16 tiles per warp
  constexpr int NT = 4;               // n8 tiles per warp (warp tile is 32 wide)
  static_assert(BN / WN_WARPS == 32, "warp tile 32 wide");
  constexpr int B_COPIES = BN * 8 / kThreads;  // 16-byte copies per thread per B tile

  extern __shared__ __align__(128) uint8_t smem[];
  __half* sA = reinterpret_cast<__half*>(smem);  // [STAGES][kBM * kBK]
  __half* sB = sA + STAGES * kBM * kBK;           // [STAGES][BN * kBK]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WM_WARPS, wn = warp / WM_WARPS;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * BN;
  const int z = blockIdx.z;
  const int kt0 = static_cast<int>(static_cast<int64_t>(z) * p.nkt / p.splits);
  const int kt1 = static_cast<int>(static_cast<int64_t>(z + 1) * p.nkt / p.splits);

  // Weight row of this thread (rows past M read row M-1; their results are never stored).
  const int ar = tid >> 1, ah = tid & 1;
  const uint8_t* arow = p.w + static_cast<int64_t>(min(m0 + ar, p.M - 1)) * p.w_row_bytes;
  Loader<T> ld;
  if constexpr (T == kGeneric) ld.t = p.wtype;

  const __half* xbase = p.xh + static_cast<int64_t>(n0) * p.kpad;
  auto load_b = [&](int kt, int stage) {
    __half* dst = sB + stage * BN * kBK;
#pragma unroll
    for (int i = 0; i < B_COPIES; i++) {
      const int idx = tid + i * kThreads, n = idx >> 3, c = idx & 7;
      cp_async16(smem_addr(dst + swz(n, c)), xbase + static_cast<int64_t>(n) * p.kpad + static_cast<int64_t>(kt) * kBK + c * 8);
    }
    cp_async_commit();
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; i++)
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

  // One k-tile's MMAs from stage `stage`.
  auto mmas = [&](int stage) {
    const __half* a_s = sA + stage * kBM * kBK;
    const __half* b_s = sB + stage * BN * kBK;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; kk++) {
      uint32_t af[MT][4], bf[NT][2];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        const int r = wm * WM + mt * 16 + (lane & 15);
        ldmatrix_x4(smem_addr(a_s + swz(r, kk * 2 + (lane >> 4))), af[mt][0], af[mt][1], af[mt][2], af[mt][3]);
      }
#pragma unroll
      for (int np = 0; np < NT / 2; np++) {
        const int n = wn * 32 + np * 16 + (lane & 7) + ((lane >> 4) << 3);
        ldmatrix_x4(smem_addr(b_s + swz(n, kk * 2 + ((lane >> 3) & 1))), bf[2 * np][0], bf[2 * np][1], bf[2 * np + 1][0],
                    bf[2 * np + 1][1]);
      }
#pragma unroll
      for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) mma_16816(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
    }
  };

  if constexpr (STAGES == 3) {
    // Stage of tile t: (t - kt0) % 3, for A and B alike.
    if (kt0 < kt1) {
      load_b(kt0, 0);
      if (kt0 + 1 < kt1) load_b(kt0 + 1, 1);
      else cp_async_commit();  // (an empty group keeps the wait counts below)
      ld.load(arow, static_cast<int64_t>(kt0) * kBK, ah, p.K);
      ld.store(sA, ar, ah, static_cast<int64_t>(kt0) * kBK, p.K);
      if (kt0 + 1 < kt1) ld.load(arow, static_cast<int64_t>(kt0 + 1) * kBK, ah, p.K);
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // tile kt0's B
      __syncthreads();
    }
    int stage = 0;
    for (int kt = kt0; kt < kt1; kt++) {
      const int s1 = stage == 2 ? 0 : stage + 1, s2 = s1 == 2 ? 0 : s1 + 1;
      if (kt + 2 < kt1) load_b(kt + 2, s2);
      else cp_async_commit();
      if (kt + 1 < kt1) ld.store(sA + s1 * kBM * kBK, ar, ah, static_cast<int64_t>(kt + 1) * kBK, p.K);
      if (kt + 2 < kt1) ld.load(arow, static_cast<int64_t>(kt + 2) * kBK, ah, p.K);
      mmas(stage);
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // tile kt + 1's B (kt + 2's may fly)
      __syncthreads();
      stage = s1;
    }
  } else {
    if (kt0 < kt1) {
      load_b(kt0, 0);
      ld.load(arow, static_cast<int64_t>(kt0) * kBK, ah, p.K);
      ld.store(sA, ar, ah, static_cast<int64_t>(kt0) * kBK, p.K);
      cp_async_wait_all();
      __syncthreads();
    }

    for (int kt = kt0; kt < kt1; kt++) {
      const int stage = (kt - kt0) & 1;
      const bool next = kt + 1 < kt1;
      const int64_t knext = static_cast<int64_t>(kt + 1) * kBK;
      if (next) {
        load_b(kt + 1, stage ^ 1);
        ld.load(arow, knext, ah, p.K);
      }
      mmas(stage);
      if (next) {
        ld.store(sA + (stage ^ 1) * kBM * kBK, ar, ah, knext, p.K);
        cp_async_wait_all();
      }
      __syncthreads();
    }
  }

  // Epilogue: c0,c1 at (row g, cols 2q, 2q+1), c2,c3 at (row g+8, same cols); g = lane/4, q = lane%4.
  float* out = p.out + static_cast<int64_t>(z) * p.split_stride;
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const int n = n0 + wn * 32 + nt * 8 + (lane & 3) * 2 + e;
      if (n >= p.N) continue;
      const float s = p.cscale[n];
      float* col = out + static_cast<int64_t>(n) * p.out_col;
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        const int m = m0 + wm * WM + mt * 16 + (lane >> 2);
        if (m < p.M) col[m] = acc[mt][nt][e] * s;
        if (m + 8 < p.M) col[m + 8] = acc[mt][nt][2 + e] * s;
      }
    }
  }
}

// One block per padded column: the column's power-of-two scale, then X as F16 (zero padding).
__global__ void __launch_bounds__(256) convert_x(const float* __restrict__ x, int64_t x_col, int N, int64_t K,
                                                 int64_t kpad, __half* __restrict__ xh, float* __restrict__ cscale) {
  __shared__ float red[32];
  const int n = blockIdx.x;
  __half2* dst = reinterpret_cast<__half2*>(xh + static_cast<int64_t>(n) * kpad);
  const int64_t pairs = kpad / 2;
  if (n >= N) {
    for (int64_t i = threadIdx.x; i < pairs; i += blockDim.x) dst[i] = __float2half2_rn(0.0f);
    if (threadIdx.x == 0) cscale[n] = 1.0f;
    return;
  }
  const float* col = x + static_cast<int64_t>(n) * x_col;
  float amax = 0.0f;
  for (int64_t k = threadIdx.x; k < K; k += blockDim.x) amax = fmaxf(amax, fabsf(col[k]));
  amax = block_max(amax, red);
  // Scale 2^-e with amax · 2^-e < 2^15 (e = 0 for ordinary columns; inf/NaN left alone).
  int e = 0;
  if (amax >= kXLimit && amax <= 3.0e38f) e = ilogbf(amax) - 14;
  const float down = ldexpf(1.0f, -e);
  for (int64_t i = threadIdx.x; i < pairs; i += blockDim.x) {
    const int64_t k = 2 * i;
    const float a = k < K ? col[k] * down : 0.0f;
    const float b = k + 1 < K ? col[k + 1] * down : 0.0f;
    dst[i] = __floats2half2_rn(a, b);
  }
  if (threadIdx.x == 0) cscale[n] = ldexpf(1.0f, e);
}

// out[m + n*out_col] = Σ_z part[z][m + n*M], z in order.
__global__ void __launch_bounds__(256) reduce_splits(const float* __restrict__ part, int splits, int64_t M, int64_t N,
                                                     float* __restrict__ out, int64_t out_col) {
  const int64_t total = M * N, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    float s = 0.0f;
    for (int z = 0; z < splits; z++) s += part[z * total + i];
    const int64_t n = i / M, m = i - n * M;
    out[m + n * out_col] = s;
  }
}

// ---- planning ---------------------------------------------------------------------------------------------

struct Plan {
  int bn;
  int splits;
  int64_t npad, kpad, nkt;
  size_t x_off, cs_off, part_off, total;
};

size_t align256(size_t v) { return (v + 255) & ~static_cast<size_t>(255); }

int device_sms() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 132;
  static int cached[64] = {0};
  if (dev >= 0 && dev < 64 && cached[dev] > 0) return cached[dev];
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0) sms = 132;
  if (dev >= 0 && dev < 64) cached[dev] = sms;
  return sms;
}

// Cost model (µs, fitted to H200 measurements of the Q4_K kernel at N = 512): a 128×128 block
// takes ~1.39 µs per k-tile alone on an SM and ~2.2 µs with a second block beside it (two fit per
// SM); blocks run in rounds of 2·SMs, and a last partial round of at most one block per SM runs at
// the lone rate. A 64-wide tile costs 0.75 of a 128-wide one per k-tile. Split-K adds the
// reduction: s partials read and the output written at ~2.5 TB/s, plus ~8 µs of launch and tail.
// (Measured: 3584×3584×512 best unsplit, 512×3584×512 best at 8 splits, 3584×18944×512 at 8.)
int g_force_bn = 0, g_force_splits = 0;  // overrides for gemm_tc_selftest.cuh's sweeps (0: model)

Plan make_plan(int64_t M, int64_t N, int64_t K) {
  Plan p{};
  p.kpad = ceil_div(K, kBK) * kBK;
  p.npad = ceil_div(N, kNPad) * kNPad;
  p.nkt = p.kpad / kBK;
  const int64_t sms = device_sms();
  const int64_t mt = ceil_div(M, kBM);
  double best = 1e300;
  for (int bn : {128, 64}) {
    const int64_t tiles = mt * ceil_div(N, bn);
    const double tile_cost = bn == 128 ? 1.0 : 0.75;
    for (int s = 1; s <= 16; s++) {
      if (s > 1 && (p.nkt / s < 4 || static_cast<double>(s) * M * N * 4 > 512.0 * 1024 * 1024)) break;
      const int64_t blocks = tiles * s, rounds = blocks / (2 * sms), rest = blocks % (2 * sms);
      const double per_kt = 2.2 * static_cast<double>(rounds) + (rest == 0 ? 0.0 : rest <= sms ? 1.39 : 2.2);
      double cost = per_kt * static_cast<double>(ceil_div(p.nkt, s)) * tile_cost;
      if (s > 1) cost += (s + 1.0) * static_cast<double>(M) * static_cast<double>(N) * 4.0 / 2.5e6 + 8.0;
      if (cost < best * 0.98) {  // prefer the simpler plan on near ties
        best = cost;
        p.bn = bn;
        p.splits = s;
      }
    }
  }
  if (g_force_bn) p.bn = g_force_bn;
  if (g_force_splits) p.splits = static_cast<int>(std::min<int64_t>(g_force_splits, p.nkt));
  p.x_off = 0;
  p.cs_off = align256(static_cast<size_t>(p.npad * p.kpad * 2));
  p.part_off = p.cs_off + align256(static_cast<size_t>(p.npad * 4));
  p.total = p.part_off + (p.splits > 1 ? align256(static_cast<size_t>(p.splits) * M * N * 4) : 0);
  return p;
}

bool specialised(DType t) {
  switch (t) {
    case DType::Q4_K:
    case DType::Q6_K:
    case DType::Q4_0:
    case DType::Q8_0:
    case DType::F16:
    case DType::BF16:
    case DType::F32: return true;
    default: return false;
  }
}

// Alignment the specialised loader of t needs of the weight pointer and row stride.
int weight_align(DType t) {
  switch (t) {
    case DType::Q4_K:
    case DType::F16:
    case DType::BF16:
    case DType::F32: return 16;
    case DType::Q6_K:
    case DType::Q4_0:
    case DType::Q8_0: return 2;
    default: return 1;
  }
}

template <DType T, int BN, int STAGES>
cudaError_t launch_t(const KArgs& k, dim3 grid, cudaStream_t stream) {
  static bool configured[64] = {};  // the >48 KiB shared-memory opt-in, once per device
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  if (dev < 0 || dev >= 64 || !configured[dev]) {
    e = cudaFuncSetAttribute(gemm_kernel<T, BN, STAGES>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem_bytes<BN, STAGES>());
    if (e != cudaSuccess) return e;
    if (dev >= 0 && dev < 64) configured[dev] = true;
  }
  gemm_kernel<T, BN, STAGES><<<grid, kThreads, smem_bytes<BN, STAGES>(), stream>>>(k);
  return cudaGetLastError();
}

template <int BN, int STAGES>
cudaError_t launch_bn(DType t, const KArgs& k, dim3 grid, cudaStream_t stream) {
  switch (t) {
    case DType::Q4_K: return launch_t<DType::Q4_K, BN, STAGES>(k, grid, stream);
    case DType::Q6_K: return launch_t<DType::Q6_K, BN, STAGES>(k, grid, stream);
    case DType::Q4_0: return launch_t<DType::Q4_0, BN, STAGES>(k, grid, stream);
    case DType::Q8_0: return launch_t<DType::Q8_0, BN, STAGES>(k, grid, stream);
    case DType::F16: return launch_t<DType::F16, BN, STAGES>(k, grid, stream);
    case DType::BF16: return launch_t<DType::BF16, BN, STAGES>(k, grid, stream);
    case DType::F32: return launch_t<DType::F32, BN, STAGES>(k, grid, stream);
    default: return launch_t<kGeneric, BN, STAGES>(k, grid, stream);
  }
}

}  // namespace

bool gemm_tc_supported(program::DType wtype, int64_t M, int64_t N, int64_t K) {
  if (M <= 0 || N <= 0 || K <= 0 || K % 32 != 0) return false;
  if (M > INT32_MAX || N > INT32_MAX - kNPad || K > (int64_t{1} << 30)) return false;
  if (ceil_div(M, kBM) > 65535) return false;  // gridDim.y
  if (!specialised(wtype) && !has_dequant(wtype)) return false;
  const int be = qblock_elems(wtype);
  return be > 0 && K % be == 0;
}

size_t gemm_tc_scratch(program::DType wtype, int64_t M, int64_t N, int64_t K) {
  if (!gemm_tc_supported(wtype, M, N, K)) return 0;
  return make_plan(M, N, K).total;
}

bool gemm_tc_aligned(program::DType wtype, const uint8_t* w, int64_t stride) {
  const int al = specialised(wtype) ? weight_align(wtype) : 1;
  return reinterpret_cast<uintptr_t>(w) % al == 0 && stride % al == 0;
}

cudaError_t gemm_tc(const GemmArgs& a, void* scratch, cudaStream_t stream) {
  if (!gemm_tc_supported(a.wtype, a.M, a.N, a.K) || !scratch) return cudaErrorInvalidValue;
  if (!gemm_tc_aligned(a.wtype, a.w, a.w_row_bytes)) return cudaErrorMisalignedAddress;
  const Plan p = make_plan(a.M, a.N, a.K);
  uint8_t* base = static_cast<uint8_t*>(scratch);
  __half* xh = reinterpret_cast<__half*>(base + p.x_off);
  float* cs = reinterpret_cast<float*>(base + p.cs_off);
  float* part = reinterpret_cast<float*>(base + p.part_off);

  convert_x<<<static_cast<unsigned>(p.npad), 256, 0, stream>>>(a.x, a.x_col, static_cast<int>(a.N), a.K, p.kpad, xh, cs);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;

  KArgs k{};
  k.w = a.w;
  k.w_row_bytes = a.w_row_bytes;
  k.xh = xh;
  k.kpad = p.kpad;
  k.cscale = cs;
  k.M = static_cast<int>(a.M);
  k.N = static_cast<int>(a.N);
  k.K = a.K;
  k.nkt = static_cast<int>(p.nkt);
  k.splits = p.splits;
  k.wtype = a.wtype;
  if (p.splits > 1) {
    k.out = part;
    k.out_col = a.M;
    k.split_stride = a.M * a.N;
  } else {
    k.out = a.out;
    k.out_col = a.out_col;
    k.split_stride = 0;
  }
  const dim3 grid(static_cast<unsigned>(ceil_div(a.N, p.bn)), static_cast<unsigned>(ceil_div(a.M, kBM)),
                  static_cast<unsigned>(p.splits));
  if (a.stages == 3)
    e = p.bn == 128 ? launch_bn<128, 3>(a.wtype, k, grid, stream) : launch_bn<64, 3>(a.wtype, k, grid, stream);
  else
    e = p.bn == 128 ? launch_bn<128, 2>(a.wtype, k, grid, stream) : launch_bn<64, 2>(a.wtype, k, grid, stream);
  if (e != cudaSuccess) return e;
  if (p.splits > 1) {
    const int64_t total = a.M * a.N;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(total, 256), 4096));
    reduce_splits<<<blocks, 256, 0, stream>>>(part, p.splits, a.M, a.N, a.out, a.out_col);
    e = cudaGetLastError();
  }
  return e;
}

}  // namespace minfer::cuda
