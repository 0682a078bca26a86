// MUL_MAT, MUL_MAT_ADD, MUL_MAT_MULTI and MUL_MAT_ID.
//
// Every variant runs in two steps (phases with a barrier between them):
//   1. the activations (b / x; F32, F16 or BF16, any strides — rows with an element stride, as
//      in a transposed view, are gathered first) are converted row by row into this node's
//      scratch in the weight type's activation format (f32 for F32/F16/BF16 weights, int8
//      blocks of 32 or 256 for the quantized types, see quants_internal.h), split over threads
//      by row;
//   2. dot products, split over threads by output row (weight row) — or by column when there are
//      too few rows to go round. The loop is tiled: a tile of weight rows (sized to stay in L1/L2)
//      is run against groups of up to q::kMaxCols columns, each vec_dot call decoding a weight
//      block once for all columns of the group.
// The vec_dot of the node's SIMD level (args.simd) is chosen once per call; baseline file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "../common/contract_matmul.h"
#include "../common/fp16.h"
#include "kernel.h"
#include "matmul_internal.h"
#include "quants.h"
#include "quants_internal.h"

namespace minfer::cpu {

using program::DType;
using program::Op;

namespace mm {

size_t align64(size_t x) { return (x + 63) & ~static_cast<size_t>(63); }

// Converts row (i1, i2, i3) of b into `fmt` at dst; tmp holds k floats for F16/BF16 input or
// strided rows (gathered with b->nb[0]).
void convert_row(const Tensor* b, int64_t i1, int64_t i2, int64_t i3, q::ActFormat fmt, SimdLevel level, void* dst,
                 float* tmp) {
  const int64_t k = b->ne[0];
  const uint8_t* src = b->data + i1 * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
  const int64_t es = b->dtype == DType::F32 ? 4 : 2;
  const int64_t s0 = b->nb[0];
  const float* x = tmp;
  if (s0 == es) {
    if (b->dtype == DType::F32) x = reinterpret_cast<const float*>(src);
    else dequantize_row(b->dtype, src, tmp, k);
  } else if (b->dtype == DType::F32) {
    for (int64_t i = 0; i < k; i++) std::memcpy(&tmp[i], src + i * s0, 4);
  } else {
    const bool bf = b->dtype == DType::BF16;
    for (int64_t i = 0; i < k; i++) {
      uint16_t h;
      std::memcpy(&h, src + i * s0, 2);
      tmp[i] = bf ? bf16_to_f32(h) : fp16_to_f32(h);
    }
  }
  q::quantize_act(fmt, level, x, dst, k);
}

void tile_rows_cols(const TileJob& job, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (r0 >= r1 || c0 >= c1) return;
  if (job.gemm && c1 - c0 >= q::kGemmMinCols) {
    job.gemm(job.k, job.w, job.w_nb1, r0, r1, job.act, job.act_stride, c0, c1, job.out_col, job.ctx);
    return;
  }
  // Weight rows per tile: ~48 KiB of weights (reused across the column groups from L1/L2).
  const int64_t mr = std::max<int64_t>(1, std::min<int64_t>(256, (48 << 10) / std::max<size_t>(1, job.w_row_bytes)));
  float tmp[q::kMaxCols];
  float* outs[q::kMaxCols];
  for (int64_t rb = r0; rb < r1; rb += mr) {
    const int64_t re = std::min(rb + mr, r1);
    for (int64_t cb = c0; cb < c1; cb += q::kMaxCols) {
      const int nc = static_cast<int>(std::min<int64_t>(q::kMaxCols, c1 - cb));
      for (int c = 0; c < nc; c++) outs[c] = job.out_col(job.ctx, cb + c);
      const uint8_t* act = job.act + static_cast<size_t>(cb) * job.act_stride;
      for (int64_t r = rb; r < re; r++) {
        job.dot(job.k, job.w + r * job.w_nb1, act, job.act_stride, nc, tmp);
        for (int c = 0; c < nc; c++) outs[c][r] = tmp[c];
      }
    }
  }
}

// The thread's share of an m × n job: rows when there are enough, else columns.
void split_job(int64_t m, int64_t n, int ith, int nth, int64_t* r0, int64_t* r1, int64_t* c0, int64_t* c1) {
  if (m >= 8 * nth || n < nth) {
    split_range(m, ith, nth, r0, r1);
    *c0 = 0;
    *c1 = n;
  } else {
    split_range(n, ith, nth, c0, c1);
    *r0 = 0;
    *r1 = m;
  }
}

// Panel-GEMM work handed out dynamically: a counter in the node's scratch (zeroed by thread 0 in
// phase 0, before the barrier) gives each thread its next 32-row panel, so a thread that runs
// slower (or is descheduled on a busy machine) does not hold the other back.
int64_t next_unit(int64_t* counter) { return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }
void reset_units(int64_t* counter) { __atomic_store_n(counter, 0, __ATOMIC_RELAXED); }

}  // namespace mm

namespace {

using namespace mm;

// ================================================================================================
// MUL_MAT: out[m, n, i2, i3] = Σ_k a[k, m, i2/r2, i3/r3] · b[k, n, i2, i3]

// The shared contract (native/common/contract_matmul.h) with the weight dtypes this backend's
// vec_dot / GEMM kernels implement.
bool weight_supported(DType t) { return q::weight_traits(t).supported; }

const char* check_mul_mat(const program::NodeView& args) { return contract::check_mul_mat(args, weight_supported); }

// MUL_MAT_ADD: out = mul_mat(a, b) + c, c F32 broadcast over out as ADD's b (any strides). The
// product is rounded to f32 first (run_mul_mat writes it), then c is added in place by the thread
// that computed each block: bit for bit MUL_MAT followed by ADD.
const char* check_mul_mat_add(const program::NodeView& args) {
  return contract::check_mul_mat_add(args, weight_supported);
}

struct MulMatLayout {
  q::ActFormat fmt;
  size_t row_bytes;  // one converted activation row
  int64_t n_rows;    // b rows (ne1·ne2·ne3)
  size_t unit_off;   // panel counter (64 bytes)
  size_t tmp_off;    // per-thread f32 row buffers
};

MulMatLayout mul_mat_layout(const Tensor* a, const Tensor* b) {
  MulMatLayout l;
  l.fmt = q::weight_traits(a->dtype).act;
  l.row_bytes = q::act_row_bytes(l.fmt, b->ne[0]);
  l.n_rows = b->ne[1] * b->ne[2] * b->ne[3];
  l.unit_off = align64(l.row_bytes * static_cast<size_t>(l.n_rows));
  l.tmp_off = l.unit_off + 64;
  return l;
}

size_t scratch_mul_mat(const NodeArgs& args, int n_threads) {
  const MulMatLayout l = mul_mat_layout(args.in[0], args.in[1]);
  return l.tmp_off + static_cast<size_t>(n_threads) * align64(static_cast<size_t>(args.in[1]->ne[0]) * 4) + 64;
}

uint8_t* aligned_scratch(uint8_t* p) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 63) & ~static_cast<uintptr_t>(63));
}

void convert_rows(const Tensor* b, q::ActFormat fmt, size_t row_bytes, SimdLevel level, uint8_t* dst, float* tmp,
                  int ith, int nth) {
  const int64_t n1 = b->ne[1], n2 = b->ne[2];
  const int64_t nrows = n1 * n2 * b->ne[3];
  int64_t r0, r1;
  split_range(nrows, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t i1 = r % n1, i2 = (r / n1) % n2, i3 = r / (n1 * n2);
    convert_row(b, i1, i2, i3, fmt, level, dst + static_cast<size_t>(r) * row_bytes, tmp);
  }
}

struct PlaneCtx {
  uint8_t* base;  // out data at [0, 0, i2, i3]
  int64_t nb1;
};
float* plane_col(const void* ctx, int64_t c) {
  const auto* p = static_cast<const PlaneCtx*>(ctx);
  return reinterpret_cast<float*>(p->base + c * p->nb1);
}

// Runs weight `a` (any dims 2/3, broadcast) against converted activations of b's shape.
void mul_mat_compute(const Tensor* a, const Tensor* out, int64_t b1, int64_t b2, int64_t b3, const uint8_t* act,
                     size_t row_bytes, const NodeArgs& args, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const SimdLevel level = args.simd;
  const q::VecDotFn dot = q::vec_dot_for(a->dtype, level);
  const q::GemmFn gemm = gemm_of(args, a->dtype);
  const q::WeightTraits& tr = q::weight_traits(a->dtype);
  const int64_t rat2 = b2 / a->ne[2], rat3 = b3 / a->ne[3];
  for (int64_t i3 = 0; i3 < b3; i3++) {
    for (int64_t i2 = 0; i2 < b2; i2++) {
      PlaneCtx pc{out->data + i2 * out->nb[2] + i3 * out->nb[3], out->nb[1]};
      TileJob job;
      job.dot = dot;
      job.gemm = gemm;
      job.k = a->ne[0];
      job.w = a->data + (i2 / rat2) * a->nb[2] + (i3 / rat3) * a->nb[3];
      job.w_nb1 = a->nb[1];
      job.w_row_bytes = static_cast<size_t>(a->ne[0] / tr.block) * tr.type_size;
      job.act = act + static_cast<size_t>((i3 * b2 + i2) * b1) * row_bytes;
      job.act_stride = row_bytes;
      job.out_col = plane_col;
      job.ctx = &pc;
      tile_rows_cols(job, r0, r1, c0, c1);
    }
  }
}

void run_mul_mat(const NodeArgs& args, int phase, int ith, int nth) {
  const Tensor* a = args.in[0];
  const Tensor* b = args.in[1];
  const MulMatLayout l = mul_mat_layout(a, b);
  uint8_t* scratch = aligned_scratch(args.scratch);
  int64_t* units = reinterpret_cast<int64_t*>(scratch + l.unit_off);
  if (phase == 0) {
    if (ith == 0) reset_units(units);
    float* tmp = reinterpret_cast<float*>(scratch + l.tmp_off + static_cast<size_t>(ith) * align64(b->ne[0] * 4));
    convert_rows(b, l.fmt, l.row_bytes, args.simd, scratch, tmp, ith, nth);
    return;
  }
  const Tensor* c = args.op == Op::MUL_MAT_ADD ? args.in[2] : nullptr;  // MUL_MAT_ADD's addend
  const int64_t m = a->ne[1], n = b->ne[1], pr = q::kGemmPanelRows;
  if (gemm_of(args, a->dtype) && n >= q::kGemmMinCols && m >= pr * nth) {
    for (int64_t p = next_unit(units); p * pr < m; p = next_unit(units)) {
      const int64_t pe = std::min(m, (p + 1) * pr);
      mul_mat_compute(a, args.out[0], n, b->ne[2], b->ne[3], scratch, l.row_bytes, args, p * pr, pe, 0, n);
      if (c) add_c(c, args.out[0], p * pr, pe, 0, n);
    }
    return;
  }
  int64_t r0, r1, c0, c1;
  split_job(m, n, ith, nth, &r0, &r1, &c0, &c1);
  mul_mat_compute(a, args.out[0], n, b->ne[2], b->ne[3], scratch, l.row_bytes, args, r0, r1, c0, c1);
  if (c) add_c(c, args.out[0], r0, r1, c0, c1);
}

const Registrar mul_mat_kernel(Op::MUL_MAT, {check_mul_mat, scratch_mul_mat, 2, run_mul_mat});
const Registrar mul_mat_add_kernel(Op::MUL_MAT_ADD, {check_mul_mat_add, scratch_mul_mat, 2, run_mul_mat});

// ================================================================================================
// MUL_MAT_MULTI: inputs x, w1..wn (2-D weights sharing x's k), optionally c1..cn;
// out_i = mul_mat(w_i, x) [+ c_i]. x is converted once per distinct activation format among the
// weights (usually one); each c_i (F32, broadcast over out_i as ADD's b) is added in place by the
// thread that computed a panel / row block of out_i, right after it, as MUL_MAT_ADD does.

using contract::mul_mat_multi_addend;

const char* check_mul_mat_multi(const program::NodeView& args) {
  return contract::check_mul_mat_multi(args, weight_supported);
}

struct MultiLayout {
  int n_fmt;
  q::ActFormat fmts[3];
  size_t off[3];        // scratch offset of each format's rows
  size_t row_bytes[3];
  int fmt_of[3];        // weight i → format index
  size_t unit_off;      // panel counter (64 bytes)
  size_t tmp_off;
};

MultiLayout multi_layout(const NodeArgs& args) {
  MultiLayout l{};
  const Tensor* x = args.in[0];
  const int64_t nrows = x->ne[1] * x->ne[2] * x->ne[3];
  size_t off = 0;
  for (int i = 0; i < args.n_outputs; i++) {
    const q::ActFormat f = q::weight_traits(args.in[1 + i]->dtype).act;
    int j = 0;
    while (j < l.n_fmt && l.fmts[j] != f) j++;
    if (j == l.n_fmt) {
      l.fmts[j] = f;
      l.row_bytes[j] = q::act_row_bytes(f, x->ne[0]);
      l.off[j] = off;
      off = align64(off + l.row_bytes[j] * static_cast<size_t>(nrows));
      l.n_fmt++;
    }
    l.fmt_of[i] = j;
  }
  l.unit_off = off;
  l.tmp_off = off + 64;
  return l;
}

size_t scratch_mul_mat_multi(const NodeArgs& args, int n_threads) {
  const MultiLayout l = multi_layout(args);
  return l.tmp_off + static_cast<size_t>(n_threads) * align64(static_cast<size_t>(args.in[0]->ne[0]) * 4) + 64;
}

void run_mul_mat_multi(const NodeArgs& args, int phase, int ith, int nth) {
  const Tensor* x = args.in[0];
  const MultiLayout l = multi_layout(args);
  uint8_t* scratch = aligned_scratch(args.scratch);
  int64_t* units = reinterpret_cast<int64_t*>(scratch + l.unit_off);
  if (phase == 0) {
    if (ith == 0) reset_units(units);
    float* tmp = reinterpret_cast<float*>(scratch + l.tmp_off + static_cast<size_t>(ith) * align64(x->ne[0] * 4));
    for (int j = 0; j < l.n_fmt; j++)
      convert_rows(x, l.fmts[j], l.row_bytes[j], args.simd, scratch + l.off[j], tmp, ith, nth);
    return;
  }
  const int nw = args.n_outputs;
  const int64_t n = x->ne[1], pr = q::kGemmPanelRows;
  int64_t total = 0, panels = 0;
  bool all_gemm = n >= q::kGemmMinCols;
  for (int i = 0; i < nw; i++) {
    total += args.in[1 + i]->ne[1];
    panels += (args.in[1 + i]->ne[1] + pr - 1) / pr;
    all_gemm = all_gemm && gemm_of(args, args.in[1 + i]->dtype) != nullptr;
  }
  if (all_gemm && total >= pr * nth) {
    // Units: the 32-row panels of each weight in turn.
    for (int64_t p = next_unit(units); p < panels; p = next_unit(units)) {
      int64_t rest = p;
      for (int i = 0; i < nw; i++) {
        const Tensor* w = args.in[1 + i];
        const int64_t np = (w->ne[1] + pr - 1) / pr;
        if (rest < np) {
          const int f = l.fmt_of[i];
          const int64_t pe = std::min(w->ne[1], (rest + 1) * pr);
          mul_mat_compute(w, args.out[i], n, x->ne[2], x->ne[3], scratch + l.off[f], l.row_bytes[f], args,
                          rest * pr, pe, 0, n);
          if (const int ci = mul_mat_multi_addend(args, i)) add_c(args.in[ci], args.out[i], rest * pr, pe, 0, n);
          break;
        }
        rest -= np;
      }
    }
    return;
  }
  // Rows of all weights, concatenated, split over threads (columns when there are few rows).
  int64_t r0, r1, c0, c1;
  split_job(total, n, ith, nth, &r0, &r1, &c0, &c1);
  int64_t base = 0;
  for (int i = 0; i < nw; i++) {
    const Tensor* w = args.in[1 + i];
    const int64_t m = w->ne[1];
    const int64_t lo = std::max<int64_t>(r0, base) - base, hi = std::min<int64_t>(r1, base + m) - base;
    if (lo < hi) {
      const int f = l.fmt_of[i];
      mul_mat_compute(w, args.out[i], n, x->ne[2], x->ne[3], scratch + l.off[f], l.row_bytes[f], args, lo, hi, c0,
                      c1);
      if (const int ci = mul_mat_multi_addend(args, i)) add_c(args.in[ci], args.out[i], lo, hi, c0, c1);
    }
    base += m;
  }
}

const Registrar mul_mat_multi_kernel(Op::MUL_MAT_MULTI, {check_mul_mat_multi, scratch_mul_mat_multi, 2, run_mul_mat_multi});

// ================================================================================================
// MUL_MAT_ID: experts a [k, m, nE], b [k, 1 or nUsed, nTok] (F32/F16/BF16), ids I32 [nUsed, nTok]
//   out[:, e, t] = a[:, :, ids[e, t]]ᵀ · b[:, e or 0, t]
// Phase 0 (thread 0): group the (e, t) pairs by expert into scratch (a counting sort), so each
//   expert's columns are contiguous; an id outside [0, nE) is reported through
//   report_kernel_error (the executor fails the execute with OUT_OF_RANGE) and its output column
//   is filled with NaN instead of being computed — no out-of-bounds read happens.
// Phase 1: convert the b rows of every valid pair into its grouped slot.
// Phase 2: per expert, the tiled matmul over its slots; threads split the m rows.

const char* check_mul_mat_id(const program::NodeView& args) {
  return contract::check_mul_mat_id(args, weight_supported);
}

struct IdLayout {
  int64_t n_exp, n_used, n_tok, n_pairs;
  q::ActFormat fmt;
  size_t row_bytes;
  // int32 arrays: offsets[n_exp + 1], slot_pair[n_pairs] (pair index e + n_used·t), plus
  // n_valid and n_invalid at the end.
  size_t off_offsets, off_slot_pair, off_counts, off_act, off_tmp;
};

IdLayout id_layout(const NodeArgs& args) {
  IdLayout l;
  const Tensor* a = args.in[0];
  const Tensor* ids = args.in[2];
  l.n_exp = a->ne[2];
  l.n_used = ids->ne[0];
  l.n_tok = ids->ne[1];
  l.n_pairs = l.n_used * l.n_tok;
  l.fmt = q::weight_traits(a->dtype).act;
  l.row_bytes = q::act_row_bytes(l.fmt, a->ne[0]);
  l.off_offsets = 0;
  l.off_slot_pair = align64(static_cast<size_t>(l.n_exp + 1) * 4);
  l.off_counts = l.off_slot_pair + align64(static_cast<size_t>(l.n_pairs) * 4);
  l.off_act = l.off_counts + 64;
  l.off_tmp = align64(l.off_act + l.row_bytes * static_cast<size_t>(l.n_pairs));
  return l;
}

size_t scratch_mul_mat_id(const NodeArgs& args, int n_threads) {
  const IdLayout l = id_layout(args);
  return l.off_tmp + static_cast<size_t>(n_threads) * align64(static_cast<size_t>(args.in[0]->ne[0]) * 4) + 64;
}

inline int32_t read_id(const Tensor* ids, int64_t e, int64_t t) {
  int32_t v;
  std::memcpy(&v, ids->data + e * ids->nb[0] + t * ids->nb[1], 4);
  return v;
}

struct IdCtx {
  const Tensor* out;
  const int32_t* slot_pair;
  int64_t n_used;
  int64_t slot0;
};
float* id_col(const void* ctx, int64_t c) {
  const auto* p = static_cast<const IdCtx*>(ctx);
  const int32_t pair = p->slot_pair[p->slot0 + c];
  const int64_t e = pair % p->n_used, t = pair / p->n_used;
  return reinterpret_cast<float*>(p->out->data + e * p->out->nb[1] + t * p->out->nb[2]);
}

void run_mul_mat_id(const NodeArgs& args, int phase, int ith, int nth) {
  const Tensor* a = args.in[0];
  const Tensor* b = args.in[1];
  const Tensor* ids = args.in[2];
  const Tensor* out = args.out[0];
  const IdLayout l = id_layout(args);
  uint8_t* scratch = aligned_scratch(args.scratch);
  auto* offsets = reinterpret_cast<int32_t*>(scratch + l.off_offsets);
  auto* slot_pair = reinterpret_cast<int32_t*>(scratch + l.off_slot_pair);
  auto* counts = reinterpret_cast<int32_t*>(scratch + l.off_counts);  // [0] valid, [1] invalid
  uint8_t* act = scratch + l.off_act;

  if (phase == 0) {
    if (ith != 0) return;
    for (int64_t x = 0; x <= l.n_exp; x++) offsets[x] = 0;
    int32_t invalid = 0;
    for (int64_t t = 0; t < l.n_tok; t++)
      for (int64_t e = 0; e < l.n_used; e++) {
        const int32_t id = read_id(ids, e, t);
        if (id < 0 || id >= l.n_exp) invalid++;
        else offsets[id + 1]++;
      }
    for (int64_t x = 0; x < l.n_exp; x++) offsets[x + 1] += offsets[x];
    const int32_t n_valid = offsets[l.n_exp];
    // Fill slots: valid pairs grouped by expert, invalid pairs after them.
    int32_t next_invalid = n_valid;
    // offsets[x] is advanced while filling and restored afterwards.
    for (int64_t t = 0; t < l.n_tok; t++)
      for (int64_t e = 0; e < l.n_used; e++) {
        const int32_t id = read_id(ids, e, t);
        const int32_t pair = static_cast<int32_t>(e + l.n_used * t);
        if (id < 0 || id >= l.n_exp) slot_pair[next_invalid++] = pair;
        else slot_pair[offsets[id]++] = pair;
      }
    for (int64_t x = l.n_exp; x > 0; x--) offsets[x] = offsets[x - 1];
    offsets[0] = 0;
    counts[0] = n_valid;
    counts[1] = invalid;
    if (invalid > 0) report_kernel_error("mul_mat_id: expert id out of range [0, n_expert); output columns set to NaN");
    return;
  }
  const int32_t n_valid = counts[0];
  if (phase == 1) {
    float* tmp = reinterpret_cast<float*>(scratch + l.off_tmp + static_cast<size_t>(ith) * align64(a->ne[0] * 4));
    int64_t s0, s1;
    split_range(n_valid, ith, nth, &s0, &s1);
    for (int64_t s = s0; s < s1; s++) {
      const int64_t pair = slot_pair[s];
      const int64_t e = pair % l.n_used, t = pair / l.n_used;
      convert_row(b, b->ne[1] == 1 ? 0 : e, t, 0, l.fmt, args.simd, act + static_cast<size_t>(s) * l.row_bytes, tmp);
    }
    return;
  }
  // Phase 2.
  const int64_t m = a->ne[1];
  int64_t r0, r1;
  split_range(m, ith, nth, &r0, &r1);
  if (r0 >= r1) return;
  const q::WeightTraits& tr = q::weight_traits(a->dtype);
  const q::VecDotFn dot = q::vec_dot_for(a->dtype, args.simd);
  for (int64_t x = 0; x < l.n_exp; x++) {
    const int64_t s0 = offsets[x], s1 = offsets[x + 1];
    if (s0 == s1) continue;
    IdCtx ctx{out, slot_pair, l.n_used, s0};
    TileJob job;
    job.dot = dot;
    job.gemm = gemm_of(args, a->dtype);
    job.k = a->ne[0];
    job.w = a->data + x * a->nb[2];
    job.w_nb1 = a->nb[1];
    job.w_row_bytes = static_cast<size_t>(a->ne[0] / tr.block) * tr.type_size;
    job.act = act + static_cast<size_t>(s0) * l.row_bytes;
    job.act_stride = l.row_bytes;
    job.out_col = id_col;
    job.ctx = &ctx;
    tile_rows_cols(job, r0, r1, 0, s1 - s0);
  }
  // Invalid pairs: NaN rows (this thread's share).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int32_t s = n_valid; s < n_valid + counts[1]; s++) {
    IdCtx ctx{out, slot_pair, l.n_used, 0};
    float* col = id_col(&ctx, s);
    for (int64_t r = r0; r < r1; r++) col[r] = nan;
  }
}

const Registrar mul_mat_id_kernel(Op::MUL_MAT_ID, {check_mul_mat_id, scratch_mul_mat_id, 3, run_mul_mat_id});

}  // namespace
}  // namespace minfer::cpu
