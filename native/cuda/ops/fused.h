// The fused launches behind kernel.h's fused_match / fused_launch (dispatched in fused.cu by the
// first node's op). Each *_match returns how many nodes from `nodes` its kernel takes (0: none);
// each *_launch enqueues that run. The nodes are already checked one by one; a match adds only
// the conditions under which running them together gives the same results.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../kernel.h"

namespace minfer::cuda {

// ROPE(q), ROPE(k), SET_ROWS(k cache), SET_ROWS(v cache): rope_store.cu.
size_t rope_store_match(const NodeArgs* nodes, size_t available);
cudaError_t rope_store_launch(const NodeArgs* nodes, const LaunchContext& ctx);

// RMS_NORM_MUL, SWIGLU or GEGLU of one row, then the mat-vec(s) reading it (MUL_MAT, MUL_MAT_ADD,
// MUL_MAT_MULTI): the producer also quantizes its output into the matmul's activation region
// (producer_matvec.cu).
size_t producer_matvec_match(const NodeArgs* nodes, size_t available);
cudaError_t producer_matvec_launch(const NodeArgs* nodes, const LaunchContext& ctx);

// ATTENTION of one query, then the matmul reading its output (the o projection): the attention's
// last writer (its decode kernel's store or its splits' merge) also quantizes the output into the
// matmul's Q8A activation region; the attention's own scratch moves past the matmul's.
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

// norm.cu: RMS_NORM_MUL of up to 64 packed rows of at most 8192 elements (a multiple of the
// format's block), writing its F32 output and the same values quantized as `fmt` at `act` (the
// matmul's region for as many columns: qs, then scales).
bool norm_quant_supported(const NodeArgs& norm, QuantAct fmt);
cudaError_t norm_launch_quantizing(const NodeArgs& norm, const LaunchContext& ctx, QuantAct fmt, uint8_t* act);

// elementwise.cu: SWIGLU or GEGLU of up to 64 rows, each contiguous (a multiple of the format's
// block), likewise.
bool gated_quant_supported(const NodeArgs& sw, QuantAct fmt);
// attention.cu: ATTENTION as its kernel runs it; with `act` (Q8A codes, then the scales) the
// decode kernel also writes its output quantized there and *quantized says so (the kernels of
// long caches and prefill do not: then *quantized is false and act is untouched).
cudaError_t attention_launch_quantizing(const NodeArgs& attn, const LaunchContext& ctx, uint8_t* act, bool* quantized);
cudaError_t gated_launch_quantizing(const NodeArgs& sw, const LaunchContext& ctx, QuantAct fmt, uint8_t* act);

}  // namespace minfer::cuda
