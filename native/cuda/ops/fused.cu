// kernel.h's fused launches: the first node's op picks the pattern (fused.h).
#include "fused.h"

namespace minfer::cuda {

size_t fused_match(const NodeArgs* nodes, size_t available, const Tuning& t) {
  if (available < 2) return 0;
  switch (nodes[0].op) {
    case program::Op::ROPE: return rope_store_match(nodes, available);
    case program::Op::RMS_NORM_MUL:
    case program::Op::SWIGLU:
    case program::Op::GEGLU: return producer_matvec_match(nodes, available, t);
    case program::Op::ATTENTION: return attn_matvec_match(nodes, available);
    case program::Op::MUL_MAT_MULTI: return qkv_rope_match(nodes, available, t);
    default: return 0;
  }
}

size_t fused_scratch_bytes(const NodeArgs* nodes, size_t count) {
  return nodes[0].op == program::Op::ATTENTION && count == 2 ? attn_matvec_scratch(nodes) : 0;
}

cudaError_t fused_launch(const NodeArgs* nodes, size_t count, const LaunchContext& ctx) {
  switch (nodes[0].op) {
    case program::Op::ROPE: return count == 4 ? rope_store_launch(nodes, ctx) : cudaErrorInvalidValue;
    case program::Op::RMS_NORM_MUL:
    case program::Op::SWIGLU:
    case program::Op::GEGLU: return count == 2 || count == 6 ? producer_matvec_launch(nodes, count, ctx) : cudaErrorInvalidValue;
    case program::Op::ATTENTION: return count == 2 ? attn_matvec_launch(nodes, ctx) : cudaErrorInvalidValue;
    case program::Op::MUL_MAT_MULTI: return count == 5 ? qkv_rope_launch(nodes, ctx, false) : cudaErrorInvalidValue;
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace minfer::cuda
