// Row normalisations, F32 (as native/cpu/norm.cpp): RMS_NORM (x / sqrt(mean(x^2) + eps)), NORM
// ((x - mean) / sqrt(var + eps)), RMS_NORM_MUL (rms_norm(x) * w, w broadcast over rows by ggml's
// rule with w.ne[0] == x.ne[0]). Many rows: one block per row (grid-stride over rows); up to
// Tuning::norm_slice_rows rows (a decode step of one or a few sequences): a block per slice of a row
// (norm_slice_kernel), or one per row when the output aliases a. Sums are accumulated in double and
// the per-row scale is rounded to float once, as the CPU does. In the one-block-per-row kernels each element is read and written by the same thread, so
// the output may alias a.
#include <cmath>

#include "../cuda_util.cuh"
#include "../../common/contract_norm.h"
#include "../kernel.h"
#include "act_quant.cuh"
#include "fused.h"

namespace minfer::cuda {
namespace {

using program::Op;

constexpr int kThreads = 256;       // threads per row when there are rows enough to fill the device
constexpr int kFewRowThreads = 1024;  // per row otherwise (decode's single row: 4 loads a thread, not 14)
constexpr int kFewRows = 264;

// Sum of a double over the block (every thread gets it); `shared` holds blockDim.x / 32 doubles.
__device__ double block_sum_d(double v, double* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = (blockDim.x + kWarp - 1) / kWarp;
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < n_warps ? shared[lane] : 0.0;
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

enum class Kind { Rms, Norm, RmsMul };

template <Kind kKind>
__global__ void __launch_bounds__(kFewRowThreads) norm_kernel(Tensor a, Tensor w, Tensor o, float eps) {
  __shared__ double shared[kFewRowThreads / kWarp];
  const int64_t ne0 = a.ne[0], rows = a.ne[1] * a.ne[2] * a.ne[3];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
    const uint8_t* x = a.data + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3];
    uint8_t* y = o.data + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3];
    auto in = [&](int64_t i) { return *reinterpret_cast<const float*>(x + i * a.nb[0]); };
    auto out = [&](int64_t i) -> float& { return *reinterpret_cast<float*>(y + i * o.nb[0]); };
    if (kKind == Kind::Norm) {
      double s = 0;
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) s += in(i);
      const float mean = static_cast<float>(block_sum_d(s, shared) / ne0);
      double v = 0;
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
        const float d = __fsub_rn(in(i), mean);
        v += static_cast<double>(d) * d;
      }
      const double var = block_sum_d(v, shared) / ne0;
      const float sc = static_cast<float>(1.0 / sqrt(var + eps));
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) out(i) = __fmul_rn(__fsub_rn(in(i), mean), sc);
    } else {
      double s = 0;
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
        const double v = in(i);
        s += v * v;
      }
      const double ms = block_sum_d(s, shared) / ne0;
      const float sc = static_cast<float>(1.0 / sqrt(ms + eps));
      if (kKind == Kind::Rms) {
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) out(i) = __fmul_rn(in(i), sc);
      } else {
        const uint8_t* wr = w.data + (i1 % w.ne[1]) * w.nb[1] + (i2 % w.ne[2]) * w.nb[2] + (i3 % w.ne[3]) * w.nb[3];
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x)
          out(i) = __fmul_rn(__fmul_rn(in(i), sc), *reinterpret_cast<const float*>(wr + i * w.nb[0]));
      }
    }
  }
}

// The sum of a double over a block of kN threads, valid in warp 0 (the few-row kernels' fixed
// order: lanes by xor, then the warps' sums in warp 0); partial holds kN / 32 doubles.
template <int kN>
__device__ inline double sum_to_warp0(double s, double* partial) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  s = 0;
  if (warp == 0) {
    s = lane < kN / kWarp ? partial[lane] : 0.0;
#pragma unroll
    for (int o = kWarp / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  }
  return s;
}

// Row r of a (x), of the output (y) and of the broadcast weight (w; a itself for the norms
// without one).
struct RowPtrs {
  const uint8_t* x;
  uint8_t* y;
  const uint8_t* w;
};
__device__ inline RowPtrs row_ptrs(const Tensor& a, const Tensor& w, const Tensor& o, int64_t r) {
  const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
  return {a.data + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3], o.data + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3],
          w.data + (i1 % w.ne[1]) * w.nb[1] + (i2 % w.ne[2]) * w.nb[2] + (i3 % w.ne[3]) * w.nb[3]};
}

// The row statistics of the few-row kernels from the row held in registers, element
// threadIdx.x + k * kN in v[k] (zeros past ne0): {mean (NORM; 0 otherwise), scale}, in every
// thread. Sums in double, the scale rounded to float once, as the CPU does.
template <Kind kKind, int kN, int kP>
__device__ inline float2 row_stats(const float (&v)[kP], int64_t ne0, float eps, double* partial, float* stat) {
  float mean = 0.0f;
  if (kKind == Kind::Norm) {
    double s = 0;
#pragma unroll
    for (int k = 0; k < kP; k++) s += v[k];
    s = sum_to_warp0<kN>(s, partial);
    if (threadIdx.x == 0) stat[0] = static_cast<float>(s / ne0);
    __syncthreads();
    mean = stat[0];
    double q = 0;
#pragma unroll
    for (int k = 0; k < kP; k++) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kN;
      const float d = __fsub_rn(v[k], mean);
      if (i < ne0) q += static_cast<double>(d) * d;
    }
    __syncthreads();  // partial is reused
    q = sum_to_warp0<kN>(q, partial);
    if (threadIdx.x == 0) stat[1] = static_cast<float>(1.0 / sqrt(q / ne0 + eps));
  } else {
    double s = 0;
#pragma unroll
    for (int k = 0; k < kP; k++) s += static_cast<double>(v[k]) * v[k];
    s = sum_to_warp0<kN>(s, partial);
    if (threadIdx.x == 0) stat[1] = static_cast<float>(1.0 / sqrt(s / ne0 + eps));
  }
  __syncthreads();
  return make_float2(mean, stat[1]);
}

// Few rows (decode): one block of kFewRowThreads per row with the row (and the weight) held in
// registers, kPer elements a thread: every load is issued at the start, the sum is reduced once
// (warps, then warp 0, which also forms the scale in double, as the CPU does), and the outputs
// are written from registers. The same arithmetic as norm_kernel: sums in double, the scale
// rounded to float once, x * scale (* w) rounded as the CPU rounds them.
constexpr int kPer = 8;  // rows up to kFewRowThreads * kPer = 8192 elements
// kQ (fused with a mat-vec, fused.h): 1 also quantizes the output as Q8A (blocks of 32: one warp's
// elements), 2 as Q8K (blocks of 256: eight warps'), exactly as matvec_q.cuh's quantizing kernels
// do from the stored floats; qs gets the codes, scales the {d, d·Σq} pairs (Q8A) or d (Q8K).
template <Kind kKind, int kQ = 0>
__global__ void __launch_bounds__(kFewRowThreads) norm_row_kernel(Tensor a, Tensor w, Tensor o, float eps, int8_t* qs,
                                                                  void* scales) {
  pdl_begin();
  __shared__ double partial[kFewRowThreads / kWarp];
  __shared__ float stat[2];  // mean (NORM), scale
  const int64_t ne0 = a.ne[0];
  const RowPtrs rp = row_ptrs(a, w, o, blockIdx.x);
  const uint8_t *x = rp.x, *wr = rp.w;
  uint8_t* y = rp.y;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  // (quantized: row r is column r of the matmul's activations, ne0 codes and its blocks' scales)
  if constexpr (kQ != 0) qs += static_cast<int64_t>(blockIdx.x) * ne0;
  if constexpr (kQ == 1) scales = static_cast<float2*>(scales) + static_cast<int64_t>(blockIdx.x) * (ne0 / 32);
  if constexpr (kQ == 2) scales = static_cast<float*>(scales) + static_cast<int64_t>(blockIdx.x) * (ne0 / 256);
  float v[kPer], g[kPer];
#pragma unroll
  for (int k = 0; k < kPer; k++) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kFewRowThreads;
    v[k] = i < ne0 ? *reinterpret_cast<const float*>(x + i * a.nb[0]) : 0.0f;
    g[k] = kKind == Kind::RmsMul && i < ne0 ? *reinterpret_cast<const float*>(wr + i * w.nb[0]) : 0.0f;
  }
  const float2 st = row_stats<kKind, kFewRowThreads>(v, ne0, eps, partial, stat);
  const float mean = st.x, sc = st.y;
  __shared__ float wmax[kQ == 2 ? kPer : 1][kFewRowThreads / kWarp];
  float outs[kPer];
#pragma unroll
  for (int k = 0; k < kPer; k++) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kFewRowThreads;
    float out = 0.0f;
    if (i < ne0) {
      if (kKind == Kind::Norm) out = __fmul_rn(__fsub_rn(v[k], mean), sc);
      else if (kKind == Kind::Rms) out = __fmul_rn(v[k], sc);
      else out = __fmul_rn(__fmul_rn(v[k], sc), g[k]);
      *reinterpret_cast<float*>(y + i * o.nb[0]) = out;
    }
    outs[k] = out;
    // (ne0 is a multiple of the block: a block is either whole or wholly past the row)
    if constexpr (kQ == 1) {
      if (i - lane < ne0) q8a_warp_block(out, qs + i, static_cast<float2*>(scales) + i / 32);
    }
    if constexpr (kQ == 2) {
      const float m = warp_max(fabsf(out));
      if (lane == 0) wmax[kQ == 2 ? k : 0][warp] = m;
    }
  }
  if constexpr (kQ == 2) {
    __syncthreads();
    const int g0 = warp / 8 * 8;
#pragma unroll
    for (int k = 0; k < kPer; k++) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kFewRowThreads;
      if (i >= ne0) continue;
      float amax = 0.0f;
#pragma unroll
      for (int u = 0; u < 8; u++) amax = fmaxf(amax, wmax[k][g0 + u]);
      const float d = q8k_scale(amax);
      qs[i] = q8k_code(outs[k], d);
      if (i % 256 == 0) static_cast<float*>(scales)[i / 256] = d;
    }
  }
}

// Few rows that do not alias their output (decode): a row is cut into slices of kSlice elements,
// one block each (grid: slices x rows). Every block reduces the whole row, read from L2, in the
// same order, so all blocks form the same scale; each writes only its slice, and its quantized
// form when fused (kQ as in norm_row_kernel: a Q8A block is one warp's elements, a Q8K block one
// block's). One block doing the whole row is bound by the instruction issue of one SM (Nsight
// Compute: 26k warp instructions, about 7 us for a row of 3584); spread over slices each block
// issues a fraction of that. With an aliased output a block could overwrite elements another
// block has still to read, so those rows take norm_row_kernel.
constexpr int kSlice = 256;
constexpr int kSlicePer = kFewRowThreads * kPer / kSlice;  // row elements a thread holds (rows up to 8192)
template <Kind kKind, int kQ = 0>
__global__ void __launch_bounds__(kSlice) norm_slice_kernel(Tensor a, Tensor w, Tensor o, float eps, int8_t* qs,
                                                            void* scales) {
  pdl_begin();
  __shared__ double partial[kSlice / kWarp];
  __shared__ float stat[2];  // mean (NORM), scale
  __shared__ float wmax[kSlice / kWarp];
  const int64_t ne0 = a.ne[0];
  const RowPtrs rp = row_ptrs(a, w, o, blockIdx.y);
  const uint8_t *x = rp.x, *wr = rp.w;
  uint8_t* y = rp.y;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kSlice + threadIdx.x;  // this thread's output element
  // (quantized: row r is column r of the matmul's activations, ne0 codes and its blocks' scales)
  if constexpr (kQ != 0) qs += static_cast<int64_t>(blockIdx.y) * ne0;
  if constexpr (kQ == 1) scales = static_cast<float2*>(scales) + static_cast<int64_t>(blockIdx.y) * (ne0 / 32);
  if constexpr (kQ == 2) scales = static_cast<float*>(scales) + static_cast<int64_t>(blockIdx.y) * (ne0 / 256);
  // Every load first: the whole row, this element and its weight.
  float v[kSlicePer];
#pragma unroll
  for (int k = 0; k < kSlicePer; k++) {
    const int64_t j = threadIdx.x + static_cast<int64_t>(k) * kSlice;
    v[k] = j < ne0 ? *reinterpret_cast<const float*>(x + j * a.nb[0]) : 0.0f;
  }
  const float xi = i < ne0 ? *reinterpret_cast<const float*>(x + i * a.nb[0]) : 0.0f;
  const float gi = kKind == Kind::RmsMul && i < ne0 ? *reinterpret_cast<const float*>(wr + i * w.nb[0]) : 0.0f;
  const float2 st = row_stats<kKind, kSlice>(v, ne0, eps, partial, stat);
  const float mean = st.x, sc = st.y;
  float out = 0.0f;
  if (i < ne0) {
    if (kKind == Kind::Norm) out = __fmul_rn(__fsub_rn(xi, mean), sc);
    else if (kKind == Kind::Rms) out = __fmul_rn(xi, sc);
    else out = __fmul_rn(__fmul_rn(xi, sc), gi);
    *reinterpret_cast<float*>(y + i * o.nb[0]) = out;
  }
  // (ne0 is a multiple of the format's block: a block is either whole or wholly past the row)
  if constexpr (kQ == 1) {
    if (i - lane < ne0) q8a_warp_block(out, qs + i, static_cast<float2*>(scales) + i / 32);
  }
  if constexpr (kQ == 2) {
    const float m = warp_max(fabsf(out));
    if (lane == 0) wmax[warp] = m;
    __syncthreads();
    float amax = 0.0f;
#pragma unroll
    for (int u = 0; u < kSlice / kWarp; u++) amax = fmaxf(amax, wmax[u]);
    const float d = q8k_scale(amax);
    if (i < ne0) qs[i] = q8k_code(out, d);
    if (threadIdx.x == 0 && i < ne0) static_cast<float*>(scales)[i / 256] = d;
  }
}
static_assert(kSlice == 256, "a Q8K block (256) is one slice");

template <Kind kKind>
cudaError_t launch_norm(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor& a = *args.in[0];
  const int64_t rows = a.ne[1] * a.ne[2] * a.ne[3];
  if (a.ne[0] <= 0 || rows <= 0) return cudaSuccess;
  const float eps = param_f32(args, 0);  // eps is parameter 0 of all three ops
  const Tensor w = kKind == Kind::RmsMul ? *args.in[1] : a;
  const unsigned grid = static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20));
  // (more rows than Tuning::norm_slice_rows: a block of kFewRowThreads a row, below)
  if (rows < kFewRows && rows <= ctx.tuning.norm_slice_rows && a.ne[0] <= static_cast<int64_t>(kFewRowThreads) * kPer) {
    if (!overlap(a, *args.out[0]))
      return launch_k(norm_slice_kernel<kKind>, dim3(static_cast<unsigned>((a.ne[0] + kSlice - 1) / kSlice), static_cast<unsigned>(rows)),
                      dim3(kSlice), 0, ctx.stream, a, w, *args.out[0], eps, static_cast<int8_t*>(nullptr),
                      static_cast<void*>(nullptr));
    return launch_k(norm_row_kernel<kKind>, dim3(static_cast<unsigned>(rows)), dim3(kFewRowThreads), 0, ctx.stream, a, w,
                    *args.out[0], eps, static_cast<int8_t*>(nullptr), static_cast<void*>(nullptr));
  }
  norm_kernel<kKind><<<grid, rows < kFewRows ? kFewRowThreads : kThreads, 0, ctx.stream>>>(a, w, *args.out[0], eps);
  return cudaGetLastError();
}

const Registrar rms_norm_kernel(Op::RMS_NORM, {contract::check_rms_norm, no_scratch, launch_norm<Kind::Rms>});
const Registrar norm_kernel_reg(Op::NORM, {contract::check_norm, no_scratch, launch_norm<Kind::Norm>});
const Registrar rms_norm_mul_kernel(Op::RMS_NORM_MUL, {contract::check_rms_norm_mul, no_scratch, launch_norm<Kind::RmsMul>});

}  // namespace

bool norm_quant_supported(const NodeArgs& norm, QuantAct fmt) {
  if (norm.op != Op::RMS_NORM_MUL || fmt == QuantAct::None) return false;
  const Tensor &a = *norm.in[0], &o = *norm.out[0];
  const int64_t block = fmt == QuantAct::Q8A ? 32 : 256, rows = a.ne[1];
  return a.ne[2] == 1 && a.ne[3] == 1 && rows >= 1 && rows <= kFusedProducerMaxCols &&
         a.ne[0] <= static_cast<int64_t>(kFewRowThreads) * kPer && a.ne[0] % block == 0 && o.nb[0] == 4;
}

cudaError_t norm_launch_quantizing(const NodeArgs& norm, const LaunchContext& ctx, QuantAct fmt, uint8_t* act) {
  const Tensor &a = *norm.in[0], &w = *norm.in[1];
  const float eps = param_f32(norm, 0);
  const int64_t rows = a.ne[1];
  const size_t qs = (static_cast<size_t>(a.ne[0] * rows) + 255) & ~static_cast<size_t>(255);  // matvec_q.cuh qs_bytes
  auto* codes = reinterpret_cast<int8_t*>(act);
  void* scales = act + qs;
  // As launch_norm picks its kernel: rows up to Tuning::norm_slice_rows in slices (unless the
  // output aliases a), more rows (or an aliased output) a block each.
  if (!overlap(a, *norm.out[0]) && rows <= ctx.tuning.norm_slice_rows) {
    const dim3 grid(static_cast<unsigned>((a.ne[0] + kSlice - 1) / kSlice), static_cast<unsigned>(rows));
    if (fmt == QuantAct::Q8A)
      return launch_k(norm_slice_kernel<Kind::RmsMul, 1>, grid, dim3(kSlice), 0, ctx.stream, a, w, *norm.out[0], eps,
                      codes, scales);
    return launch_k(norm_slice_kernel<Kind::RmsMul, 2>, grid, dim3(kSlice), 0, ctx.stream, a, w, *norm.out[0], eps, codes,
                    scales);
  }
  const dim3 grid(static_cast<unsigned>(rows));
  if (fmt == QuantAct::Q8A)
    return launch_k(norm_row_kernel<Kind::RmsMul, 1>, grid, dim3(kFewRowThreads), 0, ctx.stream, a, w, *norm.out[0], eps,
                    codes, scales);
  return launch_k(norm_row_kernel<Kind::RmsMul, 2>, grid, dim3(kFewRowThreads), 0, ctx.stream, a, w, *norm.out[0], eps,
                  codes, scales);
}

}  // namespace minfer::cuda
