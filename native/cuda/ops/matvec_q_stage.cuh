// The quantized mat-vec with staged weights (Tuning::mv_stage), included by matvec_q.cuh after the
// block decoders. Same grid, rows per warp, part-per-lane assignment and accumulation order as
// mv_q_kernel, so the results are bit-identical; only the weight loads differ: the bytes of the 32
// parts a warp decodes next (one per lane) are one contiguous range of each row, which the warp
// copies into shared memory with coalesced 16-byte loads (4- or 2-byte ones where the range is less
// aligned) before each lane decodes its part from there. Blocks of 18, 22, 34, 110 or 210 bytes are
// only 2-byte aligned, too narrow to read efficiently straight from global memory.
#pragma once

namespace minfer::cuda::mm {

constexpr int kStageBytes = 32 * kQ8_0Bytes;  // 32 parts of the largest block type, per row

// dst[0, len) = src[0, len), the warp's lanes sharing the copy; len is even.
__device__ inline void warp_copy(uint8_t* dst, const uint8_t* src, int len, int lane) {
  int done = 0;
  if ((reinterpret_cast<uintptr_t>(src) & 15) == 0) {
    const int n = len / 16;
    for (int i = lane; i < n; i += kWarp) reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    done = n * 16;
  } else if ((reinterpret_cast<uintptr_t>(src) & 3) == 0) {
    const int n = len / 4;
    for (int i = lane; i < n; i += kWarp)
      reinterpret_cast<uint32_t*>(dst)[i] = reinterpret_cast<const uint32_t*>(src)[i];
    done = n * 4;
  }
  for (int i = done / 2 + lane; i < len / 2; i += kWarp)
    reinterpret_cast<uint16_t*>(dst)[i] = reinterpret_cast<const uint16_t*>(src)[i];
}

template <class Q, int NC, int R>
__global__ void __launch_bounds__(kMvWarps * 32) mv_q_stage_kernel(Planes p, const int8_t* __restrict__ aq,
                                                                   const void* __restrict__ asc) {
  static_assert(32 / Q::kPerBlock * Q::kBlockBytes <= kStageBytes, "32 parts fit the stage");
  __shared__ __align__(16) uint8_t stage[kMvWarps][R][kStageBytes];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kMvWarps + warp) * R;
  if (row0 >= p.M) return;
  const int nr = p.M - row0 < R ? static_cast<int>(p.M - row0) : R;
  const int64_t K = p.K, nparts = K / 32;
  const int nc = static_cast<int>(p.ncols);
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
    for (int64_t it0 = 0; it0 < nparts; it0 += kWarp) {
      const int np = nparts - it0 < kWarp ? static_cast<int>(nparts - it0) : kWarp;
      // it0 is a multiple of 32, so of kPerBlock: the range starts at a block boundary.
      const int64_t off = (it0 / Q::kPerBlock) * Q::kBlockBytes;
      const int len = ((np + Q::kPerBlock - 1) / Q::kPerBlock) * Q::kBlockBytes;
#pragma unroll
      for (int r = 0; r < R; r++)
        if (r < nr) warp_copy(stage[warp][r], wrow + r * p.w_nb1 + off, len, lane);
      __syncwarp();
      if (lane < np) {
        const int64_t pi = it0 + lane;
        Q q[R];
#pragma unroll
        for (int r = 0; r < R; r++)
          if (r < nr) q[r].load(stage[warp][r], lane);
#pragma unroll
        for (int c = 0; c < NC; c++) {
          if (c < nc) {
            const int64_t col = pl.col0 + c;
            const int4* ap = reinterpret_cast<const int4*>(aq + col * K + pi * 32);
            const int4 a0 = ap[0], a1 = ap[1];
            const int a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float ad, as = 0.0f;
            if (Q::kQ8K) {
              ad = static_cast<const float*>(asc)[col * (K / 256) + pi / 8];
            } else {
              const float2 ds = static_cast<const float2*>(asc)[col * nparts + pi];
              ad = ds.x;
              as = ds.y;
            }
#pragma unroll
            for (int r = 0; r < R; r++)
              if (r < nr) acc[r][c] += q[r].dot(a, ad, as);
          }
        }
      }
      __syncwarp();
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

}  // namespace minfer::cuda::mm
