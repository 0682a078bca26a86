// Copies: CPY (convert between dtypes, any strides, walking source and destination in row-major
// element order), SET_ROWS (write rows of src into dst at runtime indices, every index
// bounds-checked), CONCAT (join two tensors along a dim). Their checks are the shared contracts
// (native/common/contract_copy.h, contract_rows.h).
#include <cstdio>
#include <vector>

#include "../common/contract_copy.h"
#include "../common/contract_rows.h"
#include "../common/fp16.h"
#include "kernel.h"
#include "quants.h"

namespace minfer::cpu {
namespace {

using program::DType;
using program::Op;

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
int64_t elem_size(DType t) { return t == DType::F32 || t == DType::I32 ? 4 : 2; }

inline float load_f(const uint8_t* p, DType t) {
  switch (t) {
    case DType::F16: return fp16_to_f32(*reinterpret_cast<const uint16_t*>(p));
    case DType::BF16: return bf16_to_f32(*reinterpret_cast<const uint16_t*>(p));
    default: return *reinterpret_cast<const float*>(p);
  }
}
inline void store_f(uint8_t* p, DType t, float x) {
  switch (t) {
    case DType::F16: *reinterpret_cast<uint16_t*>(p) = f32_to_fp16(x); break;
    case DType::BF16: *reinterpret_cast<uint16_t*>(p) = f32_to_bf16(x); break;
    default: *reinterpret_cast<float*>(p) = x; break;
  }
}

// Writes the n floats of `src` as dtype `t` to the row at `dst` (element stride nb0; quantized rows
// are whole blocks).
void store_row(uint8_t* dst, DType t, int64_t nb0, const float* src, int64_t n) {
  if (!is_float(t)) {
    quantize_row(t, src, dst, n);
  } else if (t == DType::F32 && nb0 == 4) {
    std::memcpy(dst, src, n * 4);
  } else {
    for (int64_t i = 0; i < n; i++) store_f(dst + i * nb0, t, src[i]);
  }
}

// ---------------- CPY ----------------

void run_cpy(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *o = args.out[0];
  const int64_t ne0 = o->ne[0];
  const int64_t rows = o->ne[1] * o->ne[2] * o->ne[3];
  int64_t r0, r1;
  split_range(rows, ith, nth, &r0, &r1);
  if (r0 >= r1) return;
  const bool raw = a->dtype == o->dtype;  // same plain dtype: copy bytes exactly
  const int64_t es = raw ? elem_size(a->dtype) : 0;
  std::vector<float> buf(raw ? 0 : ne0);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t i1 = r % o->ne[1], i2 = (r / o->ne[1]) % o->ne[2], i3 = r / (o->ne[1] * o->ne[2]);
    uint8_t* dst = o->data + i1 * o->nb[1] + i2 * o->nb[2] + i3 * o->nb[3];
    // The source coordinates of this row's first element, in row-major order.
    int64_t lin = r * ne0;
    int64_t s[4];
    s[0] = lin % a->ne[0];
    lin /= a->ne[0];
    s[1] = lin % a->ne[1];
    lin /= a->ne[1];
    s[2] = lin % a->ne[2];
    s[3] = lin / a->ne[2];
    if (s[0] == 0 && a->ne[0] == ne0) {
      // One source row: convert it in one go.
      const uint8_t* src = a->data + s[1] * a->nb[1] + s[2] * a->nb[2] + s[3] * a->nb[3];
      if (raw) {
        if (a->nb[0] == es && o->nb[0] == es) std::memcpy(dst, src, ne0 * es);
        else for (int64_t i = 0; i < ne0; i++) std::memcpy(dst + i * o->nb[0], src + i * a->nb[0], es);
      } else {
        for (int64_t i = 0; i < ne0; i++) buf[i] = load_f(src + i * a->nb[0], a->dtype);
        store_row(dst, o->dtype, o->nb[0], buf.data(), ne0);
      }
      continue;
    }
    for (int64_t i = 0; i < ne0; i++) {
      const uint8_t* src = a->data + s[0] * a->nb[0] + s[1] * a->nb[1] + s[2] * a->nb[2] + s[3] * a->nb[3];
      if (raw) std::memcpy(dst + i * o->nb[0], src, es);
      else buf[i] = load_f(src, a->dtype);
      if (++s[0] == a->ne[0]) {
        s[0] = 0;
        if (++s[1] == a->ne[1]) {
          s[1] = 0;
          if (++s[2] == a->ne[2]) {
            s[2] = 0;
            ++s[3];
          }
        }
      }
    }
    if (!raw) store_row(dst, o->dtype, o->nb[0], buf.data(), ne0);
  }
}

// ---------------- SET_ROWS ----------------
// Inputs (dst, src, idx); the output aliases dst. dst [ne0, nRows, n2, n3] (F32/F16/BF16 or any
// dtype quantize_row writes, rows of whole blocks),
// src F32 [ne0, n, n2, n3], idx I32 [n, m2, m3] with m2 | n2 and m3 | n3 (ggml's broadcast):
// dst[:, idx[i, i2 % m2, i3 % m3], i2, i3] = src[:, i, i2, i3].

// Each destination row belongs to one thread (by its index), so two src rows with the same index
// never race: the later src row wins, deterministically. An index outside [0, dst.ne[1]) is
// skipped (nothing is written for it) and reported through report_kernel_error (by thread 0,
// which sees every index, once per run: the executor keeps the first report).
void run_set_rows(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *d = args.out[0], *src = args.in[1], *idx = args.in[2];
  const int64_t ne0 = d->ne[0], n = src->ne[1], n2 = src->ne[2], n3 = src->ne[3], n_dst = d->ne[1];
  std::vector<float> buf(src->nb[0] == 4 ? 0 : ne0);
  bool reported = false;
  for (int64_t i3 = 0; i3 < n3; i3++) {
    for (int64_t i2 = 0; i2 < n2; i2++) {
      for (int64_t i = 0; i < n; i++) {
        const int64_t row = *reinterpret_cast<const int32_t*>(idx->data + i * idx->nb[0] + (i2 % idx->ne[1]) * idx->nb[1] +
                                                              (i3 % idx->ne[2]) * idx->nb[2]);
        if (row < 0 || row >= n_dst) {  // out of bounds: never written
          if (ith == 0 && !reported) {
            reported = true;
            char msg[200];
            std::snprintf(msg, sizeof msg,
                          "set_rows: index %lld of src row %lld (dims 2/3: %lld, %lld) is outside dst's %lld rows",
                          (long long)row, (long long)i, (long long)i2, (long long)i3, (long long)n_dst);
            report_kernel_error(msg);
          }
          continue;
        }
        if ((row + n_dst * (i2 + n2 * i3)) % nth != ith) continue;
        const uint8_t* s = src->data + i * src->nb[1] + i2 * src->nb[2] + i3 * src->nb[3];
        const float* sf = reinterpret_cast<const float*>(s);
        if (!buf.empty()) {
          for (int64_t k = 0; k < ne0; k++) buf[k] = *reinterpret_cast<const float*>(s + k * src->nb[0]);
          sf = buf.data();
        }
        store_row(d->data + row * d->nb[1] + i2 * d->nb[2] + i3 * d->nb[3], d->dtype, d->nb[0], sf, ne0);
      }
    }
  }
}

// ---------------- CONCAT ----------------

void run_concat(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *b = args.in[1], *o = args.out[0];
  const int dim = param_i32(args, program::param::CONCAT::dim);
  const int64_t es = elem_size(o->dtype);
  int64_t r0, r1;
  split_range(o->ne[1] * o->ne[2] * o->ne[3], ith, nth, &r0, &r1);
  auto copy = [&](uint8_t* dst, const Tensor* t, const uint8_t* src, int64_t n) {
    if (t->nb[0] == es && o->nb[0] == es) std::memcpy(dst, src, n * es);
    else for (int64_t i = 0; i < n; i++) std::memcpy(dst + i * o->nb[0], src + i * t->nb[0], es);
  };
  for (int64_t r = r0; r < r1; r++) {
    int64_t c[4] = {0, r % o->ne[1], (r / o->ne[1]) % o->ne[2], r / (o->ne[1] * o->ne[2])};
    uint8_t* dst = o->data + c[1] * o->nb[1] + c[2] * o->nb[2] + c[3] * o->nb[3];
    if (dim == 0) {
      copy(dst, a, a->data + c[1] * a->nb[1] + c[2] * a->nb[2] + c[3] * a->nb[3], a->ne[0]);
      copy(dst + a->ne[0] * o->nb[0], b, b->data + c[1] * b->nb[1] + c[2] * b->nb[2] + c[3] * b->nb[3], b->ne[0]);
    } else {
      const Tensor* t = a;
      if (c[dim] >= a->ne[dim]) {
        c[dim] -= a->ne[dim];
        t = b;
      }
      copy(dst, t, t->data + c[1] * t->nb[1] + c[2] * t->nb[2] + c[3] * t->nb[3], o->ne[0]);
    }
  }
}

// The contracts, with the quantized destinations quantize_row writes.
const Registrar cpy_kernel(Op::CPY, {contract::check_cpy<has_quantize>, no_scratch, 1, run_cpy});
const Registrar set_rows_kernel(Op::SET_ROWS, {contract::check_set_rows<has_quantize>, no_scratch, 1, run_set_rows});
const Registrar concat_kernel(Op::CONCAT, {contract::check_concat, no_scratch, 1, run_concat});

}  // namespace
}  // namespace minfer::cpu
