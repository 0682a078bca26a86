// Row gathers and scatters at runtime indices, as native/cpu/get_rows.cpp and copy.cpp:
// GET_ROWS: out[:, i, j, l] = a[:, idx[i, j or 0], j, l] as F32, for any dtype with a
//   dequantizer (quants.cuh); an index outside [0, a.ne[1]) is reported and that output row is
//   written as NaN.
// SET_ROWS: dst[:, idx[i, i2 % m2, i3 % m3], i2, i3] = src[:, i, i2, i3] (src F32; dst F32, F16,
//   BF16 or a quantized dtype written through quantize.cuh, rows of whole contiguous blocks). An
//   index outside [0, dst.ne[1]) is reported and skipped. When several src rows name the same
//   destination row, the last one wins (as on the CPU): a src row with a later duplicate is skipped.
// One block per row; every index is read from device memory and bounds-checked there.
#include <cmath>

#include "../cuda_util.cuh"
#include "../kernel.h"
#include "../quantize.cuh"
#include "../quants.cuh"

namespace minfer::cuda {
namespace {

using program::DType;
using program::dtype_name;
using program::Op;

constexpr int kThreads = 128;

unsigned grid_rows(int64_t rows) { return static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20)); }

// ---------------- GET_ROWS ----------------

const char* check_get_rows(const NodeArgs& args) {
  if (args.n_inputs != 2 || args.n_outputs != 1) return "get_rows takes 2 inputs and 1 output";
  const Tensor *a = args.in[0], *idx = args.in[1], *out = args.out[0];
  if (!has_dequant(a->dtype)) return "get_rows cannot read this dtype (no dequantizer)";
  const program::BlockLayout* l = program::block_layout(static_cast<int32_t>(a->dtype));
  if (!l || l->block_size <= 0 || a->ne[0] % l->block_size != 0)
    return "get_rows: a's rows are not a whole number of blocks";
  if (a->nb[0] != l->type_size) return "get_rows: a's rows must be contiguous";
  if (idx->dtype != DType::I32) return "get_rows: the index must be I32";
  if (idx->ne[2] != 1 || idx->ne[3] != 1) return "get_rows takes a 1-D or 2-D index";
  if (idx->ne[1] != 1 && idx->ne[1] != a->ne[2]) return "get_rows: index rows must match a's dim 2";
  if (out->dtype != DType::F32 || out->nb[0] != 4) return "get_rows: the output must be contiguous F32 rows";
  if (out->ne[0] != a->ne[0] || out->ne[1] != idx->ne[0] || out->ne[2] != a->ne[2] || out->ne[3] != a->ne[3])
    return "get_rows: the output shape is wrong";
  return nullptr;
}

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

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

const char* check_set_rows(const NodeArgs& args) {
  if (args.n_inputs != 3 || args.n_outputs != 1)
    return check_fail("set_rows: takes 3 inputs and 1 output, got %d and %d", args.n_inputs, args.n_outputs);
  const Tensor *d = args.out[0], *src = args.in[1], *idx = args.in[2];
  if (!is_float(d->dtype) && !qz_has_quantizer(d->dtype))
    return check_fail(
        "set_rows: dst must be F32, F16, BF16 or a dtype with a quantizer (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
        "Q4_K, Q5_K, Q6_K), got %s",
        dtype_name(d->dtype));
  if (args.in[0]->dtype != d->dtype) return check_fail("set_rows: the output must be dst (same dtype)");
  if (src->dtype != DType::F32) return check_fail("set_rows: src must be F32, got %s", dtype_name(src->dtype));
  if (idx->dtype != DType::I32) return check_fail("set_rows: the index must be I32, got %s", dtype_name(idx->dtype));
  if (d->ne[0] != src->ne[0])
    return check_fail("set_rows: src rows (%lld) must be as long as dst rows (%lld)", (long long)src->ne[0],
                      (long long)d->ne[0]);
  if (idx->ne[0] != src->ne[1]) return check_fail("set_rows: takes one index per src row");
  if (src->ne[2] != d->ne[2] || src->ne[3] != d->ne[3]) return check_fail("set_rows: src and dst differ in dims 2 and 3");
  if (idx->ne[1] <= 0 || idx->ne[2] <= 0 || idx->ne[3] != 1 || src->ne[2] % idx->ne[1] != 0 ||
      src->ne[3] % idx->ne[2] != 0)
    return check_fail("set_rows: the index does not broadcast over src's dims 2 and 3");
  if (qz_has_quantizer(d->dtype)) {
    const program::BlockLayout* l = program::block_layout(static_cast<int32_t>(d->dtype));
    if (d->ne[0] % l->block_size != 0)
      return check_fail("set_rows: %s destination rows (%lld elements) are not a whole number of blocks of %lld",
                        dtype_name(d->dtype), (long long)d->ne[0], (long long)l->block_size);
    if (d->nb[0] != l->type_size)
      return check_fail("set_rows: %s destination rows must be contiguous (nb[0] %lld, block size %d bytes)",
                        dtype_name(d->dtype), (long long)d->nb[0], l->type_size);
  }
  return nullptr;
}

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

const Registrar get_rows_kernel_reg(Op::GET_ROWS, {check_get_rows, no_scratch, launch_get_rows});
const Registrar set_rows_kernel_reg(Op::SET_ROWS, {check_set_rows, no_scratch, launch_set_rows});

}  // namespace
}  // namespace minfer::cuda
