// ATTENTION: out[:, h, j] = softmax_c(softcap(q[:, h, j] · k[:, h/g, c] * scale) + mask[c, j]) · v[:, h/g, c]
// with q F32 [hd, nHead, nQ], k F32/F16/BF16/Q8_0 [hd, nKvHead, nKv], v F32/F16/BF16/Q8_0
// [hdv, nKvHead, nKv] (any strides; each k/v row must be contiguous; a Q8_0 row is hd/32 blocks of
// {f16 d, int8 q[32]}, so its head size must be a multiple of 32), and as 4th input either a mask F32/F16
// [nKv, >= nQ] (-inf hides a cell) or spans I32 [2, nQ] (query j sees cells [start_j, end_j)).
// GQA: head h reads kv head h / (nHead / nKvHead). Output F32 [hdv, nHead, nQ]. These conditions
// are the op contract (native/common/contract_attention.h), the whole of this kernel's check.
//
// Each (head, query) is reduced in two passes over its own visible cells only, in ascending cell
// order: the scores of the visible cells into a buffer, then their maximum, the exponentials and
// their sum (vectorized over the buffer, the sum in double), then Σ e_c · v_c and one division.
// Batch invariance: every step depends only on the query's list of visible cells (hidden cells
// are skipped, not added as zeros), so the same query gives bit-identical output alone or in a
// batch, with any number of extra masked or out-of-span cells. Work is split over (query, head)
// pairs.
#include <cmath>
#include <cstdio>
#include <vector>

#include "../common/contract_attention.h"
#include "../common/fp16.h"
#include "kernel.h"

namespace minfer::cpu {

#define ATTN_ROW_FUNCS                                                                            \
  float dot(const float* q, const void* k, program::DType kt, int64_t n);                         \
  void axpby(float* acc, float a, const void* v, program::DType vt, float b, int64_t n);

#define ATTN_EW_FUNCS                      \
  float max_row(const float* x, int64_t n); \
  double exp_sub_sum_row(float* o, const float* x, float m, int64_t n);

namespace attn_scalar { ATTN_ROW_FUNCS }
namespace ew_scalar { ATTN_EW_FUNCS }
#if defined(__x86_64__) || defined(_M_X64)
namespace attn_avx2 {
ATTN_ROW_FUNCS
void dot4(const float* q, const void* const* k, program::DType kt, int64_t n, float* out);
void axpy4(float* acc, const void* const* v, program::DType vt, const float* b, int64_t n);
}  // namespace attn_avx2
namespace attn_avx512 {
ATTN_ROW_FUNCS
void dot4(const float* q, const void* const* k, program::DType kt, int64_t n, float* out);
void axpy4(float* acc, const void* const* v, program::DType vt, const float* b, int64_t n);
}  // namespace attn_avx512
namespace ew_avx2 { ATTN_EW_FUNCS }
namespace ew_avx512 { ATTN_EW_FUNCS }
#endif

namespace attn_scalar {
static inline float load(const void* p, program::DType t, int64_t i) {
  switch (t) {
    case program::DType::Q8_0: {
      const uint8_t* blk = static_cast<const uint8_t*>(p) + (i / 32) * 34;
      return fp16_to_f32(static_cast<uint16_t>(blk[0] | (blk[1] << 8))) * static_cast<float>(static_cast<int8_t>(blk[2 + i % 32]));
    }
    case program::DType::F16: return fp16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case program::DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
float dot(const float* q, const void* k, program::DType kt, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += static_cast<double>(q[i]) * load(k, kt, i);
  return static_cast<float>(s);
}
// acc = acc * a + v * b
void axpby(float* acc, float a, const void* v, program::DType vt, float b, int64_t n) {
  if (a == 1.0f) {
    for (int64_t i = 0; i < n; i++) acc[i] += load(v, vt, i) * b;
  } else {
    for (int64_t i = 0; i < n; i++) acc[i] = acc[i] * a + load(v, vt, i) * b;
  }
}
}  // namespace attn_scalar

namespace {

using program::DType;
using program::Op;
namespace P = program::param::ATTENTION;

struct RowFuncs {
  float (*dot)(const float*, const void*, DType, int64_t);
  void (*axpby)(float*, float, const void*, DType, float, int64_t);
  float (*max_row)(const float*, int64_t);
  double (*exp_sub_sum)(float*, const float*, float, int64_t);
  // Four rows at once, bit-identical to four dot / axpby(acc, 1, ·) calls (nullptr: not provided).
  void (*dot4)(const float*, const void* const*, DType, int64_t, float*);
  void (*axpy4)(float*, const void* const*, DType, const float*, int64_t);
};

void attend(const NodeArgs& args, const RowFuncs& f, int ith, int nth) {
  const Tensor *q = args.in[0], *k = args.in[1], *v = args.in[2], *m = args.in[3], *o = args.out[0];
  const float scale = param_f32(args, P::scale);
  const float softcap = param_f32(args, P::softcap);
  const int64_t hd = q->ne[0], hdv = v->ne[0], n_head = q->ne[1], n_q = q->ne[2];
  const int64_t n_kv = k->ne[2], group = n_head / k->ne[1];
  const bool spans = m->dtype == DType::I32;
  std::vector<float> qbuf(hd), acc(hdv), score(n_kv), ex(n_kv);
  std::vector<int64_t> cell(n_kv), vis_cell(n_kv);
  std::vector<float> vis_mv(n_kv);
  int64_t vis_j = -1, n_vis = 0;  // the visible cells (and mask values) of query vis_j

  int64_t t0, t1;
  split_range(n_head * n_q, ith, nth, &t0, &t1);
  for (int64_t t = t0; t < t1; t++) {
    const int64_t j = t / n_head, h = t % n_head, kvh = h / group;
    const uint8_t* qr = q->data + h * q->nb[1] + j * q->nb[2];
    for (int64_t i = 0; i < hd; i++) qbuf[i] = *reinterpret_cast<const float*>(qr + i * q->nb[0]);
    const uint8_t* kbase = k->data + kvh * k->nb[1];
    const uint8_t* vbase = v->data + kvh * v->nb[1];
    // Pass 1: the visible cells of query j (by the mask or span; shared by its heads, which are
    // consecutive in t), their dot products, then the scores; cells whose score is -inf drop out.
    if (j != vis_j) {
      vis_j = j;
      int64_t c0 = 0, c1 = n_kv;
      const uint8_t* mrow = nullptr;
      if (spans) {
        const uint8_t* sp = m->data + j * m->nb[1];
        c0 = *reinterpret_cast<const int32_t*>(sp);
        c1 = *reinterpret_cast<const int32_t*>(sp + m->nb[0]);
        if (c0 < 0 || c1 > n_kv || c0 > c1) {
          // A span outside [0, nKv) is a caller's bug: fail the execute, see no cells.
          report_kernel_error("attention: a query's span lies outside [0, nKv) or ends before it starts");
          c0 = c1 = 0;
        }
      } else {
        mrow = m->data + j * m->nb[1];
      }
      n_vis = 0;
      for (int64_t c = c0; c < c1; c++) {
        float mv = 0.0f;
        if (mrow) {
          const uint8_t* mp = mrow + c * m->nb[0];
          mv = m->dtype == DType::F16 ? fp16_to_f32(*reinterpret_cast<const uint16_t*>(mp))
                                      : *reinterpret_cast<const float*>(mp);
          if (mv == -INFINITY) continue;  // hidden: not part of this query's window
        }
        vis_mv[n_vis] = mv;
        vis_cell[n_vis++] = c;
      }
    }
    const int64_t n = n_vis;
    for (int64_t i = 0; i < n; i++) cell[i] = vis_cell[i];
    int64_t i = 0;
    if (f.dot4)
      for (; i + 4 <= n; i += 4) {
        const void* rows[4];
        for (int r = 0; r < 4; r++) rows[r] = kbase + cell[i + r] * k->nb[2];
        f.dot4(qbuf.data(), rows, k->dtype, hd, &score[i]);
      }
    for (; i < n; i++) score[i] = f.dot(qbuf.data(), kbase + cell[i] * k->nb[2], k->dtype, hd);
    int64_t nv = 0;
    for (i = 0; i < n; i++) {
      float s = score[i] * scale;
      if (softcap != 0.0f) s = softcap * std::tanh(s / softcap);
      s += vis_mv[i];
      if (s == -INFINITY) continue;
      score[nv] = s;
      cell[nv++] = cell[i];
    }
    // Pass 2: softmax weights, then the weighted sum of the values.
    for (i = 0; i < hdv; i++) acc[i] = 0.0f;
    double sum = 0.0;
    if (nv > 0) {
      const float mx = f.max_row(score.data(), nv);
      sum = f.exp_sub_sum(ex.data(), score.data(), mx, nv);
      i = 0;
      if (f.axpy4)
        for (; i + 4 <= nv; i += 4) {
          const void* rows[4];
          for (int r = 0; r < 4; r++) rows[r] = vbase + cell[i + r] * v->nb[2];
          f.axpy4(acc.data(), rows, v->dtype, &ex[i], hdv);
        }
      for (; i < nv; i++) f.axpby(acc.data(), 1.0f, vbase + cell[i] * v->nb[2], v->dtype, ex[i], hdv);
    }
    uint8_t* orow = o->data + h * o->nb[1] + j * o->nb[2];
    const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
    for (int64_t i = 0; i < hdv; i++) *reinterpret_cast<float*>(orow + i * o->nb[0]) = acc[i] * inv;
  }
}

void run_attention(const NodeArgs& args, int, int ith, int nth) {
#if defined(__x86_64__) || defined(_M_X64)
  static const RowFuncs avx512{attn_avx512::dot,     attn_avx512::axpby,          ew_avx512::max_row,
                               ew_avx512::exp_sub_sum_row, attn_avx512::dot4, attn_avx512::axpy4};
  static const RowFuncs avx2{attn_avx2::dot,     attn_avx2::axpby,          ew_avx2::max_row,
                             ew_avx2::exp_sub_sum_row, attn_avx2::dot4, attn_avx2::axpy4};
  if (args.simd == SimdLevel::AVX512) return attend(args, avx512, ith, nth);
  if (args.simd == SimdLevel::AVX2) return attend(args, avx2, ith, nth);
#endif
  static const RowFuncs scalar{attn_scalar::dot, attn_scalar::axpby, ew_scalar::max_row, ew_scalar::exp_sub_sum_row,
                               nullptr, nullptr};
  attend(args, scalar, ith, nth);
}

const Registrar attention_kernel(Op::ATTENTION, {contract::check_attention, no_scratch, 1, run_attention});

}  // namespace
}  // namespace minfer::cpu
