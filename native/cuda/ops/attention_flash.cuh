// Tensor-core ATTENTION with the K/V tiles copied ahead (included by attention.cu only): F16 k/v,
// head size 64 or 128 (hd == hdv), no softcap. Prefill (W = 4, 2 or 1 warps a block, Tuning::attn_mma,
// attn_warps) and decode at long caches (W = 1 and the cells split over many blocks:
// DecodeAttn::Flash, and Auto beyond kDecAutoMaxCells).
//
// The arithmetic (that of the attention_mma.cuh it replaced): a block owns 16 rows per warp of one kv head (row =
// query * group + head in group, so the q heads sharing a kv head share each K/V tile), q is
// rounded to f16 once, scores come from mma.sync m16n8k16 with f32 accumulation, each row's online
// softmax lives in registers (the 4 threads of a row meet by shuffles), and P (rounded to f16)
// multiplies V from the score registers. What differs is how the tiles arrive:
//
//  * K and V tiles of kFlashCells cells are copied into shared memory with cp.async, both as
//    [cell][d] rows (padded by 16 bytes so ldmatrix's 8 row addresses fall in distinct banks),
//    two stages: the copy of tile t + 1 is in flight while tile t is computed. attention_mma.cuh
//    loaded each tile into registers, waited, and transposed V element by element into shared
//    memory, so every tile cost a full memory latency with nothing to cover it.
//  * Fragments are read with ldmatrix: K as stored for the scores' B operand, V with .trans for
//    P · V's (no transposed copy).
//  * A warp whose 16 rows see no cell of a tile skips its arithmetic (causal prefill: the block's
//    first rows stop before its last ones).
//  * The block's cells (the union of its rows' spans) are cut into grid.z splits (split_cells);
//    several splits write partials (m, l, acc) in the tile kernel's layout for attn_combine_kernel.
#pragma once
#include "../mma.cuh"
#include "attention_kernels.cuh"

namespace minfer::cuda::attn {

constexpr int kFlashCells = 64;  // cells per tile
constexpr int kFlashStages = 2;

// Dynamic shared memory of a block: the stages' K and V tiles.
constexpr size_t flash_smem_bytes(int d) {
  return static_cast<size_t>(kFlashStages) * 2 * kFlashCells * (d + 8) * sizeof(__half);
}

__device__ __forceinline__ uint32_t flash_smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes from global to shared memory, or zeros when !live (src is then not read).
__device__ __forceinline__ void flash_cp16(void* dst, const void* src, bool live) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(flash_smem_u32(dst)), "l"(src),
               "r"(live ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void flash_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void flash_wait1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void ldm_x4(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(flash_smem_u32(p)));
}
__device__ __forceinline__ void ldm_x4_trans(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(flash_smem_u32(p)));
}
// 2^x by the special-function unit (ex2.approx: relative error ~2^-22, 2^-inf = 0), for the softmax
// weights, which are rounded to f16 before they multiply V.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ uint32_t flash_h2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <int D, int W>
__global__ void __launch_bounds__(W * 32) attn_flash_kernel(const AttnParams p) {
  static_assert(D == 64 || D == 128, "head size");
  constexpr int S = D + 8;                  // tile row stride (halves)
  constexpr int kThreadsF = W * 32;
  constexpr int kUnits = kFlashCells * D / 8;  // 16-byte units of one tile
  pdl_begin();
  extern __shared__ __align__(16) unsigned char flash_smem[];
  __half* tiles = reinterpret_cast<__half*>(flash_smem);  // [stage][K, V][cell][S]
  __shared__ int range_s[2];

  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp, g = lane / 4, t = lane % 4;
  const int kvh = blockIdx.y, split = blockIdx.z;
  const float scale2 = p.scale * kLog2e;  // scores in log2 units
  const uint8_t* kbase = p.k + static_cast<int64_t>(kvh) * p.k_nb1;
  const uint8_t* vbase = p.v + static_cast<int64_t>(kvh) * p.v_nb1;

  // This thread's rows (fragment rows g and g + 8 of its warp): query, head, visible cells. One
  // query a block (p.flash_pq, W = 1): rows g and g + 8 are its q heads g and g + 8 of the group; an
  // idle row (past the group) takes the query's span too, so that a tile inside it needs no
  // per-cell test, and is never stored.
  int jq[2], hq[2], lo[2], hi[2], row_of[2];
  bool live[2];
#pragma unroll
  for (int i = 0; i < 2; i++) {
    const int in_group = g + 8 * i;
    const int row = p.flash_pq ? static_cast<int>(blockIdx.x) * p.group + in_group
                               : static_cast<int>(blockIdx.x) * (16 * W) + warp * 16 + g + 8 * i;
    live[i] = p.flash_pq ? in_group < p.group : row < p.rows;
    row_of[i] = row;
    jq[i] = p.flash_pq ? static_cast<int>(blockIdx.x) : live[i] ? row / p.group : 0;
    hq[i] = kvh * p.group + (live[i] ? row % p.group : 0);
    // A bad span is reported by one thread of the query's first q head, in the first split.
    const int2 sp = live[i] || p.flash_pq
                        ? query_span(p, jq[i], live[i] && row % p.group == 0 && t == 0 && split == 0)
                        : make_int2(0, 0);
    lo[i] = sp.x;
    hi[i] = sp.y;
  }
  // The warp's cells (the union of its rows' spans) and the block's.
  int wlo = lo[0] < hi[0] ? lo[0] : p.n_kv, whi = lo[0] < hi[0] ? hi[0] : 0;
  if (lo[1] < hi[1]) {
    wlo = min(wlo, lo[1]);
    whi = max(whi, hi[1]);
  }
#pragma unroll
  for (int o = 1; o < kWarp; o <<= 1) {
    wlo = min(wlo, __shfl_xor_sync(0xffffffffu, wlo, o));
    whi = max(whi, __shfl_xor_sync(0xffffffffu, whi, o));
  }
  if (tid == 0) {
    range_s[0] = p.n_kv;
    range_s[1] = 0;
  }
  __syncthreads();
  if (lane == 0 && wlo < whi) {
    atomicMin(&range_s[0], wlo);
    atomicMax(&range_s[1], whi);
  }
  __syncthreads();
  const int2 cells = split_cells(make_int2(range_s[0], range_s[1]), p.n_splits, split, kFlashCells);
  const int c_lo = cells.x, c_hi = cells.y;

  // q rows as A fragments (f16), k-step kk covering dims 16kk .. 16kk + 15.
  uint32_t qa[D / 16][4];
  auto qv = [&](int i, int d) -> float {
    if (!live[i]) return 0.0f;
    return *reinterpret_cast<const float*>(p.q + static_cast<int64_t>(hq[i]) * p.q_nb1 +
                                           static_cast<int64_t>(jq[i]) * p.q_nb2 + static_cast<int64_t>(d) * p.q_nb0);
  };
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++) {
    const int d0 = kk * 16 + 2 * t;
    qa[kk][0] = flash_h2(qv(0, d0), qv(0, d0 + 1));
    qa[kk][1] = flash_h2(qv(1, d0), qv(1, d0 + 1));
    qa[kk][2] = flash_h2(qv(0, d0 + 8), qv(0, d0 + 9));
    qa[kk][3] = flash_h2(qv(1, d0 + 8), qv(1, d0 + 9));
  }

  // Copies tile c0's K and V rows into stage st (cells at or past c_hi as zeros).
  auto issue = [&](int st, int c0) {
    __half* ks = tiles + static_cast<size_t>(st) * 2 * kFlashCells * S;
    __half* vs = ks + kFlashCells * S;
#pragma unroll 4
    for (int u0 = 0; u0 < kUnits; u0 += kThreadsF) {
      const int u = u0 + tid, c = u / (D / 8), ch = u % (D / 8);
      const bool in = c0 + c < c_hi;
      const int64_t cell = in ? c0 + c : c_lo;
      flash_cp16(ks + c * S + ch * 8, kbase + cell * p.k_nb2 + ch * 16, in);
      flash_cp16(vs + c * S + ch * 8, vbase + cell * p.v_nb2 + ch * 16, in);
    }
  };

  float o[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; dn++) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.0f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.0f, 0.0f};

  if (c_lo < c_hi) issue(0, c_lo);
  flash_commit();
  int st = 0;
  for (int c0 = c_lo; c0 < c_hi; c0 += kFlashCells, st ^= 1) {
    if (c0 + kFlashCells < c_hi) issue(st ^ 1, c0 + kFlashCells);
    flash_commit();
    flash_wait1();  // this tile's copies (the next tile's may still be in flight)
    __syncthreads();
    if (c0 < whi && c0 + kFlashCells > wlo) {
      const __half* ks = tiles + static_cast<size_t>(st) * 2 * kFlashCells * S;
      const __half* vs = ks + kFlashCells * S;
      // Scores: 16 rows × 64 cells of this warp; ldmatrix x4 gives the B fragments of two 8-cell
      // groups (matrix m: cells 16np + 8(m / 2) .. + 7, dims 16kk + 8(m % 2) .. + 7).
      float s[kFlashCells / 8][4];
#pragma unroll
      for (int nt = 0; nt < kFlashCells / 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
        for (int np = 0; np < kFlashCells / 16; np++) {
          uint32_t b[4];
          const int mi = lane / 8, r = lane % 8;
          ldm_x4(b, ks + (np * 16 + (mi >> 1) * 8 + r) * S + kk * 16 + (mi & 1) * 8);
          mma_16816(s[2 * np], qa[kk], b[0], b[1]);
          mma_16816(s[2 * np + 1], qa[kk], b[2], b[3]);
        }

      // Scores in log2 units (the softmax runs on exp2: one MUFU op a weight), masked; element
      // (nt, 2i + e) is row i's cell c0 + 8nt + 2t + e. A tile inside both rows' spans (most of a
      // long cache) needs no per-cell test.
      const bool inside = p.mask_kind == 2 && c0 >= lo[0] && c0 + kFlashCells <= hi[0] && c0 >= lo[1] &&
                          c0 + kFlashCells <= hi[1];
      if (inside) {
#pragma unroll
        for (int nt = 0; nt < kFlashCells / 8; nt++)
#pragma unroll
          for (int e = 0; e < 4; e++) s[nt][e] *= scale2;
      } else {
#pragma unroll
        for (int nt = 0; nt < kFlashCells / 8; nt++)
#pragma unroll
          for (int i = 0; i < 2; i++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
              const int c = c0 + nt * 8 + 2 * t + e;
              float x = -INFINITY;
              if (c >= lo[i] && c < hi[i]) {
                if (p.mask_kind == 2) {
                  x = s[nt][2 * i + e] * scale2;
                } else {
                  const float mv = load_mask(p, c, jq[i]);
                  if (mv != -INFINITY) x = (s[nt][2 * i + e] * p.scale + mv) * kLog2e;
                }
              }
              s[nt][2 * i + e] = x;
            }
      }

      // Online softmax per row (the 4 threads of a row hold its 64 cells between them), base 2.
#pragma unroll
      for (int i = 0; i < 2; i++) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kFlashCells / 8; nt++) mx = fmaxf(mx, fmaxf(s[nt][2 * i], s[nt][2 * i + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_r[i], mx);
        // (-inf - -inf is NaN: a row that has seen nothing keeps weight 0 and a factor of 1)
        const float corr = m_r[i] == -INFINITY ? (m_new == -INFINITY ? 1.0f : 0.0f) : fast_exp2(m_r[i] - m_new);
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        m_r[i] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < kFlashCells / 8; nt++)
#pragma unroll
          for (int e = 0; e < 2; e++) {
            const float pe = fast_exp2(s[nt][2 * i + e] - base);  // exp2(-inf) = 0
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

      // O += P · V, the score registers as A fragments (cells 16kk .. 16kk + 15); ldmatrix .trans
      // x4 gives the B fragments of two 8-dim groups (matrix m: cells 16kk + 8(m % 2) .. + 7, dims
      // 16dp + 8(m / 2) .. + 7).
#pragma unroll
      for (int kk = 0; kk < kFlashCells / 16; kk++) {
        const uint32_t pa[4] = {flash_h2(s[2 * kk][0], s[2 * kk][1]), flash_h2(s[2 * kk][2], s[2 * kk][3]),
                                flash_h2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                flash_h2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
          uint32_t b[4];
          const int mi = lane / 8, r = lane % 8;
          ldm_x4_trans(b, vs + (kk * 16 + (mi & 1) * 8 + r) * S + dp * 16 + (mi >> 1) * 8);
          mma_16816(o[2 * dp], pa, b[0], b[1]);
          mma_16816(o[2 * dp + 1], pa, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // stage st is copied into again two tiles on
  }

  // Output: o / l per row (0 where the row saw no cell), or the partial (m, l, acc) of this split.
#pragma unroll
  for (int i = 0; i < 2; i++) {
    float l = l_r[i];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (!live[i]) continue;
    const int row = row_of[i];
    if (p.n_splits > 1) {
      float* part = p.part + ((static_cast<int64_t>(split) * p.n_kv_head + kvh) * p.rows + row) * (D + 2);
      if (t == 0) {
        part[0] = m_r[i] == -INFINITY ? -INFINITY : m_r[i] * kLn2;  // the combine works in natural units
        part[1] = l;
      }
#pragma unroll
      for (int dn = 0; dn < D / 8; dn++)
        *reinterpret_cast<float2*>(part + 2 + dn * 8 + 2 * t) = make_float2(o[dn][2 * i], o[dn][2 * i + 1]);
      continue;
    }
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

// Whether attn_flash_kernel takes the node (any number of rows).
inline bool flash_takes(DType kt, DType vt, int64_t hd, int64_t hdv, float softcap, bool vec, bool aligned) {
  return kt == DType::F16 && vt == DType::F16 && hd == hdv && (hd == 64 || hd == 128) && softcap == 0.0f && vec &&
         aligned;
}

// Splits of a flash launch of `blocks` blocks a split over n_kv cells, at most max_splits (what the
// scratch holds): prefill about two blocks per SM; decode (`one_tile`) a split per tile of the
// window, so that each block's chain is one tile (Nsight Compute on the H200 at 4611 cells: a warp
// issues an instruction every 7.6 cycles, 3200 of them a tile).
inline int flash_splits(int64_t n_kv, int64_t blocks, int sm_count, int max_splits, bool one_tile) {
  const int64_t tiles = (n_kv + kFlashCells - 1) / kFlashCells;
  const int64_t want =
      one_tile ? tiles : (2 * static_cast<int64_t>(sm_count > 0 ? sm_count : 1) + blocks - 1) / blocks;
  int64_t s = tiles < want ? tiles : want;
  if (s > max_splits) s = max_splits;
  return static_cast<int>(s < 1 ? 1 : s);
}

template <int D, int W>
cudaError_t launch_flash_dw(const AttnParams& p, dim3 grid, cudaStream_t stream) {
  constexpr size_t smem = flash_smem_bytes(D);
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(attn_flash_kernel<D, W>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  return launch_k(attn_flash_kernel<D, W>, grid, dim3(W * 32), smem, stream, p);
}

// Launches the kernel with W warps a block (1, 2 or 4; 1 with p.flash_pq, a block per query) and
// p.n_splits splits, and the combine kernel after it when there are several.
inline cudaError_t launch_flash(const AttnParams& p, int warps, cudaStream_t stream) {
  if (p.flash_pq && (warps != 1 || p.group > 16)) return cudaErrorInvalidValue;
  const int rows_per_block = 16 * warps;
  const unsigned bx = p.flash_pq ? static_cast<unsigned>(p.n_q) : static_cast<unsigned>((p.rows + rows_per_block - 1) / rows_per_block);
  const dim3 grid(bx, static_cast<unsigned>(p.n_kv_head), static_cast<unsigned>(p.n_splits));
  cudaError_t e;
  if (p.hd == 128) {
    e = warps == 1   ? launch_flash_dw<128, 1>(p, grid, stream)
        : warps == 2 ? launch_flash_dw<128, 2>(p, grid, stream)
                     : launch_flash_dw<128, 4>(p, grid, stream);
  } else {
    e = warps == 1   ? launch_flash_dw<64, 1>(p, grid, stream)
        : warps == 2 ? launch_flash_dw<64, 2>(p, grid, stream)
                     : launch_flash_dw<64, 4>(p, grid, stream);
  }
  if (e != cudaSuccess || p.n_splits <= 1) return e;
  return launch_k(attn_combine_kernel, dim3(static_cast<unsigned>(p.rows), static_cast<unsigned>(p.n_kv_head)),
                  dim3(kCombineThreads), 0, stream, p);
}

}  // namespace minfer::cuda::attn
