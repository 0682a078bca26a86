// Row gathers and scatters at runtime indices, as native/cpu/get_rows.cpp and copy.cpp:
// GET_ROWS: out[:, i, j, l] = a[:, idx[i, j or 0], j, l] as F32, for any dtype with a
//   dequantizer (quants.cuh); an index outside [0, a.ne[1]) is reported and that output row is
//   written as NaN.
// SET_ROWS: dst[:, idx[i, i2 % m2, i3 % m3], i2, i3] = src[:, i, i2, i3] (src F32; dst F32, F16,
//   BF16 or a quantized dtype written through quantize.cuh, rows of whole contiguous blocks). An
//   index outside [0, dst.ne[1]) is reported and skipped. When several src rows name the same
//   destination row, the last one wins (as on the CPU): a src row with a later duplicate is skipped.
// One block per row; every index is read from device memory and bounds-checked there.
// Their checks are the shared contracts (native/common/contract_rows.h).
#include <cmath>

#include "../cuda_util.cuh"
#include "../../common/contract_rows.h"
#include "../kernel.h"
#include "../quantize.cuh"
#include "../quants.cuh"

namespace minfer::cuda {
namespace {

using program::Op;

constexpr int kThreads = 128;

unsigned grid_rows(int64_t rows) { return static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20)); }

// ---------------- GET_ROWS ----------------

__global__ void get_rows_kernel(Tensor a, Tensor idx, Tensor out, DeviceError* err, int node) {
  pdl_begin();
  const int64_t n_idx = idx.ne[0], ne2 = a.ne[2], ne0 = a.ne[0];
  const int64_t total = n_idx * ne2 * a.ne[3];
  const int be = qblock_elems(a.dtype);
  for (int64_t r = blockIdx.x; r < total; r += gridDim.x) {
    const int64_t i = r % n_idx, j = (r / n_idx) % ne2, l = r / (n_idx * ne2);
    const int32_t id = *reinterpret_cast<const int32_t*>(idx.data + i * idx.nb[0] + (idx.ne[1] == 1 ? 0 : j) * idx.nb[1]);
    float* dst = reinterpret_cast<float*>(out.data + i * out.nb[1] + j * out.nb[2] + l * out.nb[3]);
    if (id < 0 || id >= a.ne[1]) {
      if (threadIdx.x == 0) report_error(err, node, id);
      for (int64_t c = threadIdx.x; c < ne0; c += blockDim.x) dst[c] = __int_as_float(0x7fc00000);
      continue;
    }
    const uint8_t* src = a.data + id * a.nb[1] + j * a.nb[2] + l * a.nb[3];
    if (be == 1) {
      for (int64_t c = threadIdx.x; c < ne0; c += blockDim.x) dst[c] = dequant_elem(a.dtype, src, c);
    } else {
      float v[32];
      for (int64_t c = (int64_t)threadIdx.x * 32; c < ne0; c += (int64_t)blockDim.x * 32) {
        dequant32(a.dtype, src, c, v);
        for (int k = 0; k < 32; k++) dst[c + k] = v[k];
      }
    }
  }
}

cudaError_t launch_get_rows(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &a = *args.in[0], &idx = *args.in[1], &out = *args.out[0];
  const int64_t total = idx.ne[0] * a.ne[2] * a.ne[3];
  if (total <= 0) return cudaSuccess;  // empty rows still have their indices checked, as on the CPU
  return launch_k(get_rows_kernel, dim3(grid_rows(total)), dim3(kThreads), 0, ctx.stream, a, idx, out, ctx.err, ctx.node);
}

// ---------------- SET_ROWS ----------------

__device__ inline int32_t index_at(const Tensor& idx, int64_t i, int64_t i2, int64_t i3) {
  return *reinterpret_cast<const int32_t*>(idx.data + i * idx.nb[0] + (i2 % idx.ne[1]) * idx.nb[1] +
                                           (i3 % idx.ne[2]) * idx.nb[2]);
}

__global__ void set_rows_kernel(Tensor d, Tensor src, Tensor idx, DeviceError* err, int node) {
  const int64_t ne0 = d.ne[0], n = src.ne[1], n2 = src.ne[2], n3 = src.ne[3], n_dst = d.ne[1];
  const bool quant = qz_has_quantizer(d.dtype);
  for (int64_t r = blockIdx.x; r < n * n2 * n3; r += gridDim.x) {
    const int64_t i = r % n, i2 = (r / n) % n2, i3 = r / (n * n2);
    const int64_t row = index_at(idx, i, i2, i3);
    if (row < 0 || row >= n_dst) {  // out of bounds: never written
      if (threadIdx.x == 0) report_error(err, node, row);
      continue;
    }
    // A later src row (same dims 2/3) with the same index overwrites this one: skip it.
    bool later = false;
    for (int64_t k = i + 1 + threadIdx.x; k < n && !later; k += blockDim.x) later = index_at(idx, k, i2, i3) == row;
    if (__syncthreads_or(later)) continue;
    const uint8_t* s = src.data + i * src.nb[1] + i2 * src.nb[2] + i3 * src.nb[3];
    uint8_t* o = d.data + row * d.nb[1] + i2 * d.nb[2] + i3 * d.nb[3];
    if (!quant) {
      for (int64_t c = threadIdx.x; c < ne0; c += blockDim.x)
        store_elem(o + c * d.nb[0], d.dtype, *reinterpret_cast<const float*>(s + c * src.nb[0]));
      continue;
    }
    const int bs = qz_block_elems(d.dtype), bytes = qz_block_bytes(d.dtype);
    float x[256];
    for (int64_t b = threadIdx.x; b < ne0 / bs; b += blockDim.x) {
      for (int k = 0; k < bs; k++) x[k] = *reinterpret_cast<const float*>(s + (b * bs + k) * src.nb[0]);
      qz_quantize_block(d.dtype, x, o + b * bytes);
    }
  }
}

cudaError_t launch_set_rows(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &d = *args.out[0], &src = *args.in[1], &idx = *args.in[2];
  const int64_t rows = src.ne[1] * src.ne[2] * src.ne[3];
  if (rows <= 0) return cudaSuccess;
  set_rows_kernel<<<grid_rows(rows), kThreads, 0, ctx.stream>>>(d, src, idx, ctx.err, ctx.node);
  return cudaGetLastError();
}

// The contracts, with the tables quants.cuh reads and the quantized rows quantize.cuh writes.
const Registrar get_rows_kernel_reg(Op::GET_ROWS, {contract::check_get_rows<has_dequant>, no_scratch, launch_get_rows});
const Registrar set_rows_kernel_reg(Op::SET_ROWS,
                                    {contract::check_set_rows<qz_has_quantizer>, no_scratch, launch_set_rows});

}  // namespace
}  // namespace minfer::cuda
