// The fused launches behind kernel.h's fused_match / fused_launch (dispatched in fused.cu by the
// first node's op). Each *_match returns how many nodes from `nodes` its kernel takes (0: none);
// each *_launch enqueues that run. The nodes are already checked one by one; a match adds only
// the conditions under which running them together gives the same results.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../kernel.h"

namespace minfer::cuda {

// ROPE(q), ROPE(k), SET_ROWS(k cache), SET_ROWS(v cache): rope_store.cu. rope_store_form: the four
// nodes have that form (shared positions and parameters, the k store reading k's output as rows,
// both stores at the same cells), whatever memory they share; rope_store_match adds what its
// kernels need of that.
bool rope_store_form(const NodeArgs* nodes, size_t available);
size_t rope_store_match(const NodeArgs* nodes, size_t available);
cudaError_t rope_store_launch(const NodeArgs* nodes, const LaunchContext& ctx);

// MUL_MAT_MULTI(q, k, v), then the four nodes of rope_store_match reading its products: the
// products' mat-vec rotates and stores them itself (qkv_rope.cu). prequantized: the activations are
// in the product's scratch already (a producer's launch wrote them).
size_t qkv_rope_match(const NodeArgs* nodes, size_t available, const Tuning& t);
cudaError_t qkv_rope_launch(const NodeArgs* nodes, const LaunchContext& ctx, bool prequantized);

// RMS_NORM_MUL, SWIGLU or GEGLU of one row, then the mat-vec(s) reading it (MUL_MAT, MUL_MAT_ADD,
// MUL_MAT_MULTI): the producer also quantizes its output into the matmul's activation region
// (producer_matvec.cu). 6 nodes: the matmul is qkv_rope_match's q/k/v product with its four nodes.
size_t producer_matvec_match(const NodeArgs* nodes, size_t available, const Tuning& t);
cudaError_t producer_matvec_launch(const NodeArgs* nodes, size_t count, const LaunchContext& ctx);

// ATTENTION of decode queries, then the matmul reading its output (the o projection): the
// attention's last writer (its decode kernel's store or its splits' merge) also quantizes the
// output into the matmul's Q8A activation region (a column a query); the attention's own scratch
// moves past the matmul's.
// (attn_matvec.cu)
size_t attn_matvec_match(const NodeArgs* nodes, size_t available);
cudaError_t attn_matvec_launch(const NodeArgs* nodes, const LaunchContext& ctx);
size_t attn_matvec_scratch(const NodeArgs* nodes);

// ---- the pieces those use, from the ops' own files ----

// Most activation columns (rows of a producer's output) a producer quantizes for its matmul.
constexpr int64_t kFusedProducerMaxCols = 64;

// Activation formats of the quantized mat-vec (ops/matvec_q.cuh ActFmt).
enum class QuantAct : int { None = 0, Q8A = 2, Q8K = 3 };

// matmul.cu: the format a MUL_MAT / MUL_MAT_ADD / MUL_MAT_MULTI of F32 activations (up to
// kFusedProducerMaxCols packed columns) quantizes them into under tuning `t`, when every weight
// reads that one format (the quantized mat-vec: Q8A or Q8K; the int8 tensor-core kernel: Q8A), and
// that region's offset in scratch; None otherwise (another path, or formats that differ by weight).
QuantAct matmul_quant_plan(const NodeArgs& mm, size_t* offset, const Tuning& t = Tuning{});
// matmul.cu: runs the node as its kernel does, its activations already quantized in scratch.
cudaError_t matmul_launch_prequantized(const NodeArgs& mm, const LaunchContext& ctx);
// Bytes [lo, hi) of a product's output that its epilogue does not store (0, 0: it stores all).
struct ProductSkip {
  uintptr_t lo = 0, hi = 0;
};
// matmul.cu: MUL_MAT_MULTI(q, k, v) whose mat-vecs also do the four nodes after it (rope: ROPE q,
// ROPE k, SET_ROWS k, SET_ROWS v, as rope_store_match takes them; ctx.node is the product's index)
// in their epilogue (ops/matvec_q.cuh MvRope): the rotated q and k, k's and v's cache rows, and the
// products but for skip[i]'s bytes of product i. cudaErrorNotSupported, with nothing enqueued, when
// a product is not on the quantized mat-vec (or its shape) under ctx.tuning.
cudaError_t matmul_launch_qkv_rope(const NodeArgs& mm, const LaunchContext& ctx, bool prequantized, const NodeArgs* rope,
                                   const ProductSkip* skip);
// Whether, under tuning t, every product of that MUL_MAT_MULTI is on the quantized mat-vec with the
// epilogue (the weights' alignment aside, known at launch).
bool matmul_qkv_rope_ready(const NodeArgs& mm, const Tuning& t);

// norm.cu: RMS_NORM_MUL of up to 64 packed rows of at most 8192 elements (a multiple of the
// format's block), writing its F32 output and the same values quantized as `fmt` at `act` (the
// matmul's region for as many columns: qs, then scales).
bool norm_quant_supported(const NodeArgs& norm, QuantAct fmt);
cudaError_t norm_launch_quantizing(const NodeArgs& norm, const LaunchContext& ctx, QuantAct fmt, uint8_t* act);

// elementwise.cu: SWIGLU or GEGLU of up to 64 rows, each contiguous (a multiple of the format's
// block), likewise.
bool gated_quant_supported(const NodeArgs& sw, QuantAct fmt);
// attention.cu: ATTENTION as its kernel runs it; with `act` (Q8A codes, then the scales) the
// decode kernel, or the merge of the tensor-core kernel's splits, also writes its output quantized
// there and *quantized says so (the kernels of long caches and prefill, one split of the tensor-core
// kernel and more queries than Tuning::attn_quant_rows do not: then *quantized is false and act
// is untouched).
cudaError_t attention_launch_quantizing(const NodeArgs& attn, const LaunchContext& ctx, uint8_t* act, bool* quantized);
cudaError_t gated_launch_quantizing(const NodeArgs& sw, const LaunchContext& ctx, QuantAct fmt, uint8_t* act);

}  // namespace minfer::cuda
