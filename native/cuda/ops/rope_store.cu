// A fused launch (fused.h; dispatched by fused.cu): the four nodes an attention layer's graph
// writes its cache with,
//   ROPE(q) → q_rope;  ROPE(k) → k_rope;  SET_ROWS(k_cache, k_rope as rows, cells);  SET_ROWS(v_cache, v, cells)
// run as one kernel instead of four. A block takes a token: it forms the angles once for both
// RoPEs (same positions and parameters), rotates q and k, writes both outputs and stores the
// rotated k row, and the v row, into the caches at the token's cell. Each value is computed
// exactly as the separate kernels compute it (rope_common.cuh, store_elem), so the results are
// bit-identical; MINFER_CUDA_FUSE=0 runs the four nodes separately.
//
// The match is strict: both RoPEs share positions, frequency factors and parameters, have at most
// 512 rotated dims and 3-D tensors; the k store's source is the k RoPE's output, contiguous, seen
// as one row per token; both stores take the same index vector, one index per token, into F32,
// F16 or BF16 rows. A block runs its token's q, k and v phases one after another, so with one
// token the nodes' order holds and memory reused between them is fine; with several tokens no
// output may overlap another node's input or output. Anything else runs unfused. One token whose
// heads rotate whole (decode) takes two wide launches instead (rope_store_flat_kernel: the q
// pairs, then the k pairs and the k and v rows), when the second's writes are independent, or
// (by default, MINFER_CUDA_ROPE_BLOCK=0 turns it off) one block that loads everything first.
// SET_ROWS's rules hold: an index out of range is reported for its node and not written, and of
// two tokens with the same index the later one is stored.
#include <cstring>

#include "../cuda_util.cuh"
#include "../kernel.h"
#include "fused.h"
#include "rope_common.cuh"

namespace minfer::cuda {
namespace {

using program::DType;
using program::Op;

constexpr int kThreads = 256;
constexpr int kMaxHalf = 256;  // rotated pairs (nDims / 2) held in shared memory

bool is_plain_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
// Bytes of one element (a block, for block types) from the format's table.
int64_t elem_bytes(DType t) {
  const program::BlockLayout* b = program::block_layout(static_cast<int32_t>(t));
  return b ? b->type_size : 1;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.data != b.data || a.dtype != b.dtype) return false;
  for (int d = 0; d < 4; d++)
    if (a.ne[d] != b.ne[d] || a.nb[d] != b.nb[d]) return false;
  return true;
}

bool rope_pair_matches(const NodeArgs& q, const NodeArgs& k) {
  namespace P = program::param::ROPE;
  if (q.op != Op::ROPE || k.op != Op::ROPE || q.n_inputs != k.n_inputs) return false;
  if (std::memcmp(q.params, k.params, sizeof(uint32_t) * P::kCount) != 0) return false;
  if (!same_tensor(*q.in[1], *k.in[1])) return false;
  if (q.n_inputs == 3 && !same_tensor(*q.in[2], *k.in[2])) return false;
  const int n_dims = param_i32(q, P::nDims);
  if (n_dims / 2 > kMaxHalf) return false;
  const Tensor &qa = *q.in[0], &ka = *k.in[0];
  if (qa.ne[3] != 1 || ka.ne[3] != 1 || qa.ne[2] != ka.ne[2]) return false;
  return true;
}

// A SET_ROWS of one row per token (tokens rows in src) into plain float rows, index vector idx.
bool store_matches(const NodeArgs& s, int64_t tokens) {
  if (s.op != Op::SET_ROWS) return false;
  const Tensor &src = *s.in[1], &idx = *s.in[2], &dst = *s.out[0];
  return is_plain_float(dst.dtype) && dst.nb[0] == elem_bytes(dst.dtype) && dst.ne[2] == 1 && dst.ne[3] == 1 &&
         src.ne[1] == tokens && src.ne[2] == 1 && src.ne[3] == 1 && src.nb[0] == 4 && idx.ne[0] == tokens &&
         idx.ne[1] == 1 && idx.ne[2] == 1 && idx.ne[3] == 1;
}

struct RopeStoreArgs {
  Tensor q_in, q_out, k_in, k_out, pos, ff, k_dst, idx, v_src, v_dst;
  RopeParams p;
  DeviceError* err;
  int k_node, v_node;  // the stores' node indices, for reports
};

__device__ inline float ld(const Tensor& t, int64_t i0, int64_t i1, int64_t i2) {
  return *reinterpret_cast<const float*>(t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2]);
}
__device__ inline void st(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, float v) {
  *reinterpret_cast<float*>(t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2]) = v;
}

// Rotates every head of token t (in → out); with `row`, also stores the rotated row (all heads) there.
// A thread takes kBatch pairs at a time and issues all their loads before any store: a store through
// a generic pointer keeps the compiler from moving a later load above it, so a plain loop would wait
// one memory latency per pair (decode: 28 heads x 64 pairs over 256 threads, 7 latencies).
constexpr int kBatch = 8;
// Rotation pair w of a token's heads: head h, pair index i, its two dims (mode 2: NeoX halves).
struct Pair {
  int64_t h, j0, j1;
  int i;
};
__device__ inline Pair pair_of(int64_t w, int half, int mode) {
  const int i = static_cast<int>(w % half);
  return {w / half, mode == 2 ? i : 2 * i, mode == 2 ? i + half : 2 * i + 1, i};
}
// Writes a rotated pair to out and, with `row`, into the cache row (all heads, head size hd).
__device__ inline void store_pair(const Tensor& out, int64_t t, const Pair& q, float2 y, uint8_t* row, const Tensor& dst,
                                  int64_t hd) {
  st(out, q.j0, q.h, t, y.x);
  st(out, q.j1, q.h, t, y.y);
  if (row) {
    store_elem(row + (q.h * hd + q.j0) * dst.nb[0], dst.dtype, y.x);
    store_elem(row + (q.h * hd + q.j1) * dst.nb[0], dst.dtype, y.y);
  }
}
__device__ void rotate_heads(const Tensor& in, const Tensor& out, const RopeParams& p, const float2* cs, int64_t t,
                             uint8_t* row, const Tensor& dst) {
  const int half = p.n_dims / 2;
  const int64_t hd = in.ne[0], nh = in.ne[1], n = nh * half;
  for (int64_t w0 = 0; w0 < n; w0 += static_cast<int64_t>(kBatch) * blockDim.x) {
    float x0[kBatch], x1[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; b++) {
      const int64_t w = w0 + static_cast<int64_t>(b) * blockDim.x + threadIdx.x;
      if (w >= n) break;
      const Pair q = pair_of(w, half, p.mode);
      x0[b] = ld(in, q.j0, q.h, t);
      x1[b] = ld(in, q.j1, q.h, t);
    }
#pragma unroll
    for (int b = 0; b < kBatch; b++) {
      const int64_t w = w0 + static_cast<int64_t>(b) * blockDim.x + threadIdx.x;
      if (w >= n) break;
      const Pair q = pair_of(w, half, p.mode);
      store_pair(out, t, q, rope_rotate(x0[b], x1[b], cs[q.i]), row, dst, hd);
    }
  }
  // Dimensions past nDims are copied.
  const int64_t rest = hd - p.n_dims;
  for (int64_t w = threadIdx.x; w < nh * rest; w += blockDim.x) {
    const int64_t h = w / rest, i = p.n_dims + w % rest;
    const float v = ld(in, i, h, t);
    st(out, i, h, t, v);
    if (row) store_elem(row + (h * hd + i) * dst.nb[0], dst.dtype, v);
  }
}

__global__ void __launch_bounds__(kThreads) rope_store_kernel(const RopeStoreArgs a) {
  pdl_begin();
  __shared__ float2 cs[kMaxHalf];
  __shared__ int64_t row_s;
  __shared__ bool store_k, store_v;
  const RopeParams& p = a.p;
  const int half = p.n_dims / 2;
  const int64_t nt = a.q_in.ne[2];
  for (int64_t t = blockIdx.x; t < nt; t += gridDim.x) {
    __syncthreads();  // the previous token's angles and row are no longer read
    const double pos = *reinterpret_cast<const int32_t*>(a.pos.data + t * a.pos.nb[0]);
    for (int k = threadIdx.x; k < half; k += blockDim.x) cs[k] = rope_cos_sin(p, a.ff, pos, k);
    if (threadIdx.x == 0) {
      const int64_t row = *reinterpret_cast<const int32_t*>(a.idx.data + t * a.idx.nb[0]);
      bool later = false;  // a later token with the same index overwrites this one (SET_ROWS)
      for (int64_t u = t + 1; u < nt && !later; u++)
        later = *reinterpret_cast<const int32_t*>(a.idx.data + u * a.idx.nb[0]) == row;
      const bool k_ok = row >= 0 && row < a.k_dst.ne[1], v_ok = row >= 0 && row < a.v_dst.ne[1];
      if (!k_ok) report_error(a.err, a.k_node, row);
      if (!v_ok) report_error(a.err, a.v_node, row);
      row_s = row;
      store_k = k_ok && !later;
      store_v = v_ok && !later;
    }
    __syncthreads();
    const int64_t row = row_s;
    const bool sk = store_k;
    uint8_t* kd = a.k_dst.data + row * a.k_dst.nb[1];
    // q, then k (also into its cache row), then v, each phase after the previous one has finished
    // in this block: a single token's run is then in the nodes' order, so an output may reuse the
    // memory of an input an earlier node read (as the graph's allocator arranges).
    rotate_heads(a.q_in, a.q_out, p, cs, t, nullptr, a.k_dst);
    __syncthreads();
    rotate_heads(a.k_in, a.k_out, p, cs, t, sk ? kd : nullptr, a.k_dst);
    __syncthreads();
    // The v row.
    if (store_v) {
      uint8_t* vd = a.v_dst.data + row * a.v_dst.nb[1];
      const uint8_t* vs = a.v_src.data + t * a.v_src.nb[1];
      const int64_t n = a.v_src.ne[0];
      for (int64_t c0 = 0; c0 < n; c0 += static_cast<int64_t>(kBatch) * blockDim.x) {
        float x[kBatch];  // loads first, then stores (as in rotate_heads)
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
          const int64_t c = c0 + static_cast<int64_t>(b) * blockDim.x + threadIdx.x;
          if (c < n) x[b] = *reinterpret_cast<const float*>(vs + c * a.v_src.nb[0]);
        }
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
          const int64_t c = c0 + static_cast<int64_t>(b) * blockDim.x + threadIdx.x;
          if (c < n) store_elem(vd + c * a.v_dst.nb[0], a.v_dst.dtype, x[b]);
        }
      }
    }
  }
}

// One token whose heads are rotated whole (nDims == head size), in two launches: the q pairs, then
// the k pairs, k row and v row, every pair or element an item of its own, spread over as many
// blocks as they fill (decode: 28 x 64 items, then 4 x 64 + 512) instead of one block walking
// them in order. The q launch ends before the k launch begins, so k's output may reuse memory q
// read (as the graph's allocator arranges); within a launch the items must be independent
// (flat_ok). When the two phases touch nothing of each other's either (one_launch_ok), they run as
// one launch. Each block forms the angles it needs itself.
// phase 0: the q pairs; 1: the k pairs, k row and v row; 2: both in one launch (the q items
// first), when no write of one phase touches what the other reads or writes (one_launch_ok).
__global__ void __launch_bounds__(kThreads) rope_store_flat_kernel(const RopeStoreArgs a, int phase) {
  pdl_begin();
  __shared__ float2 cs[kMaxHalf];
  const RopeParams& p = a.p;
  const int half = p.n_dims / 2;
  const double pos = *reinterpret_cast<const int32_t*>(a.pos.data);
  for (int k = threadIdx.x; k < half; k += blockDim.x) cs[k] = rope_cos_sin(p, a.ff, pos, k);
  const int64_t row = phase != 0 ? *reinterpret_cast<const int32_t*>(a.idx.data) : 0;
  const bool k_ok = row >= 0 && row < a.k_dst.ne[1], v_ok = row >= 0 && row < a.v_dst.ne[1];
  if (phase != 0 && blockIdx.x == 0 && threadIdx.x == 0) {
    if (!k_ok) report_error(a.err, a.k_node, row);
    if (!v_ok) report_error(a.err, a.v_node, row);
  }
  __syncthreads();
  int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (phase == 2) {
    const int64_t q_items = a.q_in.ne[1] * half;
    if (g < q_items) {
      const Pair q = pair_of(g, half, p.mode);
      store_pair(a.q_out, 0, q, rope_rotate(ld(a.q_in, q.j0, q.h, 0), ld(a.q_in, q.j1, q.h, 0), cs[q.i]), nullptr,
                 a.k_dst, a.q_in.ne[0]);
      return;
    }
    g -= q_items;
    phase = 1;
  }
  const Tensor& in = phase == 0 ? a.q_in : a.k_in;
  const Tensor& out = phase == 0 ? a.q_out : a.k_out;
  const int64_t n_pairs = in.ne[1] * half;
  if (g < n_pairs) {
    const Pair q = pair_of(g, half, p.mode);
    const float2 y = rope_rotate(ld(in, q.j0, q.h, 0), ld(in, q.j1, q.h, 0), cs[q.i]);
    store_pair(out, 0, q, y, phase == 1 && k_ok ? a.k_dst.data + row * a.k_dst.nb[1] : nullptr, a.k_dst, in.ne[0]);
  } else if (phase == 1 && g < n_pairs + a.v_src.ne[0] && v_ok) {
    const int64_t c = g - n_pairs;
    store_elem(a.v_dst.data + row * a.v_dst.nb[1] + c * a.v_dst.nb[0], a.v_dst.dtype,
               *reinterpret_cast<const float*>(a.v_src.data + c * a.v_src.nb[0]));
  }
}
// One token, one block (rope_block_ok): every value the four nodes read (the q and k rows, the v
// row, the angles, the cell) is loaded into shared memory first, then after one barrier the
// rotated pairs and the rows are stored. All reads precede all writes, so an output may reuse the
// memory of any input (the k RoPE's output over q's input, as the allocator arranges it); what
// must hold is that no node reads what an earlier one wrote, and no two writes meet. One launch
// with one load and one store latency, against the flat kernel's two launches when those overlap.
constexpr int kBlockThreads = 1024;
constexpr int64_t kBlockMaxFloats = 10240;  // q, k and v rows held in shared memory (40 KB)
__global__ void __launch_bounds__(kBlockThreads) rope_store_block_kernel(const RopeStoreArgs a) {
  pdl_begin();
  extern __shared__ float sm[];
  __shared__ float2 cs[kMaxHalf];
  __shared__ int64_t row_s;
  __shared__ bool k_ok_s, v_ok_s;
  const RopeParams& p = a.p;
  const int half = p.n_dims / 2, tid = threadIdx.x;
  const int64_t hd = a.q_in.ne[0], nq = a.q_in.ne[1] * hd, nk = a.k_in.ne[1] * hd, nv = a.v_src.ne[0];
  float* q_s = sm;
  float* k_s = sm + nq;
  float* v_s = k_s + nk;
  const double pos = *reinterpret_cast<const int32_t*>(a.pos.data);
  if (tid < half) cs[tid] = rope_cos_sin(p, a.ff, pos, tid);
  if (tid == 0) {
    const int64_t row = *reinterpret_cast<const int32_t*>(a.idx.data);
    const bool k_ok = row >= 0 && row < a.k_dst.ne[1], v_ok = row >= 0 && row < a.v_dst.ne[1];
    if (!k_ok) report_error(a.err, a.k_node, row);
    if (!v_ok) report_error(a.err, a.v_node, row);
    row_s = row;
    k_ok_s = k_ok;
    v_ok_s = v_ok;
  }
  // Loads kBatch at a time into registers, then into shared memory (the loads stay in flight together).
  const int64_t total = nq + nk + nv;
  for (int64_t i0 = 0; i0 < total; i0 += static_cast<int64_t>(kBatch) * kBlockThreads) {
    float x[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; b++) {
      const int64_t i = i0 + static_cast<int64_t>(b) * kBlockThreads + tid;
      if (i < nq) x[b] = ld(a.q_in, i % hd, i / hd, 0);
      else if (i < nq + nk) x[b] = ld(a.k_in, (i - nq) % hd, (i - nq) / hd, 0);
      else if (i < total) x[b] = *reinterpret_cast<const float*>(a.v_src.data + (i - nq - nk) * a.v_src.nb[0]);
    }
#pragma unroll
    for (int b = 0; b < kBatch; b++) {
      const int64_t i = i0 + static_cast<int64_t>(b) * kBlockThreads + tid;
      if (i < total) sm[i] = x[b];
    }
  }
  __syncthreads();
  const int64_t row = row_s;
  uint8_t* kd = k_ok_s ? a.k_dst.data + row * a.k_dst.nb[1] : nullptr;
  const int64_t q_pairs = a.q_in.ne[1] * half, k_pairs = a.k_in.ne[1] * half;
  for (int64_t w = tid; w < q_pairs + k_pairs + nv; w += kBlockThreads) {
    if (w < q_pairs) {
      const Pair q = pair_of(w, half, p.mode);
      store_pair(a.q_out, 0, q, rope_rotate(q_s[q.h * hd + q.j0], q_s[q.h * hd + q.j1], cs[q.i]), nullptr, a.k_dst, hd);
    } else if (w < q_pairs + k_pairs) {
      const Pair q = pair_of(w - q_pairs, half, p.mode);
      store_pair(a.k_out, 0, q, rope_rotate(k_s[q.h * hd + q.j0], k_s[q.h * hd + q.j1], cs[q.i]), kd, a.k_dst, hd);
    } else if (v_ok_s) {
      const int64_t c = w - q_pairs - k_pairs;
      store_elem(a.v_dst.data + row * a.v_dst.nb[1] + c * a.v_dst.nb[0], a.v_dst.dtype, v_s[c]);
    }
  }
}

}  // namespace

namespace {
// Whether the single-block kernel may run the four nodes of one token (rope_store_block_kernel):
// heads rotated whole, the rows fit its shared memory, and — since it reads everything first —
// no node reads what an earlier node writes (q's output against k's, the stores' and v's reads,
// k's output against the stores' other reads) and no two writes overlap.
bool rope_block_ok(const NodeArgs* nodes) {
  const NodeArgs &q = nodes[0], &k = nodes[1], &ks = nodes[2], &vs = nodes[3];
  const Tensor* ff = q.n_inputs == 3 ? q.in[2] : q.in[1];
  const Tensor &qo = *q.out[0], &ko = *k.out[0], &kd = *ks.out[0], &vd = *vs.out[0];
  const int64_t floats = q.in[0]->ne[1] * q.in[0]->ne[0] + k.in[0]->ne[1] * k.in[0]->ne[0] + vs.in[1]->ne[0];
  if (floats > kBlockMaxFloats) return false;
  const Tensor* later_reads_of_q[] = {k.in[0], ks.in[2], vs.in[1]};
  for (const Tensor* r : later_reads_of_q)
    if (overlap(qo, *r)) return false;
  if (overlap(ko, *ks.in[2]) || overlap(ko, *vs.in[1]) || overlap(kd, *vs.in[1]) || overlap(kd, *vs.in[2])) return false;
  const Tensor* writes[] = {&qo, &ko, &kd, &vd};
  const Tensor* node_reads[] = {q.in[1], ff, ks.in[2]};  // positions, factors and cells are read by every phase
  for (int w = 0; w < 4; w++) {
    for (int x = w + 1; x < 4; x++)
      if (overlap(*writes[w], *writes[x])) return false;
    for (const Tensor* r : node_reads)
      if (overlap(*writes[w], *r)) return false;
  }
  return true;
}
// Whether no write of the four nodes touches another write or anything read, except a RoPE
// rotating in place: then their elements may be computed in any order, by any block.
bool independent_io(const NodeArgs* nodes) {
  const NodeArgs &q = nodes[0], &k = nodes[1], &ks = nodes[2], &vs = nodes[3];
  const Tensor* writes[] = {q.out[0], k.out[0], ks.out[0], vs.out[0]};
  const Tensor* reads[] = {q.in[0], k.in[0], q.in[1], ks.in[2], vs.in[1], q.n_inputs == 3 ? q.in[2] : q.in[1]};
  for (int w = 0; w < 4; w++) {
    for (int x = w + 1; x < 4; x++)
      if (overlap(*writes[w], *writes[x])) return false;
    for (const Tensor* r : reads) {
      if (!overlap(*writes[w], *r)) continue;
      const bool in_place = ((w == 0 && r == q.in[0]) || (w == 1 && r == k.in[0])) && same_tensor(*writes[w], *r);
      if (!in_place) return false;
    }
  }
  return true;
}
// The flat kernel's conditions (one token): q's output touches none of q's other reads (in place is
// fine); the k launch's writes (k output, k row, v row) touch neither each other nor its reads
// (k input but in place, positions, factors, index, v source).
bool flat_ok(const NodeArgs* nodes) {
  const NodeArgs &q = nodes[0], &k = nodes[1], &ks = nodes[2], &vs = nodes[3];
  const Tensor* ff = q.n_inputs == 3 ? q.in[2] : q.in[1];
  const Tensor& qo = *q.out[0];
  if (overlap(qo, *q.in[1]) || overlap(qo, *ff)) return false;
  if (overlap(qo, *q.in[0]) && !same_tensor(qo, *q.in[0])) return false;
  const Tensor* writes[] = {k.out[0], ks.out[0], vs.out[0]};
  const Tensor* reads[] = {k.in[0], q.in[1], ff, ks.in[2], vs.in[1]};
  for (int w = 0; w < 3; w++) {
    for (int x = w + 1; x < 3; x++)
      if (overlap(*writes[w], *writes[x])) return false;
    for (const Tensor* r : reads)
      if (overlap(*writes[w], *r) && !(w == 0 && r == k.in[0] && same_tensor(*writes[w], *r))) return false;
  }
  return true;
}
// Whether the flat kernel's two phases may run as one launch: besides flat_ok, q's output touches
// none of the k phase's reads or writes, and the k phase's writes none of q's reads.
bool one_launch_ok(const NodeArgs* nodes) {
  const NodeArgs &q = nodes[0], &k = nodes[1], &ks = nodes[2], &vs = nodes[3];
  const Tensor* ff = q.n_inputs == 3 ? q.in[2] : q.in[1];
  const Tensor* k_side[] = {k.in[0], k.out[0], ks.out[0], vs.out[0], ks.in[2], vs.in[1]};
  for (const Tensor* t : k_side)
    if (overlap(*q.out[0], *t)) return false;
  const Tensor* k_writes[] = {k.out[0], ks.out[0], vs.out[0]};
  const Tensor* q_reads[] = {q.in[0], q.in[1], ff};
  for (const Tensor* w : k_writes)
    for (const Tensor* r : q_reads)
      if (overlap(*w, *r)) return false;
  return true;
}
}  // namespace

bool rope_store_form(const NodeArgs* nodes, size_t available) {
  if (available < 4) return false;
  const NodeArgs &q = nodes[0], &k = nodes[1], &ks = nodes[2], &vs = nodes[3];
  if (!rope_pair_matches(q, k)) return false;
  const int64_t tokens = q.in[0]->ne[2];
  if (!store_matches(ks, tokens) || !store_matches(vs, tokens)) return false;
  // The k store reads the k RoPE's output, contiguous, as one row of all heads per token.
  const Tensor &ko = *k.out[0], &src = *ks.in[1];
  if (src.data != ko.data || ko.nb[0] != 4 || ko.nb[1] != 4 * ko.ne[0] || ko.nb[2] != ko.nb[1] * ko.ne[1] ||
      src.ne[0] != ko.ne[0] * ko.ne[1] || src.nb[1] != ko.nb[2])
    return false;
  if (!same_tensor(*ks.in[2], *vs.in[2])) return false;
  // The k store must not write what k's RoPE reads or writes (SET_ROWS into a cache: never).
  const Tensor &kd = *ks.out[0], &vd = *vs.out[0];
  return !overlap(kd, *k.in[0]) && !overlap(kd, ko) && !overlap(kd, vd);
}

size_t rope_store_match(const NodeArgs* nodes, size_t available) {
  if (!rope_store_form(nodes, available)) return 0;
  // One token: the kernel runs q, k, v in that order (rope_store_kernel), as the nodes do, so the
  // allocator's reuse of a read input's memory for a later output is fine. Several tokens run in
  // parallel blocks: then the nodes must be independent (independent_io).
  if (nodes[0].in[0]->ne[2] == 1) return 4;
  return independent_io(nodes) ? 4 : 0;
}

cudaError_t rope_store_launch(const NodeArgs* nodes, const LaunchContext& ctx) {
  const NodeArgs &q = nodes[0], &k = nodes[1], &ks = nodes[2], &vs = nodes[3];
  const int64_t tokens = q.in[0]->ne[2];
  if (tokens == 0) return cudaSuccess;
  RopeStoreArgs a;
  a.q_in = *q.in[0];
  a.q_out = *q.out[0];
  a.k_in = *k.in[0];
  a.k_out = *k.out[0];
  a.pos = *q.in[1];
  a.ff = q.n_inputs == 3 ? *q.in[2] : *q.in[1];  // unread without factors
  a.k_dst = *ks.out[0];
  a.idx = *ks.in[2];
  a.v_src = *vs.in[1];
  a.v_dst = *vs.out[0];
  a.p = rope_params(q);
  a.err = ctx.err;
  a.k_node = ctx.node + 2;
  a.v_node = ctx.node + 3;
  if (tokens == 1 && a.p.n_dims == a.q_in.ne[0] && a.p.n_dims == a.k_in.ne[0] && ctx.tuning.rope_block &&
      rope_block_ok(nodes)) {
    const size_t smem = static_cast<size_t>(a.q_in.ne[1] * a.q_in.ne[0] + a.k_in.ne[1] * a.k_in.ne[0] + a.v_src.ne[0]) * 4;
    return launch_k(rope_store_block_kernel, dim3(1), dim3(kBlockThreads), smem, ctx.stream, a);
  }
  if (tokens == 1 && a.p.n_dims == a.q_in.ne[0] && a.p.n_dims == a.k_in.ne[0] && flat_ok(nodes)) {
    const int64_t half = a.p.n_dims / 2, q_items = a.q_in.ne[1] * half, kv_items = a.k_in.ne[1] * half + a.v_src.ne[0];
    if (one_launch_ok(nodes))
      return launch_k(rope_store_flat_kernel, dim3(static_cast<unsigned>((q_items + kv_items + kThreads - 1) / kThreads)),
                      dim3(kThreads), 0, ctx.stream, a, 2);
    const cudaError_t e = launch_k(rope_store_flat_kernel, dim3(static_cast<unsigned>((q_items + kThreads - 1) / kThreads)),
                                   dim3(kThreads), 0, ctx.stream, a, 0);
    if (e != cudaSuccess) return e;
    return launch_k(rope_store_flat_kernel, dim3(static_cast<unsigned>((kv_items + kThreads - 1) / kThreads)), dim3(kThreads),
                    0, ctx.stream, a, 1);
  }
  return launch_k(rope_store_kernel, dim3(static_cast<unsigned>(tokens < (1 << 20) ? tokens : (1 << 20))), dim3(kThreads), 0,
                  ctx.stream, a);
}

}  // namespace minfer::cuda
