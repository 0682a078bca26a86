// CPY and CONCAT, as native/cpu/copy.cpp.
// CPY converts a (F32/F16/BF16, or any plain dtype copied to the same dtype bit for bit) to the
// output's dtype, walking both tensors in row-major element order (so the shapes may differ when
// the element counts agree), with any strides. Quantized destinations (quantize.cuh) take rows of
// whole, contiguous blocks: one thread gathers the block's source elements and quantizes them.
// When a's rows are as long as the output's, a 2-D grid walks rows (y) and elements (x); otherwise
// each element works out its source coordinates from its linear index.
// CONCAT joins a and b (F32/F16/BF16/I32, same dtype) along dim 0-3.
// Their checks are the shared contracts (native/common/contract_copy.h).
#include "../cuda_util.cuh"
#include "../../common/contract_copy.h"
#include "../kernel.h"
#include "../quantize.cuh"

namespace minfer::cuda {
namespace {

using program::DType;
using program::Op;

constexpr int kThreads = 256;

__host__ __device__ inline int elem_size(DType t) { return t == DType::F32 || t == DType::I32 ? 4 : 2; }
bool is_quant_dst(DType t) { return qz_has_quantizer(t); }

// Copies one element of `es` bytes (2 or 4) bit for bit.
__device__ inline void copy_raw(uint8_t* dst, const uint8_t* src, int es) {
  if (es == 4) *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(src);
  else *reinterpret_cast<uint16_t*>(dst) = *reinterpret_cast<const uint16_t*>(src);
}

// The address of element `e` (row-major linear index) of t.
__device__ inline const uint8_t* elem_at(const Tensor& t, int64_t e) {
  const int64_t i0 = e % t.ne[0];
  e /= t.ne[0];
  const int64_t i1 = e % t.ne[1];
  e /= t.ne[1];
  const int64_t i2 = e % t.ne[2], i3 = e / t.ne[2];
  return t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

// Plain destinations whose rows are a's rows (a.ne[0] == o.ne[0]).
__global__ void cpy_rows_kernel(Tensor a, Tensor o, bool raw) {
  const int64_t ne0 = o.ne[0], rows = o.ne[1] * o.ne[2] * o.ne[3];
  const int es = elem_size(o.dtype);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t i1 = r % o.ne[1], i2 = (r / o.ne[1]) % o.ne[2], i3 = r / (o.ne[1] * o.ne[2]);
    const int64_t s1 = r % a.ne[1], s2 = (r / a.ne[1]) % a.ne[2], s3 = r / (a.ne[1] * a.ne[2]);
    uint8_t* dst = o.data + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3];
    const uint8_t* src = a.data + s1 * a.nb[1] + s2 * a.nb[2] + s3 * a.nb[3];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ne0; i += (int64_t)gridDim.x * blockDim.x) {
      if (raw) copy_raw(dst + i * o.nb[0], src + i * a.nb[0], es);
      else store_elem(dst + i * o.nb[0], o.dtype, load_elem(src + i * a.nb[0], a.dtype));
    }
  }
}

// Plain destinations, any shapes with the same element count.
__global__ void cpy_elems_kernel(Tensor a, Tensor o, bool raw) {
  const int64_t n = o.ne[0] * o.ne[1] * o.ne[2] * o.ne[3];
  const int es = elem_size(o.dtype);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    uint8_t* dst = const_cast<uint8_t*>(elem_at(o, e));
    const uint8_t* src = elem_at(a, e);
    if (raw) copy_raw(dst, src, es);
    else store_elem(dst, o.dtype, load_elem(src, a.dtype));
  }
}

// Quantized destinations: one thread per destination block.
__global__ void cpy_quant_kernel(Tensor a, Tensor o) {
  const int bs = qz_block_elems(o.dtype), bytes = qz_block_bytes(o.dtype);
  const int64_t per_row = o.ne[0] / bs, n_blocks = per_row * o.ne[1] * o.ne[2] * o.ne[3];
  float x[256];
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < n_blocks; b += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = b / per_row, j = b % per_row;
    const int64_t i1 = r % o.ne[1], i2 = (r / o.ne[1]) % o.ne[2], i3 = r / (o.ne[1] * o.ne[2]);
    // Source coordinates of the block's first element, then stepped in row-major order.
    int64_t lin = r * o.ne[0] + j * bs, s[4];
    s[0] = lin % a.ne[0];
    lin /= a.ne[0];
    s[1] = lin % a.ne[1];
    lin /= a.ne[1];
    s[2] = lin % a.ne[2];
    s[3] = lin / a.ne[2];
    for (int k = 0; k < bs; k++) {
      x[k] = load_elem(a.data + s[0] * a.nb[0] + s[1] * a.nb[1] + s[2] * a.nb[2] + s[3] * a.nb[3], a.dtype);
      if (++s[0] == a.ne[0]) {
        s[0] = 0;
        if (++s[1] == a.ne[1]) {
          s[1] = 0;
          if (++s[2] == a.ne[2]) {
            s[2] = 0;
            ++s[3];
          }
        }
      }
    }
    qz_quantize_block(o.dtype, x, o.data + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3] + j * bytes);
  }
}

unsigned grid_1d(int64_t n, int threads) {
  const int64_t g = ceil_div(n, threads);
  return static_cast<unsigned>(g < (1 << 20) ? g : (1 << 20));
}

cudaError_t launch_cpy(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &a = *args.in[0], &o = *args.out[0];
  const int64_t n = nelements(o);
  if (n <= 0) return cudaSuccess;
  if (is_quant_dst(o.dtype)) {
    constexpr int kQuantThreads = 64;
    const int64_t n_blocks = n / qz_block_elems(o.dtype);
    cpy_quant_kernel<<<grid_1d(n_blocks, kQuantThreads), kQuantThreads, 0, ctx.stream>>>(a, o);
    return cudaGetLastError();
  }
  const bool raw = a.dtype == o.dtype;
  if (a.ne[0] == o.ne[0]) {
    const int64_t rows = o.ne[1] * o.ne[2] * o.ne[3], gx = ceil_div(o.ne[0], kThreads);
    const dim3 grid(static_cast<unsigned>(gx < 1024 ? gx : 1024), static_cast<unsigned>(rows < 65535 ? rows : 65535));
    cpy_rows_kernel<<<grid, kThreads, 0, ctx.stream>>>(a, o, raw);
  } else {
    cpy_elems_kernel<<<grid_1d(n, kThreads), kThreads, 0, ctx.stream>>>(a, o, raw);
  }
  return cudaGetLastError();
}

// ---------------- CONCAT ----------------

__global__ void concat_kernel(Tensor a, Tensor b, Tensor o, int dim) {
  const int64_t ne0 = o.ne[0], rows = o.ne[1] * o.ne[2] * o.ne[3], a0 = a.ne[0];
  const int es = elem_size(o.dtype);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t i1 = r % o.ne[1], i2 = (r / o.ne[1]) % o.ne[2], i3 = r / (o.ne[1] * o.ne[2]);
    uint8_t* dst = o.data + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3];
    // For dim > 0 the whole row comes from one operand; b's coordinates are shifted along dim.
    const bool in_b = (dim == 1 && i1 >= a.ne[1]) || (dim == 2 && i2 >= a.ne[2]) || (dim == 3 && i3 >= a.ne[3]);
    const int64_t j1 = dim == 1 ? i1 - a.ne[1] : i1, j2 = dim == 2 ? i2 - a.ne[2] : i2, j3 = dim == 3 ? i3 - a.ne[3] : i3;
    const uint8_t* arow = a.data + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3];
    const uint8_t* brow = b.data + j1 * b.nb[1] + j2 * b.nb[2] + j3 * b.nb[3];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ne0; i += (int64_t)gridDim.x * blockDim.x) {
      const uint8_t* src;
      if (dim == 0) src = i < a0 ? arow + i * a.nb[0] : brow + (i - a0) * b.nb[0];
      else src = in_b ? brow + i * b.nb[0] : arow + i * a.nb[0];
      copy_raw(dst + i * o.nb[0], src, es);
    }
  }
}

cudaError_t launch_concat(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor& o = *args.out[0];
  const int64_t rows = o.ne[1] * o.ne[2] * o.ne[3];
  if (o.ne[0] <= 0 || rows <= 0) return cudaSuccess;
  const int64_t gx = ceil_div(o.ne[0], kThreads);
  const dim3 grid(static_cast<unsigned>(gx < 1024 ? gx : 1024), static_cast<unsigned>(rows < 65535 ? rows : 65535));
  concat_kernel<<<grid, kThreads, 0, ctx.stream>>>(*args.in[0], *args.in[1], o,
                                                   param_i32(args, program::param::CONCAT::dim));
  return cudaGetLastError();
}

// The contracts, with the quantized destinations quantize.cuh writes.
const Registrar cpy_kernel(Op::CPY, {contract::check_cpy<qz_has_quantizer>, no_scratch, launch_cpy});
const Registrar concat_kernel_reg(Op::CONCAT, {contract::check_concat, no_scratch, launch_concat});

}  // namespace
}  // namespace minfer::cuda
