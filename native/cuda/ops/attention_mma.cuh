// Tensor-core ATTENTION for prefill (Tuning::attn_mma, MINFER_CUDA_ATTN=mma; included by
// attention.cu only): F16 k/v, head sizes 64 or 128 (hd == hdv), no softcap, many rows.
//
// A block of kMmaWarps warps owns 16 rows per warp of one kv head (rows as in attn_tile_kernel:
// row = query * group + head in group) and walks the block's cell range in tiles of kMmaCells.
// Per tile: K into shared memory as [cell][d] f16 and V transposed as [d][cell]; each warp forms
// its 16 × 64 scores with mma.sync m16n8k16 (q rounded to f16 once, f32 accumulation), scales
// and masks them in registers, updates each row's online softmax (max and partial sums per
// thread; the sums meet across the 4 threads of a row at the end), and accumulates P · V with
// the score registers reused as the A operand (P rounded to f16). Output rows that see no cell
// are 0, as on the CPU. Shared rows are padded by 16 bytes so the 32-bit fragment reads of the
// 8 row groups × 4 threads fall in 32 different banks.
#pragma once
#include "../mma.cuh"

namespace minfer::cuda::attn {

constexpr int kMmaWarps = 4;
constexpr int kMmaRows = 16 * kMmaWarps;  // rows per block
constexpr int kMmaCells = 64;             // cells per tile

// Two floats as an f16 pair: lo in the low half (the lower column of a fragment).
__device__ __forceinline__ uint32_t pack_h2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <int D>
__global__ void __launch_bounds__(kMmaWarps * 32) attn_mma_kernel(const AttnParams p) {
  static_assert(D % 16 == 0 && D <= 128, "head size");
  constexpr int KS = D + 8;           // K tile row stride (halves)
  constexpr int VS = kMmaCells + 8;   // V^T tile row stride (halves)
  constexpr int kThreadsMma = kMmaWarps * 32;
  constexpr int kChunks = kMmaCells * D / 8 / kThreadsMma;  // 16-byte units of a tile per thread
  static_assert(kChunks * kThreadsMma * 8 == kMmaCells * D, "tile units");
  __shared__ __align__(16) __half k_s[kMmaCells * KS];
  __shared__ __align__(16) __half vt_s[D * VS];
  __shared__ int range_s[2];

  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp, g = lane / 4, t = lane % 4;
  const int kvh = blockIdx.y;
  const uint8_t* kbase = p.k + static_cast<int64_t>(kvh) * p.k_nb1;
  const uint8_t* vbase = p.v + static_cast<int64_t>(kvh) * p.v_nb1;

  // This thread's rows (fragment rows g and g + 8 of its warp): query, head, visible cells.
  int jq[2], hq[2], lo[2], hi[2];
  bool live[2];
#pragma unroll
  for (int i = 0; i < 2; i++) {
    const int row = blockIdx.x * kMmaRows + warp * 16 + g + 8 * i;
    live[i] = row < p.rows;
    jq[i] = live[i] ? row / p.group : 0;
    hq[i] = kvh * p.group + (live[i] ? row % p.group : 0);
    // A bad span is reported by one thread of the query's first q head.
    const int2 sp = live[i] ? query_span(p, jq[i], row % p.group == 0 && t == 0) : make_int2(0, 0);
    lo[i] = sp.x;
    hi[i] = sp.y;
  }
  if (tid == 0) {
    range_s[0] = p.n_kv;
    range_s[1] = 0;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 2; i++)
    if (t == 0 && lo[i] < hi[i]) {
      atomicMin(&range_s[0], lo[i]);
      atomicMax(&range_s[1], hi[i]);
    }
  __syncthreads();
  const int c_lo = range_s[0], c_hi = range_s[1];

  // q rows as A fragments (f16), k-step kk covering dims 16kk .. 16kk + 15.
  uint32_t qa[D / 16][4];
  auto qv = [&](int i, int d) -> float {
    if (!live[i]) return 0.0f;
    return ld_f32(p.q + static_cast<int64_t>(hq[i]) * p.q_nb1 + static_cast<int64_t>(jq[i]) * p.q_nb2 +
                      static_cast<int64_t>(d) * p.q_nb0,
                  true);
  };
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++) {
    const int d0 = kk * 16 + 2 * t;
    qa[kk][0] = pack_h2(qv(0, d0), qv(0, d0 + 1));
    qa[kk][1] = pack_h2(qv(1, d0), qv(1, d0 + 1));
    qa[kk][2] = pack_h2(qv(0, d0 + 8), qv(0, d0 + 9));
    qa[kk][3] = pack_h2(qv(1, d0 + 8), qv(1, d0 + 9));
  }

  float o[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; dn++) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.0f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.0f, 0.0f};

  for (int c0 = c_lo; c0 < c_hi; c0 += kMmaCells) {
    // Tiles: every load of the thread first, then the stores (cells at or past c_hi are zeros).
    uint4 kr[kChunks], vr[kChunks];
#pragma unroll
    for (int u = 0; u < kChunks; u++) {
      const int i = u * kThreadsMma + tid;
      const int kc = i / (D / 8), kch = i % (D / 8);  // K: consecutive threads along a row
      const int vc = i % kMmaCells, vch = i / kMmaCells;  // V: consecutive threads down the cells
      kr[u] = c0 + kc < c_hi ? __ldg(reinterpret_cast<const uint4*>(kbase + static_cast<int64_t>(c0 + kc) * p.k_nb2) + kch)
                             : make_uint4(0, 0, 0, 0);
      vr[u] = c0 + vc < c_hi ? __ldg(reinterpret_cast<const uint4*>(vbase + static_cast<int64_t>(c0 + vc) * p.v_nb2) + vch)
                             : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();  // the previous tile is no longer read
#pragma unroll
    for (int u = 0; u < kChunks; u++) {
      const int i = u * kThreadsMma + tid;
      const int kc = i / (D / 8), kch = i % (D / 8);
      const int vc = i % kMmaCells, vch = i / kMmaCells;
      *reinterpret_cast<uint4*>(k_s + kc * KS + kch * 8) = kr[u];
      const __half* hv = reinterpret_cast<const __half*>(&vr[u]);
#pragma unroll
      for (int e = 0; e < 8; e++) vt_s[(vch * 8 + e) * VS + vc] = hv[e];
    }
    __syncthreads();

    // Scores: 16 rows × 64 cells of this warp.
    float s[kMmaCells / 8][4];
#pragma unroll
    for (int nt = 0; nt < kMmaCells / 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
      for (int nt = 0; nt < kMmaCells / 8; nt++) {
        const __half* kp = k_s + (nt * 8 + g) * KS + kk * 16 + 2 * t;
        mma_16816(s[nt], qa[kk], *reinterpret_cast<const uint32_t*>(kp), *reinterpret_cast<const uint32_t*>(kp + 8));
      }

    // Scale and mask; element (nt, 2i + e) is row i's cell c0 + 8nt + 2t + e.
#pragma unroll
    for (int nt = 0; nt < kMmaCells / 8; nt++)
#pragma unroll
      for (int i = 0; i < 2; i++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const int c = c0 + nt * 8 + 2 * t + e;
          float x = -INFINITY;
          if (c >= lo[i] && c < hi[i]) {
            if (p.mask_kind == 2) {
              x = s[nt][2 * i + e] * p.scale;
            } else {
              const float mv = load_mask(p, c, jq[i]);
              if (mv != -INFINITY) x = s[nt][2 * i + e] * p.scale + mv;
            }
          }
          s[nt][2 * i + e] = x;
        }

    // Online softmax per row (the 4 threads of a row hold its 64 cells between them).
#pragma unroll
    for (int i = 0; i < 2; i++) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kMmaCells / 8; nt++) mx = fmaxf(mx, fmaxf(s[nt][2 * i], s[nt][2 * i + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_r[i], mx);
      const float corr = m_r[i] == -INFINITY ? (m_new == -INFINITY ? 1.0f : 0.0f) : expf(m_r[i] - m_new);
      m_r[i] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < kMmaCells / 8; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const float x = s[nt][2 * i + e];
          const float pe = m_new == -INFINITY || x == -INFINITY ? 0.0f : expf(x - m_new);
          s[nt][2 * i + e] = pe;
          sum += pe;
        }
      l_r[i] = l_r[i] * corr + sum;
#pragma unroll
      for (int dn = 0; dn < D / 8; dn++) {
        o[dn][2 * i] *= corr;
        o[dn][2 * i + 1] *= corr;
      }
    }

    // O += P · V, the score registers as A fragments (cells 16kk .. 16kk + 15).
#pragma unroll
    for (int kk = 0; kk < kMmaCells / 16; kk++) {
      const uint32_t pa[4] = {pack_h2(s[2 * kk][0], s[2 * kk][1]), pack_h2(s[2 * kk][2], s[2 * kk][3]),
                              pack_h2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_h2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 8; dn++) {
        const __half* vp = vt_s + (dn * 8 + g) * VS + kk * 16 + 2 * t;
        mma_16816(o[dn], pa, *reinterpret_cast<const uint32_t*>(vp), *reinterpret_cast<const uint32_t*>(vp + 8));
      }
    }
  }

  // Output: o / l per row (0 where the row saw no cell).
#pragma unroll
  for (int i = 0; i < 2; i++) {
    float l = l_r[i];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (!live[i]) continue;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    uint8_t* orow = p.o + static_cast<int64_t>(hq[i]) * p.o_nb1 + static_cast<int64_t>(jq[i]) * p.o_nb2;
#pragma unroll
    for (int dn = 0; dn < D / 8; dn++) {
      const int d = dn * 8 + 2 * t;
      *reinterpret_cast<float*>(orow + static_cast<int64_t>(d) * p.o_nb0) = o[dn][2 * i] * inv;
      *reinterpret_cast<float*>(orow + static_cast<int64_t>(d + 1) * p.o_nb0) = o[dn][2 * i + 1] * inv;
    }
  }
}

// Whether attn_mma_kernel takes the node (besides Tuning::attn_mma): see the file comment. `vec`:
// k and v rows are 16-byte aligned whole units (AttnParams::k_vec && v_vec); `aligned`: every
// pointer and stride is element-aligned.
inline bool mma_takes(DType kt, DType vt, int64_t hd, int64_t hdv, float softcap, bool vec, bool aligned, int64_t rows) {
  return kt == DType::F16 && vt == DType::F16 && hd == hdv && (hd == 64 || hd == 128) && softcap == 0.0f && vec &&
         aligned && rows >= kMmaRows;
}

inline cudaError_t launch_mma(const AttnParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.rows + kMmaRows - 1) / kMmaRows), static_cast<unsigned>(p.n_kv_head));
  if (p.hd == 128) attn_mma_kernel<128><<<grid, kMmaWarps * 32, 0, stream>>>(p);
  else attn_mma_kernel<64><<<grid, kMmaWarps * 32, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace minfer::cuda::attn
