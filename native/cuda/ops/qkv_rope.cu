// A fused launch (fused.h; dispatched by fused.cu, or after a producer by producer_matvec.cu): an
// attention layer's q/k/v product and the four nodes that rotate and store its outputs,
//   MUL_MAT_MULTI(x; wq, wk, wv[, biases]) → q, k, v;  ROPE(q) → q_rope;  ROPE(k) → k_rope;
//   SET_ROWS(k_cache, k_rope as rows, cells);  SET_ROWS(v_cache, v, cells)
// as the product's mat-vec alone: each of its row groups is one RoPE pair of q or k (or two rows of
// v), so the lane that has the two sums rotates them with the ROPE kernel's arithmetic and stores
// the rotated pair, and k's pair and v's two values into the caches at the token's cell
// (ops/matvec_q.cuh MvRope, rope_epilogue). A decode step of one sequence drops rope_store's launch
// (its one block of loads and stores after the product); several sequences drop its four launches.
// The results are those of the five nodes apart, bit for bit. On by default (the H200's op suite and
// memcheck ran clean with it, 2026-12-05); MINFER_CUDA_QKV_ROPE=0 turns it off, and fusion then
// leaves the five nodes apart.
//
// Every value comes from the lane's registers, never from memory another node wrote, and every
// byte is written once, so the match asks that the writes be disjoint and meet none of the reads
// (positions, factors, cells, weights, biases), with one exception the graph's allocator makes: a
// product's memory reused for a RoPE's output (q rotated in place, or k's output over q's product).
// Apart, those bytes hold the product first and the RoPE's output after, so here the product's
// store skips them (MvRope::skip_lo/hi); the rest of each product is stored as MUL_MAT_MULTI does.
#include "fused.h"

namespace minfer::cuda {

namespace {

using program::DType;
using program::Op;

// The bytes a tensor's elements span, as overlap() measures them.
void span(const Tensor& t, uintptr_t* lo, uintptr_t* hi) {
  const program::BlockLayout* bl = program::block_layout(static_cast<int32_t>(t.dtype));
  uintptr_t n = static_cast<uintptr_t>(bl ? bl->type_size : 1);
  for (int d = 0; d < 4; d++)
    if (t.ne[d] > 1) n += static_cast<uintptr_t>((t.ne[d] - 1) * t.nb[d]);
  *lo = reinterpret_cast<uintptr_t>(t.data);
  *hi = *lo + n;
}

// A product's output: F32 [rows, tokens], contiguous.
bool product_ok(const Tensor& o, int64_t tokens) {
  return o.dtype == DType::F32 && o.ne[1] == tokens && o.ne[2] == 1 && o.ne[3] == 1 && is_contiguous(o);
}

// A RoPE's input: the whole product `o` seen as [hd, heads, tokens].
bool rope_input_ok(const Tensor& in, const Tensor& o, int64_t hd) {
  return in.data == o.data && in.dtype == DType::F32 && in.ne[0] == hd && in.ne[0] * in.ne[1] == o.ne[0] &&
         in.ne[2] == o.ne[1] && in.ne[3] == 1 && is_contiguous(in);
}

// The conditions above; skip: the bytes of each product not stored.
bool plan(const NodeArgs* nodes, size_t available, ProductSkip (&skip)[3]) {
  if (available < 5) return false;
  const NodeArgs &mm = nodes[0], &q = nodes[1], &k = nodes[2], &ks = nodes[3], &vs = nodes[4];
  if (mm.op != Op::MUL_MAT_MULTI || mm.n_outputs != 3 || !rope_store_form(nodes + 1, available - 1)) return false;
  const Tensor& x = *mm.in[0];
  const int64_t tokens = x.ne[1];
  if (x.ne[2] != 1 || x.ne[3] != 1 || tokens < 1 || tokens > 8) return false;
  const Tensor &oq = *mm.out[0], &ok = *mm.out[1], &ov = *mm.out[2];
  if (!product_ok(oq, tokens) || !product_ok(ok, tokens) || !product_ok(ov, tokens)) return false;
  if (ov.ne[0] % 2 != 0) return false;  // (v's rows go in pairs too)
  namespace P = program::param::ROPE;
  const int64_t hd = q.in[0]->ne[0];
  const int mode = param_i32(q, P::mode);
  if ((mode != 0 && mode != 2) || param_i32(q, P::nDims) != hd || hd % 2 != 0) return false;
  if (!rope_input_ok(*q.in[0], oq, hd) || !rope_input_ok(*k.in[0], ok, hd)) return false;
  // v's store reads v's product, one row per token
  const Tensor& vsrc = *vs.in[1];
  if (vsrc.data != ov.data || vsrc.ne[0] != ov.ne[0] || vsrc.ne[1] != tokens || vsrc.nb[0] != 4 ||
      (tokens > 1 && vsrc.nb[1] != ov.nb[1]))
    return false;
  // Written at once: the rotated q and k, the cache rows, v's product.
  const Tensor* writes[] = {q.out[0], k.out[0], ks.out[0], vs.out[0], &ov};
  constexpr int nw = 5;
  const Tensor* reads[8 + 3];
  int nr = 0;
  for (int i = 1; i < mm.n_inputs; i++) reads[nr++] = mm.in[i];  // weights and biases
  reads[nr++] = q.in[1];                                          // positions
  if (q.n_inputs == 3) reads[nr++] = q.in[2];                     // frequency factors
  reads[nr++] = ks.in[2];                                         // cells
  for (int w = 0; w < nw; w++) {
    for (int u = w + 1; u < nw; u++)
      if (overlap(*writes[w], *writes[u])) return false;
    for (int r = 0; r < nr; r++)
      if (overlap(*writes[w], *reads[r])) return false;
  }
  // A product is stored but for the bytes of a RoPE's output over it (apart: written after it),
  // which must be the only write it meets, contiguous (so it covers all of its bytes), and later
  // in the nodes' order: q's output or k's for q's product, k's for k's (q's output is written
  // before k's RoPE reads k's product).
  auto product = [&](const Tensor& o, const Tensor* const* later, int n_later, ProductSkip* skip) {
    for (int r = 0; r < nr; r++)
      if (overlap(o, *reads[r])) return false;
    const Tensor* hit = nullptr;
    for (int w = 0; w < nw; w++) {
      if (!overlap(o, *writes[w])) continue;
      if (hit) return false;
      hit = writes[w];
    }
    *skip = ProductSkip{};
    if (!hit) return true;
    bool is_later = false;
    for (int l = 0; l < n_later; l++) is_later = is_later || hit == later[l];
    if (!is_later || !is_contiguous(*hit)) return false;
    span(*hit, &skip->lo, &skip->hi);
    return true;
  };
  const Tensor* after_q[] = {q.out[0], k.out[0]};
  const Tensor* after_k[] = {k.out[0]};
  if (!product(oq, after_q, 2, &skip[0]) || !product(ok, after_k, 1, &skip[1]) || overlap(oq, ok)) return false;
  skip[2] = ProductSkip{};
  return true;
}

}  // namespace

size_t qkv_rope_match(const NodeArgs* nodes, size_t available, const Tuning& t) {
  ProductSkip skip[3];
  return t.qkv_rope && plan(nodes, available, skip) && matmul_qkv_rope_ready(nodes[0], t) ? 5 : 0;
}

cudaError_t qkv_rope_launch(const NodeArgs* nodes, const LaunchContext& ctx, bool prequantized) {
  ProductSkip skip[3];
  if (ctx.tuning.qkv_rope && plan(nodes, 5, skip)) {
    const cudaError_t e = matmul_launch_qkv_rope(nodes[0], ctx, prequantized, nodes + 1, skip);
    if (e != cudaErrorNotSupported) return e;
  }
  // Apart: the products (this tuning puts one off the quantized mat-vec), then the four nodes as
  // rope_store fuses them, or one by one.
  cudaError_t e;
  if (prequantized) {
    e = matmul_launch_prequantized(nodes[0], ctx);
  } else {
    const KernelDef* km = find_kernel(nodes[0].op);
    if (!km) return cudaErrorInvalidValue;
    e = km->launch(nodes[0], ctx);
  }
  if (e != cudaSuccess) return e;
  LaunchContext next = ctx;
  next.node = ctx.node + 1;
  if (rope_store_match(nodes + 1, 4) == 4) return rope_store_launch(nodes + 1, next);
  for (int i = 1; i < 5 && e == cudaSuccess; i++, next.node++) {
    const KernelDef* k = find_kernel(nodes[i].op);
    e = k ? k->launch(nodes[i], next) : cudaErrorInvalidValue;
  }
  return e;
}

}  // namespace minfer::cuda
