// ATTENTION on CUDA: out[:, h, j] = softmax_c(softcap(q[:, h, j] · k[:, h/g, c] * scale) + mask[c, j]) · v[:, h/g, c]
// (the semantics of native/cpu/attention.cpp, which this mirrors; the dtypes and shapes it takes
// are the op contract's, native/common/contract_attention.h).
//
// Design. Prefill on tensor cores has a kernel of its own (F16 k/v, head size 64/128:
// attention_flash.cuh; MINFER_CUDA_ATTN=tile turns it off), and so has decode (few rows, F16 k/v,
// head size 64/128: attention_decode.cuh up to kDecAutoMaxCells cells, attention_flash.cuh beyond;
// MINFER_CUDA_DECODE_ATTN=tile|vec|flash forces a choice; see tuning.h). Everything else runs the f32 tile kernel (attn_tile_kernel), in
// flash-attention style:
//
//  * A block owns one kv head, a tile of up to `br` ROWS and a CHUNK of the KV cells. The rows of a
//    kv head are its (query j, q head of the group) pairs, row = j * group + head_in_group, so the
//    q heads that share a kv head (GQA) sit in the same block and each K/V tile is read once for
//    all of them.
//  * It walks its cells in tiles of `bc`: the K tile is dequantized into shared memory (f32) with
//    batched 16-byte loads, together with the tile's mask values (-inf where hidden or outside the
//    row's span); every (row, cell) score is formed, four rows per thread item (dot · scale,
//    softcap, + mask); each row's online softmax is updated (running max m, running sum l, the
//    accumulator rescaled by exp(m_old - m_new)); then acc += p · V (four rows per item). Blocks of
//    few rows (decode) load the V tile with the K tile into a second buffer; blocks of many rows
//    (prefill) load it after the scores into the K tile's buffer, and skip it when no row sees any
//    cell of the tile. With spans the block only walks [min start, max end) of its rows, so causal
//    prefill never touches the tiles above the diagonal.
//  * Many blocks (prefill): chunk = all cells, one split; the block divides acc by l and writes the
//    output row (0 when the row sees no cell, as the CPU does).
//  * Few blocks (decode, short prefills: fewer than kSplitBelow (row tile, kv head) pairs):
//    flash-decoding. The KV range is split into `n_splits` chunks (grid.z) so the grid fills the
//    GPU (about two blocks per SM) even with a handful of kv heads; each block writes its partial
//    (m, l, acc[hdv]) to scratch and attn_combine_kernel merges the splits of each row:
//    out = Σ_s e^(m_s - M) acc_s / Σ_s e^(m_s - M) l_s, M = max_s m_s (0 when M = -inf).
//
// Spans are read on the device. A span outside [0, nKv] or with start > end is reported with
// report_error (detail: the offending value) and its query sees no cells (output 0), like the CPU.
// A cell is hidden when its mask value is -inf (tested before the score, like the CPU) or when its
// final score is -inf. Softcap applies when softcap != 0 (the CPU's test), before the mask add.
//
// Every tensor is addressed through its nb (q, o and the mask may be strided; k/v rows are
// contiguous in dim 0). When some pointer or stride is not a multiple of its element size, the
// loads fall back to byte loads (a runtime flag), so odd views are still read correctly.
//
// Scratch (split path only): max_splits * nHead * nQ * (hdv + 2) floats, max_splits =
// min(kMaxSplits = 128, ceil(nKv / bc), 1024 / blocks) from the shapes alone (plan_attention); launch uses at most
// that many. Tiles: br = 8/16/32 rows by rows per kv head, bc = 64 cells, shrunk to fit 200 KB of
// shared memory; head sizes too large even for br = 1, bc = 8 (thousands) are refused in check, the
// one condition beyond the op contract.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../cuda_util.cuh"
#include "../../common/contract_attention.h"
#include "../kernel.h"
#include "attention_decode.cuh"
#include "attention_flash.cuh"
#include "attention_kernels.cuh"
#include "fused.h"

namespace minfer::cuda {
namespace {

using program::DType;
namespace P = program::param::ATTENTION;
using namespace attn;

constexpr int64_t kSplitBelow = 256;     // split the KV range when fewer (row tile, kv head) blocks than this
constexpr int64_t kMaxSplitBlocks = 1024;  // at most this many blocks in all when splitting (bounds the scratch)
constexpr size_t kMaxSmem = 200 * 1024;  // dynamic shared memory we allow one block (H100/H200: 227 KB)

// The o product's Q8A activations at `act` (its n_q columns of n_head * hdv: matvec_q.cuh's
// qs_bytes, then the scales) written by the attention's last writer too, when given and the
// queries are at most Tuning::attn_quant_rows; *quantized says so.
void quantize_into(AttnParams& p, uint8_t* act, int64_t n_q, int64_t hdv, const Tuning& t, bool* quantized) {
  if (!act || hdv % 32 != 0 || n_q > t.attn_quant_rows) return;
  const size_t qs = (static_cast<size_t>(n_q * p.n_head * hdv) + 255) & ~static_cast<size_t>(255);
  p.act_q = reinterpret_cast<int8_t*>(act);
  p.act_d = reinterpret_cast<float2*>(act + qs);
  if (quantized) *quantized = true;
}

// ---- the launch plan: tile sizes, splits, shared memory, scratch; a function of the shapes only ----

struct Plan {
  int br = 0, bc = 0;      // rows per block, cells per tile
  int64_t rows = 0;        // rows of one kv head: group * nQ
  int64_t row_tiles = 0;   // ceil(rows / br)
  int max_splits = 1;      // splits the scratch is sized for (1: no split, no scratch)
  size_t smem = 0;         // dynamic shared memory bytes
  bool v_sep = false;      // separate V tile buffer (few rows: one global-load wait per tile, not two)
  bool ok = false;
};

size_t smem_bytes(int br, int bc, int64_t hd, int64_t hdv, bool v_sep = false) {
  return static_cast<size_t>(smem_layout(br, bc, hd, hdv, v_sep).total) * 4;
}

Plan plan_attention(const program::NodeView& a) {
  const Tensor *q = a.in[0], *k = a.in[1], *v = a.in[2];
  const int64_t hd = q->ne[0], hdv = v->ne[0], n_head = q->ne[1], n_q = q->ne[2];
  const int64_t n_kv_head = k->ne[1], n_kv = k->ne[2];
  Plan p;
  p.rows = (n_head / std::max<int64_t>(n_kv_head, 1)) * n_q;
  // Few rows: small row tiles (decode); many: larger ones (prefill).
  int br = p.rows <= 8 ? 8 : p.rows <= 16 ? 16 : 32;
  int bc = 64;
  while (smem_bytes(br, bc, hd, hdv) > kMaxSmem && bc > 8) bc /= 2;
  while (smem_bytes(br, bc, hd, hdv) > kMaxSmem && br > 1) br /= 2;
  if (smem_bytes(br, bc, hd, hdv) > kMaxSmem) return p;  // head sizes in the thousands
  p.br = br;
  p.bc = bc;
  p.v_sep = br <= 16 && smem_bytes(br, bc, hd, hdv, true) <= kMaxSmem;
  p.smem = smem_bytes(br, bc, hd, hdv, p.v_sep);
  p.row_tiles = (p.rows + br - 1) / br;
  const int64_t base = p.row_tiles * n_kv_head;
  const int64_t tiles = (n_kv + bc - 1) / bc;
  if (base > 0 && base < kSplitBelow && tiles > 1) {
    p.max_splits = static_cast<int>(std::min<int64_t>({kMaxSplits, tiles, std::max<int64_t>(1, kMaxSplitBlocks / base)}));
  }
  p.ok = true;
  return p;
}

// The op contract (native/common/contract_attention.h), then this backend's own limit.
const char* check_attention(const program::NodeView& args) {
  if (const char* e = contract::check_attention(args)) return e;
  const Tensor *q = args.in[0], *v = args.in[2];
  // The one limit beyond the contract: a block's tiles must fit in shared memory.
  if (!plan_attention(args).ok)
    return check_fail("attention: head sizes %lld/%lld are too large for the CUDA kernel's shared-memory tiles",
                      (long long)q->ne[0], (long long)v->ne[0]);
  return nullptr;
}

// Queries [q0, q0 + nq) of an ATTENTION node as a node of its own (q, the mask's or spans' rows and
// the output viewed at them); one query is what a one-token decode of that token runs. The tensors
// live in `keep`.
struct QueryView {
  Tensor q, m, o;
  NodeArgs args;
};
void query_view(const NodeArgs& args, int64_t q0, int64_t nq, QueryView* keep) {
  keep->q = *args.in[0];
  keep->m = *args.in[3];
  keep->o = *args.out[0];
  keep->q.data += q0 * keep->q.nb[2];
  keep->q.ne[2] = nq;
  keep->m.data += q0 * keep->m.nb[1];
  keep->m.ne[1] = nq;
  keep->o.data += q0 * keep->o.nb[2];
  keep->o.ne[2] = nq;
  keep->args = args;
  keep->args.in[0] = &keep->q;
  keep->args.in[3] = &keep->m;
  keep->args.out[0] = &keep->o;
}

// Bytes of one query's partials in a batch-invariant launch of the decode kernel (launch_invariant)
// at the most splits a one-query decode of the node's cells takes (one tile a split, at most
// kDecMaxSplits); 0 when the decode kernel does not take the node's dtypes and head sizes.
size_t inv_partials_per_query(const NodeArgs& args) {
  const Tensor *q = args.in[0], *k = args.in[1], *v = args.in[2];
  const int64_t hd = q->ne[0], hdv = v->ne[0], n_head = q->ne[1], n_kv_head = k->ne[1];
  if (n_kv_head <= 0 || !decode_takes(k->dtype, v->dtype, hd, hdv, true, true, n_head / n_kv_head)) return 0;
  const int64_t tile = (hd / 32) * kDecCellsPerWarp;
  const int64_t splits = std::min<int64_t>(kDecMaxSplits, std::max<int64_t>(1, (k->ne[2] + tile - 1) / tile));
  return static_cast<size_t>(splits) * static_cast<size_t>(n_head) * static_cast<size_t>(hdv + 2) * 4;
}

// Queries such a launch takes at once: as many as kDecInvScratch bytes of partials hold (at least
// one; 0 as above). A function of the shapes: scratch_attention reserves for it.
constexpr size_t kDecInvScratch = size_t{8} << 20;
int64_t inv_queries_per_launch(const NodeArgs& args) {
  const size_t per_q = inv_partials_per_query(args);
  if (per_q == 0) return 0;
  return std::max<int64_t>(1, std::min<int64_t>(args.in[0]->ne[2], static_cast<int64_t>(kDecInvScratch / per_q)));
}

size_t scratch_attention_node(const NodeArgs& args) {
  const Plan p = plan_attention(args);
  if (!p.ok) return 0;
  const int64_t hdv = args.in[2]->ne[0];
  const int64_t total_rows = p.rows * args.in[1]->ne[1];
  const size_t per_split = static_cast<size_t>(total_rows) * static_cast<size_t>(hdv + 2) * 4;
  size_t bytes = p.max_splits > 1 ? static_cast<size_t>(p.max_splits) * per_split : 0;
  // The decode kernel's partials (its alignment conditions are not known here: sized when the
  // dtypes and shapes qualify).
  if (decode_takes(args.in[1]->dtype, args.in[2]->dtype, args.in[0]->ne[0], hdv, true, true, p.rows))
    bytes = std::max(bytes, static_cast<size_t>(kDecMaxSplits) * per_split);
  const int64_t group = args.in[0]->ne[1] / std::max<int64_t>(args.in[1]->ne[1], 1), n_q = args.in[0]->ne[2];
  if (per_query_takes(n_q, group, p.rows) &&
      decode_takes(args.in[1]->dtype, args.in[2]->dtype, args.in[0]->ne[0], hdv, true, true, group))
    bytes = std::max(bytes, static_cast<size_t>(per_query_max_splits(total_rows, hdv)) * per_split);
  return bytes;
}

// (a batch-invariant program runs several queries inv_queries_per_launch at a time on the decode
// kernel, or one at a time: the most of every way)
size_t scratch_attention(const NodeArgs& args) {
  size_t bytes = scratch_attention_node(args);
  if (args.in[0]->ne[2] > 1) {
    QueryView one;
    query_view(args, 0, 1, &one);
    bytes = std::max(bytes, scratch_attention_node(one.args));
    bytes = std::max(bytes, static_cast<size_t>(inv_queries_per_launch(args)) * inv_partials_per_query(args));
  }
  return bytes;
}

// ---- host side ----

template <DType KT, DType VT>
cudaError_t launch_tiles(const AttnParams& p, dim3 grid, size_t smem, cudaStream_t stream) {
  if (smem > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(attn_tile_kernel<KT, VT>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  return launch_k(attn_tile_kernel<KT, VT>, grid, dim3(kThreads), smem, stream, p);
}

template <DType KT>
cudaError_t launch_tiles_v(DType vt, const AttnParams& p, dim3 grid, size_t smem, cudaStream_t stream) {
  switch (vt) {
    case DType::F32: return launch_tiles<KT, DType::F32>(p, grid, smem, stream);
    case DType::F16: return launch_tiles<KT, DType::F16>(p, grid, smem, stream);
    case DType::BF16: return launch_tiles<KT, DType::BF16>(p, grid, smem, stream);
    case DType::Q8_0: return launch_tiles<KT, DType::Q8_0>(p, grid, smem, stream);
    default: return cudaErrorInvalidValue;
  }
}

bool is_aligned(const void* ptr, int64_t a) { return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(a) == 0; }

// The kernels' parameters of an ATTENTION node: its tensors, shapes, scale and alignment (the
// launch sets the rest: splits, rows a block, partials).
AttnParams base_params(const NodeArgs& args, const LaunchContext& ctx, const Plan& plan) {
  const Tensor *q = args.in[0], *k = args.in[1], *v = args.in[2], *m = args.in[3], *o = args.out[0];
  const int64_t n_head = q->ne[1], n_q = q->ne[2], hdv = v->ne[0], n_kv = k->ne[2], n_kv_head = k->ne[1];
  AttnParams p{};
  p.q = q->data;
  p.k = k->data;
  p.v = v->data;
  p.m = m->data;
  p.o = o->data;
  p.q_nb0 = q->nb[0], p.q_nb1 = q->nb[1], p.q_nb2 = q->nb[2];
  p.k_nb1 = k->nb[1], p.k_nb2 = k->nb[2];
  p.v_nb1 = v->nb[1], p.v_nb2 = v->nb[2];
  p.m_nb0 = m->nb[0], p.m_nb1 = m->nb[1];
  p.o_nb0 = o->nb[0], p.o_nb1 = o->nb[1], p.o_nb2 = o->nb[2];
  p.hd = static_cast<int>(q->ne[0]);
  p.hdv = static_cast<int>(hdv);
  p.n_head = static_cast<int>(n_head);
  p.n_kv_head = static_cast<int>(n_kv_head);
  p.n_q = static_cast<int>(n_q);
  p.n_kv = static_cast<int>(n_kv);
  p.group = static_cast<int>(n_head / n_kv_head);
  p.rows = static_cast<int>(plan.rows);
  p.br = plan.br;
  p.bc = plan.bc;
  p.mask_kind = m->dtype == DType::I32 ? 2 : m->dtype == DType::F16 ? 1 : 0;
  p.scale = param_f32(args, P::scale);
  p.softcap = param_f32(args, P::softcap);
  p.err = ctx.err;
  p.node = ctx.node;

  // Element alignment of every pointer and stride the kernels use (else byte loads).
  const int64_t ka = k->dtype == DType::F32 ? 4 : k->dtype == DType::Q8_0 ? 1 : 2;
  const int64_t va = v->dtype == DType::F32 ? 4 : v->dtype == DType::Q8_0 ? 1 : 2;
  const int64_t ma = m->dtype == DType::F16 ? 2 : 4;
  p.aligned = is_aligned(q->data, 4) && q->nb[0] % 4 == 0 && q->nb[1] % 4 == 0 && q->nb[2] % 4 == 0 &&
              is_aligned(o->data, 4) && o->nb[0] % 4 == 0 && o->nb[1] % 4 == 0 && o->nb[2] % 4 == 0 &&
              is_aligned(k->data, ka) && k->nb[1] % ka == 0 && k->nb[2] % ka == 0 && is_aligned(v->data, va) &&
              v->nb[1] % va == 0 && v->nb[2] % va == 0 && is_aligned(m->data, ma) && m->nb[0] % ma == 0 &&
              m->nb[1] % ma == 0;

  // Whole-unit row reads: 16-byte aligned rows (Q8_0: 2-byte aligned) and dims in whole units.
  auto vec_rows = [](const Tensor* t) {
    if (t->dtype == DType::Q8_0) return is_aligned(t->data, 2) && t->nb[1] % 2 == 0 && t->nb[2] % 2 == 0;
    const int64_t per = t->dtype == DType::F32 ? 4 : 8;
    return is_aligned(t->data, 16) && t->nb[1] % 16 == 0 && t->nb[2] % 16 == 0 && t->ne[0] % per == 0;
  };
  p.k_vec = vec_rows(k);
  p.v_vec = vec_rows(v);
  p.hd4 = q->ne[0] % 4 == 0;
  p.v_sep = plan.v_sep;
  return p;
}

cudaError_t launch_attention_into(const NodeArgs& args, const LaunchContext& ctx, uint8_t* act, bool* quantized);

// Queries [q0, q0 + nq) of a batch-invariant ATTENTION on the decode kernel, each query's blocks as a
// one-token decode of it runs them: the rows a block and the splits of one query (Tuning::decode_rows,
// decode_splits of the node's cells over one query's row groups), so each query's cells, tiles and
// partials are that decode's (split_cells_dec), and its splits are merged by combine_row in the same
// order (by the last block or by the combine kernel: the same sums).
cudaError_t launch_decode_invariant(const NodeArgs& view, const LaunchContext& ctx) {
  const Plan plan = plan_attention(view);
  if (!plan.ok) return cudaErrorInvalidValue;
  AttnParams p = base_params(view, ctx, plan);
  p.dec_rows = decode_rows_per_block(p.group, ctx.tuning.decode_rows);
  const int64_t groups = static_cast<int64_t>(p.n_kv_head) * (p.group / p.dec_rows);
  p.n_splits = ctx.scratch ? decode_splits(p.n_kv, groups, p.hd, ctx.sm_count) : 1;
  p.part = p.n_splits > 1 ? static_cast<float*>(ctx.scratch) : nullptr;
  const bool fused = ctx.tuning.fused_combine && p.n_splits > 1 && p.dec_rows <= 2 && ctx.counters &&
                     static_cast<int64_t>(p.n_kv_head) * (p.rows / p.dec_rows) <= ctx.n_counters;
  p.counters = fused ? ctx.counters : nullptr;
  return launch_decode(p, ctx.stream);
}

// Batch-invariant (Tuning::batch_invariant): every query's output the bits of a one-token decode of
// it. With Tuning::invariant_batched, where that decode runs the decode kernel (caches of up to
// kDecAutoMaxCells cells), the queries go inv_queries_per_launch at a time (launch_decode_invariant);
// otherwise one at a time, each as its own node. (The o product then quantizes its columns itself: the same codes, act_quant.cuh.)
cudaError_t launch_invariant(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor *q = args.in[0], *k = args.in[1], *v = args.in[2];
  const int64_t n_q = q->ne[2], n_kv = k->ne[2], group = q->ne[1] / std::max<int64_t>(k->ne[1], 1);
  const Plan plan = plan_attention(args);
  if (!plan.ok) return cudaErrorInvalidValue;
  const AttnParams all = base_params(args, ctx, plan);  // (each view of it is aligned when it is)
  const bool decode = ctx.tuning.invariant_batched && ctx.scratch && inv_queries_per_launch(args) > 0 &&
                      (ctx.tuning.attn_decode == DecodeAttn::Vec ||
                       (ctx.tuning.attn_decode == DecodeAttn::Auto && n_kv <= kDecAutoMaxCells)) &&
                      decode_takes(k->dtype, v->dtype, q->ne[0], v->ne[0], all.k_vec && all.v_vec, all.aligned, group);
  const int64_t per = decode ? inv_queries_per_launch(args) : 1;
  for (int64_t q0 = 0; q0 < n_q; q0 += per) {
    QueryView view;
    query_view(args, q0, std::min(per, n_q - q0), &view);
    const cudaError_t e = decode ? launch_decode_invariant(view.args, ctx) : launch_attention_into(view.args, ctx, nullptr, nullptr);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// act: the attention's last writer also writes its output as Q8A there (fused.h, quantize_into);
// *quantized says whether it did.
// Blocks an SM the per-query splits aim for: Tuning::per_query_blocks, else 1 on the tensor-core
// kernel and 4 on the decode kernel. (The splits are counted over the whole cache, so with 1 an SM
// a step of 64 queries of 128-256 cells each runs one block a query, no merge, while 4 queries over
// the same cache take about 9 splits each, most of them past their query's cells: docs/PERFORMANCE.md
// session 36 measured taking only the splits that hold cells, no faster.)
int per_query_per_sm(const Tuning& t, bool flash) { return t.per_query_blocks > 0 ? t.per_query_blocks : flash ? 1 : 4; }
// The per-query splits after Tuning::per_query_splits' cap (0: none).
int per_query_capped(const Tuning& t, int splits) { return t.per_query_splits > 0 ? std::min(splits, t.per_query_splits) : splits; }

cudaError_t launch_attention_into(const NodeArgs& args, const LaunchContext& ctx, uint8_t* act, bool* quantized) {
  if (quantized) *quantized = false;
  // Batch-invariant (Tuning::batch_invariant): each query as a one-token decode runs it — its own
  // launch, kernel and splits for the node's cells, so that its output is that decode's bits. (The
  // o product then quantizes its columns itself: the same codes, act_quant.cuh.)
  if (ctx.tuning.batch_invariant && args.in[0]->ne[2] > 1) return launch_invariant(args, ctx);
  const Tensor *q = args.in[0], *k = args.in[1], *v = args.in[2];
  const Plan plan = plan_attention(args);
  if (!plan.ok) return cudaErrorInvalidValue;
  const int64_t n_head = q->ne[1], n_q = q->ne[2], hdv = v->ne[0], n_kv = k->ne[2], n_kv_head = k->ne[1];
  if (n_head == 0 || n_q == 0 || hdv == 0) return cudaGetLastError();  // nothing to write

  AttnParams p = base_params(args, ctx, plan);
  const bool per_query = ctx.tuning.attn_per_query && ctx.tuning.attn_decode != DecodeAttn::Tile &&
                         per_query_takes(n_q, p.group, plan.rows);
  const bool flash_ok = flash_takes(k->dtype, v->dtype, q->ne[0], hdv, p.softcap, p.k_vec && p.v_vec, p.aligned);
  // Several queries one a block on the tensor-core kernel (Tuning::per_query_flash; not when the
  // decode kernel is asked for by name, DecodeAttn::Vec): a warp holds the query's q heads of a kv
  // head as rows (per_query_takes: group <= kDecMaxRows), its splits sized as the decode kernel's
  // (the scratch holds per_query_max_splits of them).
  if (per_query && ctx.tuning.per_query_flash && ctx.tuning.attn_decode != DecodeAttn::Vec && flash_ok) {
    p.flash_pq = true;
    p.n_splits = !ctx.scratch ? 1
                              : per_query_splits(n_kv, n_kv_head, n_q, kFlashCells, ctx.sm_count,
                                                 per_query_max_splits(plan.rows * n_kv_head, hdv),
                                                 per_query_per_sm(ctx.tuning, true));
    p.n_splits = per_query_capped(ctx.tuning, p.n_splits);
    p.part = p.n_splits > 1 ? static_cast<float*>(ctx.scratch) : nullptr;
    // (the combine kernel, the last writer, quantizes; one split's output is the kernel's own store)
    if (p.n_splits > 1) quantize_into(p, act, n_q, hdv, ctx.tuning, quantized);
    return launch_flash(p, 1, ctx.stream);
  }
  const bool want_decode = per_query || ctx.tuning.attn_decode == DecodeAttn::Vec ||
                           (ctx.tuning.attn_decode == DecodeAttn::Auto && n_kv <= kDecAutoMaxCells);
  if (want_decode && decode_takes(k->dtype, v->dtype, q->ne[0], hdv, p.k_vec && p.v_vec, p.aligned,
                                  per_query ? p.group : plan.rows)) {
    // (several queries: one query's rows a block, as measured best for serving; one query: fewer
    // rows a block, Tuning::decode_rows, since its grid is otherwise a handful of blocks)
    p.dec_rows = per_query ? p.group : decode_rows_per_block(p.rows, ctx.tuning.decode_rows);
    // blocks of one split: kv heads times the row groups of dec_rows (per query: of one query)
    const int64_t groups = n_kv_head * ((per_query ? p.group : p.rows) / p.dec_rows);
    p.n_splits = !ctx.scratch ? 1
                 : per_query  ? per_query_splits(n_kv, groups, n_q, (p.hd / 32) * kDecCellsPerWarp, ctx.sm_count,
                                                 per_query_max_splits(plan.rows * n_kv_head, hdv),
                                                 per_query_per_sm(ctx.tuning, false))
                              : decode_splits(n_kv, groups, p.hd, ctx.sm_count);
    if (per_query) p.n_splits = per_query_capped(ctx.tuning, p.n_splits);
    p.part = p.n_splits > 1 ? static_cast<float*>(ctx.scratch) : nullptr;
    // the splits merged by their last block (one counter per kv head and row group) or by the
    // combine kernel
    const bool fused = ctx.tuning.fused_combine && p.n_splits > 1 && p.dec_rows <= 2 && ctx.counters &&
                       n_kv_head * (p.rows / p.dec_rows) <= ctx.n_counters;
    p.counters = fused ? ctx.counters : nullptr;
    quantize_into(p, act, n_q, hdv, ctx.tuning, quantized);
    return launch_decode(p, ctx.stream);
  }
  // Decode beyond the decode kernel's caches (or asked for): the flash kernel, a warp a block, the
  // cells split over enough blocks to fill the GPU.
  const bool flash_decode = plan.rows <= kDecMaxRows && (ctx.tuning.attn_decode == DecodeAttn::Flash ||
                                                         (ctx.tuning.attn_decode == DecodeAttn::Auto && n_kv > kDecAutoMaxCells));
  const bool flash_prefill = plan.rows > kDecMaxRows && ctx.tuning.attn_mma;
  if (flash_ok && (flash_decode || flash_prefill)) {
    int warps = flash_decode ? 1 : std::max(1, std::min(ctx.tuning.attn_warps, 4));
    while (warps > 1 && 16 * (warps / 2) >= plan.rows) warps /= 2;  // no block of only empty warps
    const int64_t blocks = (plan.rows + 16 * warps - 1) / (16 * warps) * n_kv_head;
    p.n_splits =
        plan.max_splits > 1 && ctx.scratch ? flash_splits(n_kv, blocks, ctx.sm_count, plan.max_splits, flash_decode) : 1;
    p.part = p.n_splits > 1 ? static_cast<float*>(ctx.scratch) : nullptr;
    return launch_flash(p, warps, ctx.stream);
  }

  // Splits: enough blocks for about two waves, never more than the scratch holds.
  const int64_t base = plan.row_tiles * n_kv_head;
  int n_splits = 1;
  if (plan.max_splits > 1 && ctx.scratch) {
    const int64_t want = (2 * static_cast<int64_t>(std::max(ctx.sm_count, 1)) + base - 1) / base;
    n_splits = static_cast<int>(std::min<int64_t>(plan.max_splits, std::max<int64_t>(1, want)));
  }
  const int64_t tiles = (n_kv + plan.bc - 1) / plan.bc;
  const int64_t tiles_per_split = std::max<int64_t>(1, (tiles + n_splits - 1) / n_splits);
  // (the splits of the whole cache; each block cuts its rows' span union into as many: split_cells)
  const int64_t chunk = std::min<int64_t>(tiles_per_split * plan.bc, std::max<int64_t>(n_kv, 1));
  n_splits = static_cast<int>(std::max<int64_t>(1, (n_kv + chunk - 1) / chunk));
  p.n_splits = n_splits;
  p.part = n_splits > 1 ? static_cast<float*>(ctx.scratch) : nullptr;

  const dim3 grid(static_cast<unsigned>(plan.row_tiles), static_cast<unsigned>(n_kv_head), static_cast<unsigned>(n_splits));
  cudaError_t e;
  switch (k->dtype) {
    case DType::F32: e = launch_tiles_v<DType::F32>(v->dtype, p, grid, plan.smem, ctx.stream); break;
    case DType::F16: e = launch_tiles_v<DType::F16>(v->dtype, p, grid, plan.smem, ctx.stream); break;
    case DType::BF16: e = launch_tiles_v<DType::BF16>(v->dtype, p, grid, plan.smem, ctx.stream); break;
    case DType::Q8_0: e = launch_tiles_v<DType::Q8_0>(v->dtype, p, grid, plan.smem, ctx.stream); break;
    default: return cudaErrorInvalidValue;
  }
  if (e != cudaSuccess) return e;
  if (n_splits > 1) {
    return launch_k(attn_combine_kernel, dim3(static_cast<unsigned>(plan.rows), static_cast<unsigned>(n_kv_head)),
                    dim3(kCombineThreads), 0, ctx.stream, p);
  }
  return cudaSuccess;
}

cudaError_t launch_attention(const NodeArgs& args, const LaunchContext& ctx) {
  return launch_attention_into(args, ctx, nullptr, nullptr);
}

const Registrar attention_kernel(program::Op::ATTENTION, {check_attention, scratch_attention, launch_attention});

}  // namespace

cudaError_t attention_launch_quantizing(const NodeArgs& attn, const LaunchContext& ctx, uint8_t* act, bool* quantized) {
  return launch_attention_into(attn, ctx, act, quantized);
}
}  // namespace minfer::cuda
