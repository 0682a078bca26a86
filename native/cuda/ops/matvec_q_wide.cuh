// The quantized mat-vec with coalesced word loads for Q4_0 and Q8_0 (Tuning::mv_wide,
// MINFER_CUDA_MV=wide). Included by matvec_q.cuh after mv_q_kernel.
//
// Why: mv_q_kernel gives each lane one 18- or 34-byte block and reads it with 2-byte loads, so a
// warp's load instruction touches many cache lines for 64 useful bytes; on the H200 the L1 is then
// the busy unit (Nsight Compute: L1/TEX throughput 78%, DRAM 42% on the FFN products).
// Here two neighbouring blocks (36 or 68 bytes, 4-byte aligned when the row is) are one "pair" of
// W = 2L + 1 words, read by 2L neighbouring lanes, one word each (the last word by all of them):
// a warp's load covers 128-144 contiguous bytes. Lanes 0..L-1 of a pair hold block A's quants
// (bytes 2.. of the pair, so word k of A is the pair's words k, k+1 shifted by 16 bits), lanes
// L..2L-1 block B's (words L+1.., aligned); a shuffle brings the neighbour's word and the block's
// f16 scale (low half of word 0 for A, high half of word L for B). Each lane forms the integer dot
// product of its quant word(s), the L lanes of a block add theirs (exact), and the block's first
// lane applies the CPU vec_dot's per-block float formula.
#pragma once

namespace minfer::cuda::mm {

// Q4_0: 4 lanes per block, each one word of quants (elements 4k..4k+3 low, 16+4k.. high nibbles).
struct WQ4_0 {
  static constexpr int L = 4;
  static constexpr int kBlockBytes = kQ4_0Bytes;
  // a0, a1: activation words k and k + 4 of the block.
  __device__ static int dot(uint32_t q, int a0, int a1) {
    return __dp4a(static_cast<int>(q & 0x0f0f0f0fu), a0, __dp4a(static_cast<int>((q >> 4) & 0x0f0f0f0fu), a1, 0));
  }
  __device__ static float block(float d, int sumi, float ad, float as) {
    return __fmul_rn(d, __fsub_rn(__fmul_rn(ad, static_cast<float>(sumi)), __fmul_rn(8.0f, as)));
  }
};

// Q8_0: 8 lanes per block, each one word of quants (elements 4k..4k+3).
struct WQ8_0 {
  static constexpr int L = 8;
  static constexpr int kBlockBytes = kQ8_0Bytes;
  __device__ static int dot(uint32_t q, int a0, int) { return __dp4a(static_cast<int>(q), a0, 0); }
  __device__ static float block(float d, int sumi, float ad, float) { return __fmul_rn(__fmul_rn(d, ad), static_cast<float>(sumi)); }
};

template <class Q, int NC, int R>
__global__ void __launch_bounds__(kMvWarps * 32) mv_q_wide_kernel(const __grid_constant__ MvBatch bt,
                                                                  const int8_t* __restrict__ aq,
                                                                  const void* __restrict__ asc) {
  constexpr int L = Q::L, W = 2 * L + 1, kPairsPerIter = kWarp / (2 * L), kU = 4;
  const int wi = batch_weight(bt);
  const Planes& p = bt.p[wi];
  const int lane = threadIdx.x % kWarp;
  const int64_t row0 = ((static_cast<int64_t>(blockIdx.x) - bt.first[wi]) * kMvWarps + threadIdx.x / kWarp) * R;
  if (row0 >= p.M) return;
  const int nr = p.M - row0 < R ? static_cast<int>(p.M - row0) : R;
  const int64_t K = p.K, nblk = K / 32, npairs = nblk / 2;
  const int nc = static_cast<int>(p.ncols);
  const int gi = lane % (2 * L);         // lane within its pair's group
  const int gbase = lane - gi;           // first lane of the group
  const bool in_b = gi >= L;             // block B of the pair
  const int k = gi % L;                  // quant word of the block
  const int dsrc = gbase + (in_b ? L : 0);  // lane holding the block's scale
  for (int64_t z = blockIdx.y; z < p.n_planes; z += gridDim.y) {
    const Plane pl = plane_of(p, z);
    if (!pl.ok) {
      for (int r = 0; r < nr; r++) bad_plane(p, z, pl, row0 + r, lane);
      continue;
    }
    const uint8_t* wrow = pl.w + row0 * p.w_nb1;
    float acc[R][NC];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int c = 0; c < NC; c++) acc[r][c] = 0.0f;
    // kU rounds of pairs per iteration, every load of the iteration issued before any is used.
    for (int64_t pb = 0; pb < npairs; pb += kU * kPairsPerIter) {
      uint32_t w[kU][R], extra[kU][R];
      int a0[kU][NC], a1[kU][NC];
      float ad[kU][NC], as[kU][NC];
#pragma unroll
      for (int u = 0; u < kU; u++) {
        const int64_t pair = pb + u * kPairsPerIter + lane / (2 * L);
        const bool live = pair < npairs;  // the same for all lanes of a group
        const int64_t blk = live ? 2 * pair + (in_b ? 1 : 0) : 0;
#pragma unroll
        for (int r = 0; r < R; r++) {
          w[u][r] = extra[u][r] = 0;
          if (live && r < nr) {
            const uint32_t* pw = reinterpret_cast<const uint32_t*>(wrow + r * p.w_nb1) + pair * W;
            w[u][r] = __ldg(pw + gi);
            extra[u][r] = __ldg(pw + 2 * L);
          }
        }
#pragma unroll
        for (int c = 0; c < NC; c++) {
          const int64_t col = pl.col0 + (c < nc ? c : 0);
          const int* ap = reinterpret_cast<const int*>(aq + col * K + blk * 32);
          a0[u][c] = ap[k];
          a1[u][c] = L == 4 ? ap[k + 4] : 0;
          const float2 ds = static_cast<const float2*>(asc)[col * nblk + blk];
          ad[u][c] = ds.x;
          as[u][c] = ds.y;
        }
      }
#pragma unroll
      for (int u = 0; u < kU; u++) {
        const bool live = pb + u * kPairsPerIter + lane / (2 * L) < npairs;
#pragma unroll
        for (int r = 0; r < R; r++) {
          const uint32_t nxt_s = __shfl_down_sync(0xffffffffu, w[u][r], 1);
          const uint32_t dw = __shfl_sync(0xffffffffu, w[u][r], dsrc);
          const uint32_t nxt = gi == 2 * L - 1 ? extra[u][r] : nxt_s;
          const uint32_t q = in_b ? nxt : __funnelshift_r(w[u][r], nxt, 16);
          const float d = f16lo(in_b ? dw >> 16 : dw);
#pragma unroll
          for (int c = 0; c < NC; c++) {
            int s = Q::dot(q, a0[u][c], a1[u][c]);
#pragma unroll
            for (int o = 1; o < L; o <<= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (live && r < nr && k == 0) acc[r][c] += Q::block(d, s, ad[u][c], as[u][c]);
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int c = 0; c < NC; c++) {
        const float s = warp_sum(acc[r][c]);
        if (lane == 0 && c < nc && r < nr)
          reinterpret_cast<float*>(pl.out + c * p.o_nb1)[row0 + r] = plus_c(p, z, c, row0 + r, s);
      }
  }
}

// Whether the wide kernel reads these weights: Q4_0 or Q8_0, rows of whole pairs of blocks
// (K a multiple of 64), every row and plane 4-byte aligned.
inline bool mv_wide_takes(const Planes* ps, int n) {
  for (int i = 0; i < n; i++) {
    const Planes& p = ps[i];
    if ((p.wtype != DType::Q4_0 && p.wtype != DType::Q8_0) || p.K % 64 != 0 || !planes_aligned(p, 4)) return false;
  }
  return true;
}

template <class Q, int NC, int R>
cudaError_t launch_mv_wide_nc(const Planes* ps, int n, const int8_t* aq, const void* asc, cudaStream_t s) {
  MvBatch bt;
  if (!make_batch(ps, n, kMvWarps * R, &bt)) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(bt.first[n]), static_cast<unsigned>(std::min<int64_t>(ps[0].n_planes, 65535)));
  mv_q_wide_kernel<Q, NC, R><<<grid, kMvWarps * kWarp, 0, s>>>(bt, aq, asc);
  return cudaGetLastError();
}

template <class Q>
cudaError_t launch_mv_wide_t(const Planes* ps, int n, const uint8_t* act, int64_t cols, cudaStream_t s) {
  const auto* aq = reinterpret_cast<const int8_t*>(act);
  const void* asc = act + qs_bytes(ps[0].K, cols);
  int64_t rows = 0;
  for (int i = 0; i < n; i++) rows += ps[i].M * ps[i].n_planes;
  const bool two = rows >= 4096;
  const int64_t nc = ps[0].ncols;
  if (nc <= 1) return two ? launch_mv_wide_nc<Q, 1, 2>(ps, n, aq, asc, s) : launch_mv_wide_nc<Q, 1, 1>(ps, n, aq, asc, s);
  if (nc <= 2) return two ? launch_mv_wide_nc<Q, 2, 2>(ps, n, aq, asc, s) : launch_mv_wide_nc<Q, 2, 1>(ps, n, aq, asc, s);
  if (nc <= 4) return launch_mv_wide_nc<Q, 4, 1>(ps, n, aq, asc, s);
  return launch_mv_wide_nc<Q, 8, 1>(ps, n, aq, asc, s);
}

}  // namespace minfer::cuda::mm
