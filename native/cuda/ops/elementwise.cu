// Element-wise kernels, F32 only (as native/cpu/elementwise.cpp): ADD, MUL (b broadcast over a by
// ggml's rule: b.ne[i] divides a.ne[i]), SCALE (a*scale + bias), SILU, GELU (tanh approximation),
// TANH, GELU_ERF (the exact gelu, x Φ(x)), SWIGLU (silu(gate) * up), GEGLU (gelu(gate) * up). Any
// strides. The grid is 2-D: y walks rows (dims 1-3), x walks elements of a row, both grid-stride,
// so a row's coordinates are worked out once per thread.
#include <cmath>

#include "../cuda_util.cuh"
#include "../../common/contract_elementwise.h"
#include "../kernel.h"
#include "act_quant.cuh"
#include "fused.h"

namespace minfer::cuda {
namespace {

using program::DType;
using program::Op;

constexpr int kThreads = 256;

// ---- device code ----

__device__ inline float silu1(float x) { return x / (1.0f + expf(-x)); }
// gelu(x) = 0.5 x (1 + tanh(y)) = x * sigmoid(2y), y = sqrt(2/pi) (x + 0.044715 x^3).
__device__ inline float gelu1(float x) {
  const float y = 0.7978845608028654f * x * (1.0f + 0.044715f * x * x);
  return x / (1.0f + expf(-2.0f * y));
}
// The exact gelu, 0.5 x (1 + erf(x / sqrt 2)) = x Φ(x). normcdff (Φ, 5 ulp by CUDA's tables) is
// erfc(-x / sqrt 2) / 2 without rounding x / sqrt 2 first and without the cancellation of
// 1 + erff(...) for negative x, so the negative tail keeps its relative precision.
__device__ inline float gelu_erf1(float x) { return x * normcdff(x); }
// The gate's activation of SWIGLU (silu) or GEGLU (gelu).
template <bool kGelu>
__device__ inline float gate_act(float x) {
  return kGelu ? gelu1(x) : silu1(x);
}

__device__ inline const float* f32_at(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<const float*>(t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3]);
}
__device__ inline float* f32_mut(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<float*>(t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3]);
}

// Row r of a tensor shaped like `t` (dims 1-3 flattened) as coordinates.
__device__ inline void row_coords(const Tensor& t, int64_t r, int64_t* i1, int64_t* i2, int64_t* i3) {
  *i1 = r % t.ne[1];
  r /= t.ne[1];
  *i2 = r % t.ne[2];
  *i3 = r / t.ne[2];
}

template <bool kMul>
__global__ void binary_kernel(Tensor a, Tensor b, Tensor o) {
  pdl_begin();
  const int64_t ne0 = a.ne[0], rows = a.ne[1] * a.ne[2] * a.ne[3], bn = b.ne[0];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    int64_t i1, i2, i3;
    row_coords(a, r, &i1, &i2, &i3);
    const int64_t j1 = i1 % b.ne[1], j2 = i2 % b.ne[2], j3 = i3 % b.ne[3];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ne0; i += (int64_t)gridDim.x * blockDim.x) {
      const int64_t j = bn == ne0 ? i : (bn == 1 ? 0 : i % bn);
      const float x = *f32_at(a, i, i1, i2, i3), y = *f32_at(b, j, j1, j2, j3);
      *f32_mut(o, i, i1, i2, i3) = kMul ? x * y : x + y;
    }
  }
}

enum class Unary { Scale, Silu, Gelu, Tanh, GeluErf };

template <Unary kOp>
__global__ void unary_kernel(Tensor a, Tensor o, float s, float bias) {
  const int64_t ne0 = a.ne[0], rows = a.ne[1] * a.ne[2] * a.ne[3];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    int64_t i1, i2, i3;
    row_coords(a, r, &i1, &i2, &i3);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ne0; i += (int64_t)gridDim.x * blockDim.x) {
      const float x = *f32_at(a, i, i1, i2, i3);
      float y;
      if (kOp == Unary::Scale) y = x * s + bias;
      else if (kOp == Unary::Silu) y = silu1(x);
      else if (kOp == Unary::Gelu) y = gelu1(x);
      else if (kOp == Unary::Tanh) y = tanhf(x);
      else y = gelu_erf1(x);
      *f32_mut(o, i, i1, i2, i3) = y;
    }
  }
}

template <bool kGelu>
__global__ void gated_kernel(Tensor g, Tensor u, Tensor o) {
  pdl_begin();
  const int64_t ne0 = g.ne[0], rows = g.ne[1] * g.ne[2] * g.ne[3];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    int64_t i1, i2, i3;
    row_coords(g, r, &i1, &i2, &i3);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ne0; i += (int64_t)gridDim.x * blockDim.x)
      *f32_mut(o, i, i1, i2, i3) = gate_act<kGelu>(*f32_at(g, i, i1, i2, i3)) * *f32_at(u, i, i1, i2, i3);
  }
}

// SWIGLU / GEGLU of three contiguous tensors (a prompt's FFN: 512 × 18944 elements), four elements a
// thread a step with 16-byte loads: the strided kernel above works out 64-bit addresses of every
// element and measured 117 us for that shape on the H200, three times its memory time.
template <bool kGelu>
__global__ void gated_flat_kernel(const float4* g, const float4* u, float4* o,
                                  int64_t n4) {
  pdl_begin();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 a = g[i], b = u[i];
    o[i] = make_float4(gate_act<kGelu>(a.x) * b.x, gate_act<kGelu>(a.y) * b.y, gate_act<kGelu>(a.z) * b.z,
                       gate_act<kGelu>(a.w) * b.w);
  }
}

// Whether t's elements are one dense run of floats starting on a 16-byte boundary.
bool dense16(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data) % 16 == 0 && t.nb[0] == 4 && t.nb[1] == t.ne[0] * 4 &&
         t.nb[2] == t.nb[1] * t.ne[1] && t.nb[3] == t.nb[2] * t.ne[2];
}

// ---- launches ----

// The 2-D grid for `rows` rows of `ne0` elements; false when there is nothing to do.
bool row_grid(const Tensor& t, dim3* grid) {
  const int64_t ne0 = t.ne[0], rows = t.ne[1] * t.ne[2] * t.ne[3];
  if (ne0 <= 0 || rows <= 0) return false;
  const int64_t gx = ceil_div(ne0, kThreads);
  *grid = dim3(static_cast<unsigned>(gx < 1024 ? gx : 1024), static_cast<unsigned>(rows < 65535 ? rows : 65535));
  return true;
}

template <bool kMul>
cudaError_t launch_binary(const NodeArgs& args, const LaunchContext& ctx) {
  dim3 grid;
  if (!row_grid(*args.in[0], &grid)) return cudaSuccess;
  return launch_k(binary_kernel<kMul>, grid, dim3(kThreads), 0, ctx.stream, *args.in[0], *args.in[1], *args.out[0]);
}

template <Unary kOp>
cudaError_t launch_unary(const NodeArgs& args, const LaunchContext& ctx) {
  dim3 grid;
  if (!row_grid(*args.in[0], &grid)) return cudaSuccess;
  float s = 1.0f, bias = 0.0f;
  if (kOp == Unary::Scale) {
    s = param_f32(args, program::param::SCALE::scale);
    bias = param_f32(args, program::param::SCALE::bias);
  }
  unary_kernel<kOp><<<grid, kThreads, 0, ctx.stream>>>(*args.in[0], *args.out[0], s, bias);
  return cudaGetLastError();
}

template <bool kGelu>
cudaError_t launch_gated(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &g = *args.in[0], &u = *args.in[1], &o = *args.out[0];
  const int64_t n = g.ne[0] * g.ne[1] * g.ne[2] * g.ne[3];
  if (n > 0 && n % 4 == 0 && dense16(g) && dense16(u) && dense16(o)) {
    const int64_t n4 = n / 4, blocks = ceil_div(n4, kThreads);
    return launch_k(gated_flat_kernel<kGelu>, dim3(static_cast<unsigned>(blocks < 8192 ? blocks : 8192)), dim3(kThreads), 0,
                    ctx.stream, reinterpret_cast<const float4*>(g.data), reinterpret_cast<const float4*>(u.data),
                    reinterpret_cast<float4*>(o.data), n4);
  }
  dim3 grid;
  if (!row_grid(*args.in[0], &grid)) return cudaSuccess;
  return launch_k(gated_kernel<kGelu>, grid, dim3(kThreads), 0, ctx.stream, *args.in[0], *args.in[1], *args.out[0]);
}

const Registrar add_kernel(Op::ADD, {contract::check_add, no_scratch, launch_binary<false>});
const Registrar mul_kernel(Op::MUL, {contract::check_mul, no_scratch, launch_binary<true>});
const Registrar scale_kernel(Op::SCALE, {contract::check_scale, no_scratch, launch_unary<Unary::Scale>});
const Registrar silu_kernel(Op::SILU, {contract::check_silu, no_scratch, launch_unary<Unary::Silu>});
const Registrar gelu_kernel(Op::GELU, {contract::check_gelu, no_scratch, launch_unary<Unary::Gelu>});
const Registrar tanh_kernel(Op::TANH, {contract::check_tanh, no_scratch, launch_unary<Unary::Tanh>});
const Registrar gelu_erf_kernel(Op::GELU_ERF, {contract::check_gelu_erf, no_scratch, launch_unary<Unary::GeluErf>});
const Registrar swiglu_kernel_reg(Op::SWIGLU, {contract::check_gated<false>, no_scratch, launch_gated<false>});
const Registrar geglu_kernel_reg(Op::GEGLU, {contract::check_gated<true>, no_scratch, launch_gated<true>});

// SWIGLU or GEGLU of contiguous rows (row blockIdx.y) that also quantizes its output (fused with
// the mat-vec reading it, fused.h: row r is the matmul's activation column r): kQ 1 = Q8A (a warp's
// 32 elements are a block), 2 = Q8K (a thread block's 256), with the arithmetic of matvec_q.cuh's
// quantizing kernels.
template <bool kGelu, int kQ>
__global__ void __launch_bounds__(kThreads) gated_quant_kernel(Tensor g, Tensor u, Tensor o, int64_t ne0, int8_t* qs,
                                                               void* scales) {
  pdl_begin();
  static_assert(kThreads == 256, "a Q8K block is one thread block");
  __shared__ float wmax[kThreads / kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, r = blockIdx.y;
  qs += r * ne0;
  if (kQ == 1) scales = static_cast<float2*>(scales) + r * (ne0 / 32);
  else scales = static_cast<float*>(scales) + r * (ne0 / 256);
  float out = 0.0f;
  if (i < ne0) {
    out = gate_act<kGelu>(*reinterpret_cast<const float*>(g.data + r * g.nb[1] + i * 4)) *
          *reinterpret_cast<const float*>(u.data + r * u.nb[1] + i * 4);
    *reinterpret_cast<float*>(o.data + r * o.nb[1] + i * 4) = out;
  }
  // (ne0 is a multiple of the block: a block is either whole or wholly past the row)
  if (kQ == 1) {
    if (i - lane >= ne0) return;
    q8a_warp_block(out, qs + i, static_cast<float2*>(scales) + i / 32);
  } else {
    const float m = warp_max(fabsf(out));
    if (lane == 0) wmax[warp] = m;
    __syncthreads();
    if (static_cast<int64_t>(blockIdx.x) * kThreads >= ne0) return;
    float amax = 0.0f;
#pragma unroll
    for (int w = 0; w < kThreads / kWarp; w++) amax = fmaxf(amax, wmax[w]);
    const float d = q8k_scale(amax);
    qs[i] = q8k_code(out, d);
    if (threadIdx.x == 0) static_cast<float*>(scales)[blockIdx.x] = d;
  }
}

}  // namespace

bool gated_quant_supported(const NodeArgs& sw, QuantAct fmt) {
  if ((sw.op != Op::SWIGLU && sw.op != Op::GEGLU) || fmt == QuantAct::None) return false;
  const Tensor &g = *sw.in[0], &u = *sw.in[1], &o = *sw.out[0];
  const int64_t block = fmt == QuantAct::Q8A ? 32 : 256, rows = g.ne[1];
  // rows of packed floats, each row's stride a multiple of 4 bytes
  auto rows_ok = [&](const Tensor& t) {
    return t.ne[0] == g.ne[0] && t.ne[1] == rows && t.ne[2] == 1 && t.ne[3] == 1 && t.nb[0] == 4 && t.nb[1] % 4 == 0;
  };
  return rows_ok(g) && rows_ok(u) && rows_ok(o) && rows >= 1 && rows <= kFusedProducerMaxCols && g.ne[0] % block == 0 &&
         g.ne[0] <= (int64_t{1} << 30);
}

cudaError_t gated_launch_quantizing(const NodeArgs& sw, const LaunchContext& ctx, QuantAct fmt, uint8_t* act) {
  const Tensor &g = *sw.in[0], &u = *sw.in[1], &o = *sw.out[0];
  const int64_t ne0 = g.ne[0];
  if (ne0 == 0) return cudaSuccess;
  const int64_t rows = g.ne[1];
  const size_t qs = (static_cast<size_t>(ne0 * rows) + 255) & ~static_cast<size_t>(255);  // matvec_q.cuh qs_bytes
  const dim3 grid(static_cast<unsigned>(ceil_div(ne0, kThreads)), static_cast<unsigned>(rows));
  auto* codes = reinterpret_cast<int8_t*>(act);
  void* scales = act + qs;
  const bool gelu = sw.op == Op::GEGLU;
  if (fmt == QuantAct::Q8A)
    return gelu ? launch_k(gated_quant_kernel<true, 1>, grid, dim3(kThreads), 0, ctx.stream, g, u, o, ne0, codes, scales)
                : launch_k(gated_quant_kernel<false, 1>, grid, dim3(kThreads), 0, ctx.stream, g, u, o, ne0, codes, scales);
  return gelu ? launch_k(gated_quant_kernel<true, 2>, grid, dim3(kThreads), 0, ctx.stream, g, u, o, ne0, codes, scales)
              : launch_k(gated_quant_kernel<false, 2>, grid, dim3(kThreads), 0, ctx.stream, g, u, o, ne0, codes, scales);
}

}  // namespace minfer::cuda
