// A fused launch (fused.h): the producer of a decode step's rows (one sequence's, or up to 64
// sequences'), RMS_NORM_MUL (before the q/k/v projections, gate/up, the output) or SWIGLU / GEGLU
// (before down), then the matmul that reads them. The matmul would first quantize its activation
// columns into scratch (Q8A or Q8K, a kernel of its own); here the producer's kernel writes that
// region as it writes its output, with the same arithmetic, and the matmul's mat-vecs (or int8
// tensor-core kernel) read it. MINFER_CUDA_FUSE=0 runs the two nodes separately; the results are
// the same either way.
#include "fused.h"

namespace minfer::cuda {

namespace {

bool producer_supported(const NodeArgs& p, QuantAct fmt) {
  return p.op == program::Op::RMS_NORM_MUL ? norm_quant_supported(p, fmt) : gated_quant_supported(p, fmt);
}

}  // namespace

size_t producer_matvec_match(const NodeArgs* nodes, size_t available, const Tuning& t) {
  if (available < 2) return 0;
  const NodeArgs &prod = nodes[0], &mm = nodes[1];
  size_t offset = 0;
  // (the default tuning here; the launch plans again with the tuning it runs under)
  const QuantAct fmt = matmul_quant_plan(mm, &offset);
  if (!producer_supported(prod, fmt)) return 0;
  // The matmul's activations are exactly the producer's output rows, packed.
  const Tensor &o = *prod.out[0], &x = *(mm.op == program::Op::MUL_MAT_MULTI ? mm.in[0] : mm.in[1]);
  if (x.data != o.data || x.ne[0] != o.ne[0] || x.ne[1] != o.ne[1] * o.ne[2] * o.ne[3] || x.nb[0] != o.nb[0] ||
      (x.ne[1] > 1 && x.nb[1] != o.nb[1]))
    return 0;
  // The q/k/v product's RoPEs and cache stores in its epilogue too (qkv_rope.cu).
  if (mm.op == program::Op::MUL_MAT_MULTI && qkv_rope_match(nodes + 1, available - 1, t) == 5) return 6;
  return 2;
}

// count 2: the producer and the matmul; 6: the matmul with qkv_rope's four nodes.
cudaError_t producer_matvec_launch(const NodeArgs* nodes, size_t count, const LaunchContext& ctx) {
  size_t offset = 0;
  const QuantAct fmt = matmul_quant_plan(nodes[1], &offset, ctx.tuning);
  LaunchContext next = ctx;
  next.node = ctx.node + 1;
  const Tensor& x = *(nodes[1].op == program::Op::MUL_MAT_MULTI ? nodes[1].in[0] : nodes[1].in[1]);
  if (!producer_supported(nodes[0], fmt) || !ctx.scratch || x.ne[1] > ctx.tuning.fuse_rows) {
    // Under this tuning the matmul reads another format (several columns on another kernel), or
    // more rows than Tuning::fuse_rows: the two nodes as they run apart.
    const KernelDef *kp = find_kernel(nodes[0].op), *km = find_kernel(nodes[1].op);
    if (!kp || !km) return cudaErrorInvalidValue;
    const cudaError_t e = kp->launch(nodes[0], ctx);
    if (e != cudaSuccess) return e;
    return count == 6 ? qkv_rope_launch(nodes + 1, next, false) : km->launch(nodes[1], next);
  }
  uint8_t* act = static_cast<uint8_t*>(ctx.scratch) + offset;
  const cudaError_t e = nodes[0].op == program::Op::RMS_NORM_MUL ? norm_launch_quantizing(nodes[0], ctx, fmt, act)
                                                                 : gated_launch_quantizing(nodes[0], ctx, fmt, act);
  if (e != cudaSuccess) return e;
  return count == 6 ? qkv_rope_launch(nodes + 1, next, true) : matmul_launch_prequantized(nodes[1], next);
}

}  // namespace minfer::cuda
