// A fused launch (fused.h): ATTENTION of decode queries (a step of one or more sequences), then
// the matmul that reads its output (the o projection: MUL_MAT or MUL_MAT_ADD over each query's
// heads' outputs as one column). The matmul would first quantize those columns into its Q8A
// activation region with a kernel of its own; here the attention's last writer (the decode
// kernel's store, or the merge of its splits) writes the same codes and scales as it writes its
// output (act_quant.cuh: the same arithmetic), and the matmul's kernels (mat-vec or int8) read
// them. The attention's own scratch (its splits' partials) moves past the matmul's, so the two
// regions do not meet. When the attention runs another kernel (long caches: the tile kernel), the
// tensor-core kernel in one split (its own store), or more queries than Tuning::attn_quant_rows,
// nothing is quantized and the matmul runs as it would alone.
// MINFER_CUDA_FUSE=0 runs the two nodes separately; the results are the same either way.
#include "../kernel.h"
#include "fused.h"

namespace minfer::cuda {

namespace {

constexpr size_t kAlign = 256;
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Bytes of the matmul's own scratch: the attention's starts after it.
size_t matmul_scratch(const NodeArgs& mm) {
  const KernelDef* k = find_kernel(mm.op);
  return k && k->scratch_bytes ? aligned(k->scratch_bytes(mm)) : 0;
}

}  // namespace

size_t attn_matvec_match(const NodeArgs* nodes, size_t available) {
  if (available < 2) return 0;
  const NodeArgs &at = nodes[0], &mm = nodes[1];
  if (at.op != program::Op::ATTENTION || (mm.op != program::Op::MUL_MAT && mm.op != program::Op::MUL_MAT_ADD)) return 0;
  size_t offset = 0;
  if (matmul_quant_plan(mm, &offset) != QuantAct::Q8A) return 0;
  // Queries whose heads' outputs, contiguous, are the matmul's activation columns (one a query;
  // matmul_quant_plan has taken at most kFusedProducerMaxCols packed columns).
  const Tensor &o = *at.out[0], &x = *mm.in[1];
  const int64_t hdv = o.ne[0], heads = o.ne[1], queries = o.ne[2];
  if (hdv % 32 != 0 || o.ne[3] != 1 || o.nb[0] != 4 || o.nb[1] != 4 * hdv ||
      (queries > 1 && o.nb[2] != 4 * hdv * heads))
    return 0;
  if (x.data != o.data || x.ne[0] != hdv * heads || x.ne[1] != queries) return 0;
  return 2;
}

size_t attn_matvec_scratch(const NodeArgs* nodes) {
  const KernelDef* k = find_kernel(nodes[0].op);
  return matmul_scratch(nodes[1]) + (k && k->scratch_bytes ? k->scratch_bytes(nodes[0]) : 0);
}

cudaError_t attn_matvec_launch(const NodeArgs* nodes, const LaunchContext& ctx) {
  size_t offset = 0;
  if (matmul_quant_plan(nodes[1], &offset) != QuantAct::Q8A || !ctx.scratch) return cudaErrorInvalidValue;
  uint8_t* base = static_cast<uint8_t*>(ctx.scratch);
  LaunchContext at = ctx;
  at.scratch = base + matmul_scratch(nodes[1]);
  bool quantized = false;
  const cudaError_t e = attention_launch_quantizing(nodes[0], at, base + offset, &quantized);
  if (e != cudaSuccess) return e;
  LaunchContext next = ctx;
  next.node = ctx.node + 1;
  if (quantized) return matmul_launch_prequantized(nodes[1], next);
  const KernelDef* k = find_kernel(nodes[1].op);
  return k ? k->launch(nodes[1], next) : cudaErrorInvalidValue;
}

}  // namespace minfer::cuda
