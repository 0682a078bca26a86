// MUL_MAT, MUL_MAT_ADD, MUL_MAT_MULTI and MUL_MAT_ID on CUDA: checks (the shared contract,
// native/common/contract_matmul.h, with the weight dtypes quants.cuh decodes), scratch sizing and
// the choice of path per node:
//   * few columns (≤ kDecodeCols per plane, or any MUL_MAT_ID): the activation columns are
//     quantized once into scratch in the CPU's activation format (Q8A blocks of 32 for Q4_0..Q8_0,
//     IQ4_NL and MXFP4, Q8_K blocks of 256 for the K-quants and IQ4_XS) and a dp4a mat-vec runs
//     (ops/matvec_q.cuh); F16/BF16/F32 weights convert the columns to f32 and run a float mat-vec
//     (ops/matvec_f32.cuh); the other i-quants and TQ1_0/TQ2_0 run the generic mat-vec;
//   * 2..64 columns of a quantized 2-D weight (Tuning::mmq_min_cols..mmq_max_cols): the int8
//     tensor-core kernel (ops/mmq.cuh) against Q8A columns, for Q4_0..Q8_0 and Q3_K..Q6_K;
//   * many columns: gemm_tc (gemm_tc.h) per 2-D plane when it takes the shape, else the tiled
//     generic kernel (ops/matmul_generic.cuh);
//   * whatever the fast paths do not take (unaligned data, odd K): the generic kernels. Weights may
//     be views (a row range of a fused weight such as phi3's attn_qkv): every path reads them at
//     their data pointer with their own row stride, and one whose pointer or strides are not
//     aligned for a fast path takes the generic kernels, which read bytes.
// MUL_MAT_ADD (out = mul_mat(a, b) + c) and MUL_MAT_MULTI with addends (out_i = mul_mat(w_i, x) +
// c_i) run the same paths; the mat-vec and generic kernels add c as they store each result
// (plus_c), gemm_tc is followed by add_c_kernel over the output (after any split-K reduction, so
// c is added once).
#include <algorithm>

#include "../../common/contract_matmul.h"
#include "../gemm_tc.h"
#include "fused.h"
#include "matmul_generic.cuh"
#include "matvec_f32.cuh"
#include "matvec_q.cuh"
#include "mmq.cuh"

namespace minfer::cuda {
namespace {

using program::DType;
using program::Op;
using namespace mm;

constexpr int64_t kDecodeCols = 8;  // columns per plane up to which the mat-vec runs
constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) & ~(kAlign - 1); }

// ---- checks (native/common/contract_matmul.h) -----------------------------------------------------

// The weight dtypes quants.cuh decodes: the generic kernels read any of them, and a node that a
// fast path does not take falls back to those.
bool weight_supported(DType t) { return has_dequant(t); }

const char* check_mul_mat(const program::NodeView& args) { return contract::check_mul_mat(args, weight_supported); }
const char* check_mul_mat_add(const program::NodeView& args) {
  return contract::check_mul_mat_add(args, weight_supported);
}
const char* check_mul_mat_multi(const program::NodeView& args) {
  return contract::check_mul_mat_multi(args, weight_supported);
}
const char* check_mul_mat_id(const program::NodeView& args) {
  return contract::check_mul_mat_id(args, weight_supported);
}

using contract::mul_mat_multi_addend;

// ---- planes and views --------------------------------------------------------------------------

BView bview(const Tensor* b) {
  return BView{b->data, b->dtype, b->nb[0], b->nb[1], b->nb[2], b->nb[3], std::max<int64_t>(1, b->ne[1]),
               std::max<int64_t>(1, b->ne[2])};
}
int64_t total_cols(const Tensor* b) { return b->ne[1] * b->ne[2] * b->ne[3]; }

// Planes of out = w · b (MUL_MAT, or one weight of MUL_MAT_MULTI), w broadcast over b's dims 2, 3.
Planes mul_mat_planes(const Tensor* w, const Tensor* b, const Tensor* out, const LaunchContext& ctx) {
  Planes p{};
  p.wtype = w->dtype;
  p.w = w->data;
  p.w_nb1 = w->nb[1];
  p.w_nb2 = w->nb[2];
  p.w_nb3 = w->nb[3];
  p.K = w->ne[0];
  p.M = w->ne[1];
  p.n_planes = b->ne[2] * b->ne[3];
  p.ncols = b->ne[1];
  p.out = out->data;
  p.o_nb1 = out->nb[1];
  p.o_nb2 = out->nb[2];
  p.o_nb3 = out->nb[3];
  p.r2 = b->ne[2] / w->ne[2];
  p.r3 = b->ne[3] / w->ne[3];
  p.ne2 = std::max<int64_t>(1, b->ne[2]);
  p.ids = nullptr;
  p.err = ctx.err;
  p.node = ctx.node;
  p.c = nullptr;
  return p;
}

// MUL_MAT_ADD's planes (and MUL_MAT_MULTI's with addends): MUL_MAT's, with c added as each
// result is stored.
Planes with_c(Planes p, const Tensor* c) {
  p.c = c->data;
  for (int i = 0; i < 4; i++) {
    p.c_ne[i] = c->ne[i];
    p.c_nb[i] = c->nb[i];
  }
  return p;
}

Planes mul_mat_id_planes(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor* a = args.in[0];
  const Tensor* b = args.in[1];
  const Tensor* ids = args.in[2];
  const Tensor* out = args.out[0];
  Planes p{};
  p.wtype = a->dtype;
  p.w = a->data;
  p.w_nb1 = a->nb[1];
  p.w_nb2 = a->nb[2];
  p.w_nb3 = a->nb[3];
  p.K = a->ne[0];
  p.M = a->ne[1];
  p.n_planes = ids->ne[0] * ids->ne[1];
  p.ncols = 1;
  p.out = out->data;
  p.o_nb1 = out->nb[1];
  p.o_nb2 = out->nb[2];
  p.o_nb3 = out->nb[3];
  p.r2 = p.r3 = p.ne2 = 1;
  p.ids = ids->data;
  p.id_nb0 = ids->nb[0];
  p.id_nb1 = ids->nb[1];
  p.n_used = ids->ne[0];
  p.n_exp = a->ne[2];
  p.b_ne1 = b->ne[1];
  p.err = ctx.err;
  p.node = ctx.node;
  p.c = nullptr;
  return p;
}

// ---- launchers ------------------------------------------------------------------------------------

cudaError_t launch_mv_generic(const Planes& p, const BView& b, cudaStream_t s) {
  if (p.M <= 0 || p.n_planes <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(ceil_div(p.M, kMvWarps)), static_cast<unsigned>(std::min<int64_t>(p.n_planes, 65535)));
  mv_generic<<<grid, kMvWarps * kWarp, 0, s>>>(p, b);
  return cudaGetLastError();
}

cudaError_t launch_tiled_generic(const Planes& p, const BView& b, cudaStream_t s) {
  if (p.M <= 0 || p.n_planes <= 0 || p.ncols <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(ceil_div(p.M, kTileM)), static_cast<unsigned>(ceil_div(p.ncols, kTileN)),
                  static_cast<unsigned>(std::min<int64_t>(p.n_planes, 65535)));
  if (grid.y > 65535) return cudaErrorInvalidConfiguration;
  mm_tiled_generic<<<grid, 256, 0, s>>>(p, b);
  return cudaGetLastError();
}

cudaError_t launch_add_c(const Planes& p, cudaStream_t s) {
  const int64_t total = p.M * p.ncols * p.n_planes;
  if (total <= 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(total, 256), 65535));
  add_c_kernel<<<blocks, 256, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_to_f32(const BView& b, int64_t K, int64_t ncols, float* dst, cudaStream_t s) {
  const int64_t total = K * ncols;
  if (total <= 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(total, 256), 65535));
  to_f32_kernel<<<blocks, 256, 0, s>>>(b, K, ncols, dst);
  return cudaGetLastError();
}

// Batch-invariant products of F16/BF16/F32 weights over more than kMaxMvCols columns of one plane:
// the float mat-vec kMaxMvCols columns a launch, or (MvShape::invariant_planes) every chunk in one
// launch as planes (each column's sum is its one-column launch's).
bool mv_f32_chunks(const Planes& p) { return mv_col_chunkable(p) && mv_f32_aligned(mv_col_planes(p, kMaxMvCols)); }

cudaError_t launch_mv_f32_chunks(const Planes& p, const float* act, const MvShape& sh, cudaStream_t s) {
  if (sh.invariant_planes) return launch_mv_f32(mv_col_planes(p, kMaxMvCols), act, s);
  for (int64_t c0 = 0; c0 < p.ncols; c0 += kMaxMvCols) {
    const int64_t m = std::min<int64_t>(kMaxMvCols, p.ncols - c0);
    if (cudaError_t e = launch_mv_f32(mv_col_chunk(p, c0, m), act + c0 * p.K, s); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// ---- the path of one weight against shared activations -------------------------------------------

// Scratch layout of a node: the activation conversions (one region per format used), then
// gemm_tc's scratch.
struct ActRegions {
  size_t q8a = SIZE_MAX, q8k = SIZE_MAX, f32 = SIZE_MAX;  // offsets (SIZE_MAX = not needed)
  size_t gemm = 0;                                       // offset of gemm_tc's (or mmq's split-K) scratch
  size_t total = 0;
};

bool gemm_b_direct(const Tensor* b) {
  // gemm_tc reads f32 columns x + n·x_col: b itself when it is F32 with packed rows.
  return b->dtype == DType::F32 && b->nb[0] == 4 && b->nb[1] % 4 == 0;
}

// Which activation format each weight runs against on the fast paths.
enum class Path { Generic, MvQ8A, MvQ8K, MvF32, Gemm, Tiled, Mmq };

// Whether the int8 tensor-core kernel takes weight w against b under tuning t. A weight it cannot
// read aligned (a view starting off 16 bytes) keeps the mat-vec / gemm_tc path it had before.
bool mmq_path(const Tensor* w, const Tensor* b, bool id, const Tuning& t) {
  const int64_t n = b->ne[1];
  const int lo = t.mmq_min_cols == 0 ? mmq_default_min_cols(w->dtype) : std::max(t.mmq_min_cols, 2);
  const int hi = t.mmq_max_cols < 0 ? mmq_default_max_cols(w->dtype) : t.mmq_max_cols;
  return !id && mmq_dtype(w->dtype) && w->ne[2] == 1 && w->ne[3] == 1 && b->ne[2] == 1 && b->ne[3] == 1 && n >= lo &&
         n <= std::min<int64_t>(hi, kMmqMaxCols) && mmq_weight_aligned(w->data, w->nb[1]);
}

Path choose_path(const Tensor* w, const Tensor* b, bool id, const Tuning& t) {
  const int64_t K = w->ne[0], M = w->ne[1];
  if (mmq_path(w, b, id, t)) return Path::Mmq;
  // (batch-invariant: every column count on the mat-vec, kDecodeCols columns a launch, as one
  // column runs; Tuning::batch_invariant)
  if (id || b->ne[1] <= kDecodeCols || t.batch_invariant) {
    switch (mv_act_format(w->dtype)) {
      case ActFmt::Q8A: return Path::MvQ8A;
      case ActFmt::Q8K: return Path::MvQ8K;
      case ActFmt::F32: return (!id && mv_f32_supported(w->dtype, K)) ? Path::MvF32 : Path::Generic;
      default: return Path::Generic;
    }
  }
  // F32 weights keep F32 activations: the tensor-core GEMM rounds them to F16 (2e-4 of the logit
  // range on an F32 model), the tiled kernel multiplies in F32 as the weights ask.
  if (w->dtype != DType::F32 && K % 32 == 0 && gemm_tc_supported(w->dtype, M, b->ne[1], K)) return Path::Gemm;
  return Path::Tiled;
}

// Sizes the regions for weights ws[0..n) against activations b (planes of MUL_MAT share them).
ActRegions act_regions(const Tensor* const* ws, int n, const Tensor* b, bool id, const Tuning& t) {
  ActRegions r;
  const int64_t K = b->ne[0], cols = total_cols(b);
  size_t off = 0;
  size_t gemm = 0, mmq = 0;  // (the int8 kernel's weights of a node may share a launch: their partials side by side)
  for (int i = 0; i < n; i++) {
    const Tensor* w = ws[i];
    switch (choose_path(w, b, id, t)) {
      case Path::Mmq:
        mmq += mmq_partial_bytes(w->ne[1], K, b->ne[1], t.mmq_streamk != 0);
        gemm = std::max(gemm, mmq);
        [[fallthrough]];
      case Path::MvQ8A:
        if (r.q8a == SIZE_MAX) {
          r.q8a = off;
          off = align_up(off + q8a_bytes(K, cols));
        }
        break;
      case Path::MvQ8K:
        if (r.q8k == SIZE_MAX) {
          r.q8k = off;
          off = align_up(off + q8k_bytes(K, cols));
        }
        break;
      case Path::MvF32:
        if (r.f32 == SIZE_MAX) {
          r.f32 = off;
          off = align_up(off + static_cast<size_t>(K * cols) * 4);
        }
        break;
      case Path::Gemm:
        if (!gemm_b_direct(b) && r.f32 == SIZE_MAX) {
          r.f32 = off;
          off = align_up(off + static_cast<size_t>(K * cols) * 4);
        }
        gemm = std::max(gemm, gemm_tc_scratch(w->dtype, w->ne[1], b->ne[1], K));
        break;
      default: break;
    }
  }
  r.gemm = off;
  r.total = off + gemm;
  return r;
}

// Scratch for weights ws[0..n) against b under any tuning (paths are chosen per weight, so one
// node may mix them): every activation region some weight could use, then the larger of gemm_tc's
// scratch and every weight's int8 partials (or stream-K slots). An upper bound of
// act_regions(...).total.
size_t scratch_for(const Tensor* const* ws, int n, const Tensor* b, bool id) {
  const int64_t K = b->ne[0], cols = total_cols(b), N = b->ne[1];
  bool q8a = false, q8k = false, f32 = false;
  size_t gemm = 0, parts = 0;
  for (int i = 0; i < n; i++) {
    const Tensor* w = ws[i];
    const ActFmt f = mv_act_format(w->dtype);
    q8a = q8a || f == ActFmt::Q8A || mmq_dtype(w->dtype);
    q8k = q8k || f == ActFmt::Q8K;
    f32 = f32 || f == ActFmt::F32 || !gemm_b_direct(b);
    if (mmq_dtype(w->dtype)) parts += mmq_partial_bytes(w->ne[1], K, N, true);
    if (w->dtype != DType::F32 && K % 32 == 0 && gemm_tc_supported(w->dtype, w->ne[1], N, K))
      gemm = std::max(gemm, gemm_tc_scratch(w->dtype, w->ne[1], N, K));
  }
  size_t off = 0;
  if (q8a) off = align_up(off + q8a_bytes(K, cols));
  if (q8k) off = align_up(off + q8k_bytes(K, cols));
  if (f32) off = align_up(off + static_cast<size_t>(K * cols) * 4);
  return off + std::max(gemm, parts);
}

// Fills the activation regions (once per node).
cudaError_t prepare_acts(const ActRegions& r, const Tensor* b, uint8_t* scratch, cudaStream_t s) {
  const BView bv = bview(b);
  const int64_t K = b->ne[0], cols = total_cols(b);
  if (r.q8a != SIZE_MAX)
    if (cudaError_t e = launch_quant_q8a(bv, K, cols, scratch + r.q8a, s); e != cudaSuccess) return e;
  if (r.q8k != SIZE_MAX)
    if (cudaError_t e = launch_quant_q8k(bv, K, cols, scratch + r.q8k, s); e != cudaSuccess) return e;
  if (r.f32 != SIZE_MAX)
    if (cudaError_t e = launch_to_f32(bv, K, cols, reinterpret_cast<float*>(scratch + r.f32), s); e != cudaSuccess)
      return e;
  return cudaSuccess;
}

// The quantized activations a mat-vec on `path` (MvQ8A or MvQ8K) reads.
const uint8_t* q8_act(const ActRegions& r, Path path, const uint8_t* scratch) {
  return scratch + (path == Path::MvQ8K ? r.q8k : r.q8a);
}

// Runs planes p (weights w, activations b) on the path chosen for them.
cudaError_t run_planes(const Planes& p, const Tensor* w, const Tensor* b, bool id, const ActRegions& r,
                       uint8_t* scratch, const LaunchContext& ctx) {
  const BView bv = bview(b);
  const Path path = choose_path(w, b, id, ctx.tuning);
  switch (path) {
    case Path::Mmq:
      if (mmq_takes(p))
        return launch_mmq(&p, 1, scratch + r.q8a, reinterpret_cast<float*>(scratch + r.gemm), ctx.stream,
                          ctx.tuning.mmq_blocks, ctx.tuning.mmq_streamk, ctx.tuning.mmq_rows,
                          ctx.tuning.mmq_target_blocks);
      return launch_tiled_generic(p, bv, ctx.stream);
    case Path::MvQ8A:
    case Path::MvQ8K:
      if (mv_q_takes(p, ctx.tuning.mv.invariant))
        return launch_mv_q(&p, 1, q8_act(r, path, scratch), total_cols(b), ctx.tuning.mv_wide_loads, ctx.tuning.mv, ctx.stream);
      return launch_mv_generic(p, bv, ctx.stream);
    case Path::MvF32:
      if (mv_f32_aligned(p)) return launch_mv_f32(p, reinterpret_cast<const float*>(scratch + r.f32), ctx.stream);
      if (ctx.tuning.batch_invariant && mv_f32_chunks(p))
        return launch_mv_f32_chunks(p, reinterpret_cast<const float*>(scratch + r.f32), ctx.tuning.mv, ctx.stream);
      return launch_mv_generic(p, bv, ctx.stream);
    case Path::Gemm: {
      // (a weight the tensor-core loader cannot read aligned, e.g. a view at an odd byte offset,
      // takes the tiled kernel, which reads bytes)
      if (p.o_nb1 % 4 != 0 || !gemm_tc_aligned(p.wtype, p.w, p.w_nb1) || !gemm_tc_aligned(p.wtype, p.w, p.w_nb2) ||
          !gemm_tc_aligned(p.wtype, p.w, p.w_nb3))
        return launch_tiled_generic(p, bv, ctx.stream);
      const int64_t K = p.K, N = p.ncols;
      const bool direct = gemm_b_direct(b);
      for (int64_t z = 0; z < p.n_planes; z++) {
        const int64_t i2 = z % p.ne2, i3 = z / p.ne2;
        GemmArgs g;
        g.wtype = p.wtype;
        g.w = p.w + (i2 / p.r2) * p.w_nb2 + (i3 / p.r3) * p.w_nb3;
        g.w_row_bytes = p.w_nb1;
        if (direct) {
          g.x = reinterpret_cast<const float*>(b->data + i2 * b->nb[2] + i3 * b->nb[3]);
          g.x_col = b->nb[1] / 4;
        } else {
          g.x = reinterpret_cast<const float*>(scratch + r.f32) + z * N * K;
          g.x_col = K;
        }
        g.out = reinterpret_cast<float*>(p.out + i2 * p.o_nb2 + i3 * p.o_nb3);
        g.out_col = p.o_nb1 / 4;
        g.M = p.M;
        g.N = N;
        g.K = K;
        g.stages = ctx.tuning.gemm_stages;
        if (cudaError_t e = gemm_tc(g, scratch + r.gemm, ctx.stream); e != cudaSuccess) return e;
      }
      // gemm_tc has no epilogue: MUL_MAT_ADD's c is added once its products are complete.
      return p.c ? launch_add_c(p, ctx.stream) : cudaSuccess;
    }
    case Path::Tiled: return launch_tiled_generic(p, bv, ctx.stream);
    default: return launch_mv_generic(p, bv, ctx.stream);
  }
}

// ---- MUL_MAT ------------------------------------------------------------------------------------------

size_t scratch_mul_mat(const NodeArgs& args) {
  const Tensor* ws[1] = {args.in[0]};
  return scratch_for(ws, 1, args.in[1], false);
}

// MUL_MAT, and MUL_MAT_ADD (the same planes with c added as each result is stored). `prequantized`:
// the activation region is already filled (a fused producer wrote it: fused.h).
cudaError_t run_mul_mat(const NodeArgs& args, const LaunchContext& ctx, bool prequantized) {
  const Tensor* a = args.in[0];
  const Tensor* b = args.in[1];
  const Tensor* ws[1] = {a};
  const ActRegions r = act_regions(ws, 1, b, false, ctx.tuning);
  auto* scratch = static_cast<uint8_t*>(ctx.scratch);
  if (!prequantized)
    if (cudaError_t e = prepare_acts(r, b, scratch, ctx.stream); e != cudaSuccess) return e;
  Planes p = mul_mat_planes(a, b, args.out[0], ctx);
  if (args.op == Op::MUL_MAT_ADD) p = with_c(p, args.in[2]);
  return run_planes(p, a, b, false, r, scratch, ctx);
}

// ---- MUL_MAT_MULTI ----------------------------------------------------------------------------------

size_t scratch_mul_mat_multi(const NodeArgs& args) {
  return scratch_for(&args.in[1], args.n_outputs, args.in[0], false);
}

// Each weight's planes, with its addend c_i (when the node has them) added as MUL_MAT_ADD's planes
// add c: as each mat-vec / generic result is stored, or by add_c_kernel after gemm_tc. Neighbouring
// weights of one dtype on the quantized mat-vec (q/k/v, gate/up in decode) share one launch, and so
// do those on the int8 tensor-core kernel (several sequences decoding together).
// rope: the q/k/v epilogue (matmul_launch_qkv_rope; every weight on the quantized mat-vec), its
// roles and the products' bytes not stored (skip, by output) set here for each launch's weights.
cudaError_t run_mul_mat_multi(const NodeArgs& args, const LaunchContext& ctx, bool prequantized,
                              const MvRope* rope = nullptr, const ProductSkip* skip = nullptr) {
  const Tensor* x = args.in[0];
  const int nw = args.n_outputs;
  const ActRegions r = act_regions(&args.in[1], nw, x, false, ctx.tuning);
  auto* scratch = static_cast<uint8_t*>(ctx.scratch);
  if (!prequantized)
    if (cudaError_t e = prepare_acts(r, x, scratch, ctx.stream); e != cudaSuccess) return e;
  auto planes = [&](int i) {
    Planes p = mul_mat_planes(args.in[1 + i], x, args.out[i], ctx);
    if (const int ci = mul_mat_multi_addend(args, i)) p = with_c(p, args.in[ci]);
    return p;
  };
  auto batchable = [&](const Planes& p, Path path) {
    return (path == Path::MvQ8A || path == Path::MvQ8K) && mv_q_takes(p, ctx.tuning.mv.invariant);
  };
  static_assert(kMmqMaxBatch >= 3, "MUL_MAT_MULTI has up to three weights");
  for (int i = 0; i < nw;) {
    Planes batch[kMaxMvBatch];
    batch[0] = planes(i);
    const Path path = choose_path(args.in[1 + i], x, false, ctx.tuning);
    if (path == Path::Mmq && mmq_takes(batch[0])) {
      int n = 1;
      while (i + n < nw && args.in[1 + i + n]->dtype == batch[0].wtype &&
             choose_path(args.in[1 + i + n], x, false, ctx.tuning) == Path::Mmq) {
        batch[n] = planes(i + n);
        if (!mmq_takes(batch[n])) break;
        n++;
      }
      if (cudaError_t e = launch_mmq(batch, n, scratch + r.q8a, reinterpret_cast<float*>(scratch + r.gemm), ctx.stream,
                                     ctx.tuning.mmq_blocks, ctx.tuning.mmq_streamk, ctx.tuning.mmq_rows,
                                     ctx.tuning.mmq_target_blocks);
          e != cudaSuccess)
        return e;
      i += n;
      continue;
    }
    if (!batchable(batch[0], path)) {
      if (cudaError_t e = run_planes(batch[0], args.in[1 + i], x, false, r, scratch, ctx); e != cudaSuccess) return e;
      i++;
      continue;
    }
    // Same dtype, same activations: the same path.
    int n = 1;
    while (i + n < nw && n < kMaxMvBatch && args.in[1 + i + n]->dtype == batch[0].wtype) {
      batch[n] = planes(i + n);
      if (!mv_q_takes(batch[n], ctx.tuning.mv.invariant)) break;
      n++;
    }
    if (rope) {
      MvRope e = *rope;
      for (int k = 0; k < n; k++) {
        e.role[k] = i + k == 0 ? MvRole::RotQ : i + k == 1 ? MvRole::RotK : MvRole::StoreV;
        e.skip_lo[k] = skip[i + k].lo;
        e.skip_hi[k] = skip[i + k].hi;
      }
      if (cudaError_t err = launch_mv_q_rope(batch, n, q8_act(r, path, scratch), total_cols(x), ctx.tuning.mv_wide_loads,
                                             ctx.tuning.mv, ctx.stream, e);
          err != cudaSuccess)
        return err;
    } else if (cudaError_t e = launch_mv_q(batch, n, q8_act(r, path, scratch), total_cols(x), ctx.tuning.mv_wide_loads, ctx.tuning.mv, ctx.stream); e != cudaSuccess) {
      return e;
    }
    i += n;
  }
  return cudaSuccess;
}

cudaError_t launch_mul_mat(const NodeArgs& args, const LaunchContext& ctx) { return run_mul_mat(args, ctx, false); }
cudaError_t launch_mul_mat_multi(const NodeArgs& args, const LaunchContext& ctx) {
  return run_mul_mat_multi(args, ctx, false);
}

// ---- MUL_MAT_ID -------------------------------------------------------------------------------------

size_t scratch_mul_mat_id(const NodeArgs& args) {
  const Tensor* ws[1] = {args.in[0]};
  return scratch_for(ws, 1, args.in[1], true);
}

cudaError_t launch_mul_mat_id(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor* a = args.in[0];
  const Tensor* b = args.in[1];
  const Tensor* ws[1] = {a};
  const ActRegions r = act_regions(ws, 1, b, true, ctx.tuning);
  auto* scratch = static_cast<uint8_t*>(ctx.scratch);
  if (cudaError_t e = prepare_acts(r, b, scratch, ctx.stream); e != cudaSuccess) return e;
  return run_planes(mul_mat_id_planes(args, ctx), a, b, true, r, scratch, ctx);
}

const Registrar mul_mat_kernel(Op::MUL_MAT, {check_mul_mat, scratch_mul_mat, launch_mul_mat});
const Registrar mul_mat_add_kernel(Op::MUL_MAT_ADD, {check_mul_mat_add, scratch_mul_mat, launch_mul_mat});
const Registrar mul_mat_multi_kernel(Op::MUL_MAT_MULTI, {check_mul_mat_multi, scratch_mul_mat_multi, launch_mul_mat_multi});
const Registrar mul_mat_id_kernel(Op::MUL_MAT_ID, {check_mul_mat_id, scratch_mul_mat_id, launch_mul_mat_id});

}  // namespace

QuantAct matmul_quant_plan(const NodeArgs& mm, size_t* offset, const Tuning& t) {
  const bool multi = mm.op == Op::MUL_MAT_MULTI;
  if (!multi && mm.op != Op::MUL_MAT && mm.op != Op::MUL_MAT_ADD) return QuantAct::None;
  const Tensor* x = multi ? mm.in[0] : mm.in[1];
  const Tensor* const* ws = multi ? &mm.in[1] : &mm.in[0];
  const int n = multi ? mm.n_outputs : 1;
  const int64_t cols = x->ne[1];
  if (x->dtype != DType::F32 || x->nb[0] != 4 || cols < 1 || cols > kFusedProducerMaxCols || x->ne[2] != 1 ||
      x->ne[3] != 1 || (cols > 1 && x->nb[1] != 4 * x->ne[0]))
    return QuantAct::None;
  QuantAct fmt = QuantAct::None;
  for (int i = 0; i < n; i++) {
    const Path p = choose_path(ws[i], x, false, t);
    const QuantAct f = p == Path::MvQ8A || p == Path::Mmq ? QuantAct::Q8A
                       : p == Path::MvQ8K                 ? QuantAct::Q8K
                                                          : QuantAct::None;
    if (f == QuantAct::None || (i > 0 && f != fmt)) return QuantAct::None;
    fmt = f;
  }
  const ActRegions r = act_regions(ws, n, x, false, t);
  if (r.f32 != SIZE_MAX || (fmt == QuantAct::Q8A ? r.q8k : r.q8a) != SIZE_MAX) return QuantAct::None;
  *offset = fmt == QuantAct::Q8A ? r.q8a : r.q8k;
  return fmt;
}

cudaError_t matmul_launch_prequantized(const NodeArgs& mm, const LaunchContext& ctx) {
  return mm.op == Op::MUL_MAT_MULTI ? run_mul_mat_multi(mm, ctx, true) : run_mul_mat(mm, ctx, true);
}

bool matmul_qkv_rope_ready(const NodeArgs& mm, const Tuning& t) {
  if (mm.op != Op::MUL_MAT_MULTI || mm.n_outputs != 3) return false;
  // (batch-invariant launches of more columns than one mat-vec launch takes: the products and the
  // RoPE nodes apart)
  if (t.batch_invariant && mm.in[0]->ne[1] > kMaxMvCols) return false;
  for (int i = 0; i < 3; i++) {
    const Path path = choose_path(mm.in[1 + i], mm.in[0], false, t);
    if ((path != Path::MvQ8A && path != Path::MvQ8K) || !mv_rope_supported(mm.in[1 + i]->dtype, t.mv_wide_loads, t.mv))
      return false;
  }
  return true;
}

cudaError_t matmul_launch_qkv_rope(const NodeArgs& mm, const LaunchContext& ctx, bool prequantized, const NodeArgs* rope,
                                   const ProductSkip* skip) {
  if (!matmul_qkv_rope_ready(mm, ctx.tuning)) return cudaErrorNotSupported;
  const Tensor* x = mm.in[0];
  for (int i = 0; i < 3; i++) {
    const Planes p = mul_mat_planes(mm.in[1 + i], x, mm.out[i], ctx);
    if (!mv_q_aligned(p) || p.n_planes != 1 || !mv_rope_supported(p.wtype, ctx.tuning.mv_wide_loads, ctx.tuning.mv))
      return cudaErrorNotSupported;
  }
  const NodeArgs &q = rope[0], &ks = rope[2], &vs = rope[3];
  MvRope e{};
  e.rot_q = *q.out[0];
  e.rot_k = *rope[1].out[0];
  e.cache_k = *ks.out[0];
  e.cache_v = *vs.out[0];
  e.pos = *q.in[1];
  e.ff = q.n_inputs == 3 ? *q.in[2] : *q.in[1];  // unread without factors
  e.idx = *ks.in[2];
  e.hd = q.in[0]->ne[0];
  e.k_node = ctx.node + 3;
  e.v_node = ctx.node + 4;
  e.err = ctx.err;
  e.p = rope_params(q);
  return run_mul_mat_multi(mm, ctx, prequantized, &e, skip);
}

}  // namespace minfer::cuda
