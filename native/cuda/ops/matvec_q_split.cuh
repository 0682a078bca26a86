// The 4-column mat-vec with each part's columns split between a lane pair (included by
// matvec_q.cuh after mv_q_body): lanes 2k and 2k + 1 take the same part of R rows, lane 2k
// against columns 0-1, lane 2k + 1 against columns 2-3. Each lane keeps 2 columns' codes (16 words)
// instead of 4's (32), so that ptxas can keep a pass's loads in flight at 72 registers (the default
// kernel at 72 registers loads each column's codes after the previous column's arithmetic: Nsight
// Compute, docs/PERFORMANCE.md session 39). The pair's weight loads are the same addresses in the
// same instruction (one request); each lane unpacks them. A (row, column)'s part sums are the
// default kernel's (Q::dot over the whole part); the parts a lane adds differ, so the last bits may.
#pragma once

namespace minfer::cuda::mm {

// Sums v over the 16 lanes of the warp with this lane's parity.
__device__ inline float pair_sum(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 1; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Epi: NoEpi, or MvRope (R = 2: a group's rows are a RoPE pair, rows row0 and row0 + rstep, as
// mv_q_body's).
template <class Q, int R, int W, class Epi = NoEpi>
__device__ __forceinline__ void mv_q_body_split(const MvBatch& bt, const int8_t* __restrict__ aq,
                                                const void* __restrict__ asc, const Epi& epi) {
  static_assert(W == 1 || W == 2 || W == 4, "a row group is 1, 2 or 4 warps");
  constexpr bool kEpi = !std::is_same_v<Epi, NoEpi>;
  static_assert(!kEpi || R == 2, "the epilogue's groups are row pairs");
  constexpr int NC = 4, G = kMvWarps / W;
  pdl_begin();
  const int wi = batch_weight(bt);
  const Planes& p = bt.p[wi];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int g = warp / W, slice = warp % W;
  const int half = lane & 1;  // columns 2·half, 2·half + 1
  const int64_t grp = (static_cast<int64_t>(blockIdx.x) - bt.first[wi]) * G + g;
  int64_t row0 = grp * R, rstep = 1;
  if constexpr (kEpi) {
    row0 = rope_pair_row(epi, wi, grp);
    rstep = rope_pair_step(epi, wi);
  }
  if (W == 1 && row0 >= p.M) return;
  const int nr = row0 >= p.M ? 0 : kEpi ? R : p.M - row0 < R ? static_cast<int>(p.M - row0) : R;
  const int64_t K = p.K, nparts = K / 32;
  __shared__ float red[kMvWarps][R][NC];
  for (int64_t z = blockIdx.y; z < p.n_planes; z += gridDim.y) {
    const Plane pl = plane_of(p, z);
    if (!pl.ok) {
      if (slice == 0)
        for (int r = 0; r < nr; r++) bad_plane(p, z, pl, row0 + r, lane);
      continue;
    }
    const int nc = plane_cols(p, pl);
    const uint8_t* wrow = pl.w + (nr > 0 ? row0 : 0) * p.w_nb1;
    float acc[R][2];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = 0.0f;
    for (int64_t pi = slice * (kWarp / 2) + lane / 2; nr > 0 && pi < nparts; pi += W * (kWarp / 2)) {
      Q q[R];
#pragma unroll
      for (int r = 0; r < R; r++)
        if (r < nr) q[r].load(wrow + r * rstep * p.w_nb1, pi);
      int a[2][8];
      float ad[2], as[2];
#pragma unroll
      for (int k = 0; k < 2; k++) {
        const int c = 2 * half + k;
        const int64_t col = pl.col0 + (c < nc ? c : 0);
        const int4* ap = reinterpret_cast<const int4*>(aq + col * K + pi * 32);
        const int4 a0 = ap[0], a1 = ap[1];
        a[k][0] = a0.x, a[k][1] = a0.y, a[k][2] = a0.z, a[k][3] = a0.w;
        a[k][4] = a1.x, a[k][5] = a1.y, a[k][6] = a1.z, a[k][7] = a1.w;
        const float2 ds = static_cast<const float2*>(asc)[col * nparts + pi];
        ad[k] = ds.x;
        as[k] = ds.y;
      }
#pragma unroll
      for (int r = 0; r < R; r++)
        if (r < nr)
#pragma unroll
          for (int k = 0; k < 2; k++) acc[r][k] += q[r].dot(a[k], ad[k], as[k]);
    }
    // each parity's 16 lanes summed; lanes 0 and 1 hold columns 0-1 and 2-3
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int k = 0; k < 2; k++) {
        const float s = pair_sum(acc[r][k]);
        if (lane < 2) red[warp][r][2 * lane + k] = s;
      }
    __syncthreads();
    if constexpr (kEpi) {
      if (slice == 0) rope_group_sums<W>(red, warp, lane, nr, nc, epi, wi, p, z, pl, row0, rstep);
    } else if (slice == 0) {
      store_group_sums<W>(red, warp, lane, nr, nc, p, z, pl, row0);
    }
    __syncthreads();  // (red is written again by the next plane)
  }
}

template <class Q, int R, int W, class Epi = NoEpi>
__global__ void __launch_bounds__(kMvWarps * 32) mv_q_kernel_split(const __grid_constant__ MvBatch bt,
                                                                   const int8_t* __restrict__ aq,
                                                                   const void* __restrict__ asc,
                                                                   const __grid_constant__ Epi epi) {
  mv_q_body_split<Q, R, W, Epi>(bt, aq, asc, epi);
}

}  // namespace minfer::cuda::mm
