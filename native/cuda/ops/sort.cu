// ARGSORT (I32 indices that sort each row of a F32, ascending or descending) and TOP_K (I32
// [k, rows]: the indices of the k largest of each row, largest first), as native/cpu/sort.cpp:
// the order is total and stable — equal values keep index order, NaN orders above +inf, -0 equals
// +0. Each element becomes a unique 64-bit key (an order-preserving map of the value, inverted
// for descending, above the index), so an ascending sort of the keys gives exactly the CPU's order.
// Keys are sorted with a bitonic network, padded to a power of two:
//   rows of up to kTile elements: one block per row, entirely in shared memory;
//   longer rows (a vocabulary for top-k): keys in scratch, the network's stages whose partners are
//   within a tile of kTile run in shared memory, the longer-range ones as one launch per stage.
// TOP_K of rows longer than kTile with k <= kRadixMaxK takes a radix selection when there are
// enough rows (Tuning::topk_radix_rows; see radix_select_kernel). Else, with k <= kChunkMaxK, it may take the chunk
// bests (Tuning::topk_chunks; see chunk_select_kernel). Else, with k <= kSelectMaxK (a vocabulary's best
// candidates), it selects: each block sorts one tile of kTile keys in shared memory and keeps its first k, and
// rounds of the same over the kept keys reduce each row to one tile, whose first k are the answer
// (the keys are unique, so the k smallest keys of a row are the k smallest of its tiles' bests).
// Other TOP_K sorts the whole row and keeps the first k.
#include "../cuda_util.cuh"
#include "../../common/contract_sort.h"
#include "../kernel.h"

namespace minfer::cuda {
namespace {

using program::Op;

constexpr int kTile = 4096;  // keys sorted in shared memory at once (32 KiB)
constexpr int kThreads = 1024;
constexpr uint64_t kPad = ~0ull;  // above every real key

// ---- keys ----

// The key of value v at index i: ascending keys sort as the CPU's comparator orders (v, i).
__device__ inline uint64_t sort_key(float v, int64_t i, bool desc) {
  uint32_t k;
  if (isnan(v)) {
    k = 0xffffffffu;
  } else {
    uint32_t u = v == 0.0f ? 0u : __float_as_uint(v);  // -0 sorts as +0
    k = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  if (desc) k = ~k;
  return (static_cast<uint64_t>(k) << 32) | static_cast<uint32_t>(i);
}

__device__ inline const float* row_elem(const Tensor& a, int64_t r, int64_t i) {
  const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
  return reinterpret_cast<const float*>(a.data + i * a.nb[0] + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3]);
}
__device__ inline int32_t* out_elem(const Tensor& o, int64_t r, int64_t i) {
  const int64_t i1 = r % o.ne[1], i2 = (r / o.ne[1]) % o.ne[2], i3 = r / (o.ne[1] * o.ne[2]);
  return reinterpret_cast<int32_t*>(o.data + i * o.nb[0] + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3]);
}

// One compare-exchange of the bitonic network: pair t (of n/2) at stage (k, j) of keys s, whose
// element 0 has network index `base`.
__device__ inline void compare_exchange(uint64_t* s, int64_t base, int64_t t, int64_t k, int64_t j) {
  const int64_t i = 2 * j * (t / j) + t % j, l = i + j;
  const bool asc = ((base + i) & k) == 0;
  const uint64_t x = s[i], y = s[l];
  if ((x > y) == asc && x != y) {
    s[i] = y;
    s[l] = x;
  }
}

// Bitonic sort of s[0..n2) ascending (n2 a power of two) by the block's threads.
__device__ inline void block_sort(uint64_t* s, int n2) {
  for (int k = 2; k <= n2; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int t = threadIdx.x; t < n2 / 2; t += blockDim.x) compare_exchange(s, 0, t, k, j);
      __syncthreads();
    }
}

// Sorts the first m keys of s (padded with kPad up to a power of two, which s must hold) and
// writes the indices of the first k to row r of o.
__device__ inline void sort_write_first(uint64_t* s, int m, int k, const Tensor& o, int64_t r) {
  int m2 = 1;
  while (m2 < m) m2 <<= 1;
  for (int i = m + threadIdx.x; i < m2; i += blockDim.x) s[i] = kPad;
  __syncthreads();
  block_sort(s, m2);
  for (int i = threadIdx.x; i < k; i += blockDim.x) *out_elem(o, r, i) = static_cast<int32_t>(s[i] & 0xffffffffu);
}

// ---- rows of up to kTile: one block per row in shared memory ----

__global__ void sort_small_kernel(Tensor a, Tensor o, int n_pow2, int k_out, bool desc) {
  extern __shared__ uint64_t s[];
  const int64_t n = a.ne[0], rows = a.ne[1] * a.ne[2] * a.ne[3];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    for (int i = threadIdx.x; i < n_pow2; i += blockDim.x) s[i] = i < n ? sort_key(*row_elem(a, r, i), i, desc) : kPad;
    __syncthreads();
    block_sort(s, n_pow2);
    for (int i = threadIdx.x; i < k_out; i += blockDim.x) *out_elem(o, r, i) = static_cast<int32_t>(s[i] & 0xffffffffu);
    __syncthreads();  // s is refilled for the next row
  }
}

// ---- longer rows: keys in scratch (rows x n_pow2), n_pow2 a multiple of kTile ----

__global__ void fill_keys_kernel(Tensor a, uint64_t* keys, int64_t n_pow2, bool desc) {
  const int64_t n = a.ne[0], total = n_pow2 * a.ne[1] * a.ne[2] * a.ne[3];
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = e / n_pow2, i = e % n_pow2;
    keys[e] = i < n ? sort_key(*row_elem(a, r, i), i, desc) : kPad;
  }
}

// Stages (k, j) for k = k_lo..k_hi and every j < kTile (j <= k/2) on one tile per block.
__global__ void sort_tile_kernel(uint64_t* keys, int64_t n_pow2, int64_t n_tiles, int64_t k_lo, int64_t k_hi) {
  __shared__ uint64_t s[kTile];
  for (int64_t tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
    uint64_t* g = keys + tile * kTile;
    const int64_t base = (tile * kTile) % n_pow2;  // network index of the tile's first key in its row
    for (int i = threadIdx.x; i < kTile; i += blockDim.x) s[i] = g[i];
    __syncthreads();
    for (int64_t k = k_lo; k <= k_hi; k <<= 1)
      for (int64_t j = (k >> 1) < kTile / 2 ? (k >> 1) : kTile / 2; j > 0; j >>= 1) {
        for (int t = threadIdx.x; t < kTile / 2; t += blockDim.x) compare_exchange(s, base, t, k, j);
        __syncthreads();
      }
    for (int i = threadIdx.x; i < kTile; i += blockDim.x) g[i] = s[i];
    __syncthreads();
  }
}

// One stage (k, j) with j >= kTile over every row.
__global__ void sort_stage_kernel(uint64_t* keys, int64_t n_pow2, int64_t rows, int64_t k, int64_t j) {
  const int64_t half = n_pow2 / 2, total = half * rows;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < total; p += (int64_t)gridDim.x * blockDim.x)
    compare_exchange(keys + (p / half) * n_pow2, 0, p % half, k, j);
}

// ---- TOP_K by selection: rounds of per-tile sorts keeping each tile's first k keys ----

// Block (tile, row) sorts keys [tile * kTile, +kTile) of its row (n keys in all: from the tensor
// when `src` is null, else src[row * n + i]) and writes the first min(k, the tile's count) to
// dst[row * n_out + tile * k + i]; on the last round (`o` given) it writes their indices to o.
__global__ void select_tile_kernel(Tensor a, const uint64_t* src, int64_t n, uint64_t* dst, int64_t n_out, int k,
                                   bool final_round, Tensor o) {
  __shared__ uint64_t s[kTile];
  const int64_t tile = blockIdx.x, rows = a.ne[1] * a.ne[2] * a.ne[3], first = tile * kTile;
  const int64_t count = n - first < kTile ? n - first : kTile;
  const int keep = static_cast<int>(count < k ? count : k);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    for (int i = threadIdx.x; i < kTile; i += blockDim.x)
      s[i] = i >= count ? kPad : src ? src[r * n + first + i] : sort_key(*row_elem(a, r, first + i), first + i, true);
    __syncthreads();
    block_sort(s, kTile);
    for (int i = threadIdx.x; i < keep; i += blockDim.x) {
      if (final_round) *out_elem(o, r, i) = static_cast<int32_t>(s[i] & 0xffffffffu);
      else dst[r * n_out + tile * k + i] = s[i];
    }
    __syncthreads();  // s is refilled for the next row
  }
}

// ---- TOP_K by chunk bests (Tuning::topk_chunks) ----
// The row is cut into chunks of kChunk elements and each chunk's best key is found (one warp a
// chunk). The k best of those C bests are k distinct elements, so the row's k-th best key is at
// most the k-th best chunk best T, and every key ≤ T lies in one of those k chunks (any other
// chunk's keys are all above its best, which is above T). A block per row sorts the C bests in
// shared memory, gathers the keys ≤ T of the k chosen chunks (at most k·kChunk), sorts them and
// writes the first k: the same answer as sorting the row, reading the row about 1 + k·kChunk/n
// times instead of sorting tiles of 4096 keys (1017 us for 64 rows of 152,064 on the H200,
// session 15).
constexpr int kChunk = 128;
constexpr int kChunkMaxK = 64;      // candidates ≤ kChunkMaxK · kChunk = 8192 keys
constexpr int kChunkMaxC = 4096;    // chunk bests sorted in shared memory at once (rows ≤ 524,288)
constexpr int kChunkCap = kChunkMaxK * kChunk;

__global__ void chunk_best_kernel(Tensor a, uint64_t* best, int64_t n_chunks) {
  const int64_t n = a.ne[0], rows = a.ne[1] * a.ne[2] * a.ne[3];
  const int lane = threadIdx.x % kWarp;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (c >= n_chunks) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    uint64_t m = kPad;
#pragma unroll
    for (int j = 0; j < kChunk / kWarp; j++) {
      const int64_t i = c * kChunk + j * kWarp + lane;
      if (i < n) {
        const uint64_t key = sort_key(*row_elem(a, r, i), i, true);
        m = key < m ? key : m;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const uint64_t x = __shfl_xor_sync(0xffffffffu, m, o);
      m = x < m ? x : m;
    }
    if (lane == 0) best[r * n_chunks + c] = m;
  }
}

__global__ void chunk_select_kernel(Tensor a, const uint64_t* best, int64_t n_chunks, int k, Tensor o) {
  extern __shared__ uint64_t sm[];
  uint64_t* bs = sm;                 // [c2] chunk bests
  uint64_t* cand = sm + kChunkMaxC;  // [kChunkCap] candidate keys
  __shared__ int chosen[kChunkMaxK];
  __shared__ int count;
  const int64_t n = a.ne[0], r = blockIdx.x;
  int c2 = 1;
  while (c2 < n_chunks) c2 <<= 1;
  for (int i = threadIdx.x; i < c2; i += blockDim.x) bs[i] = i < n_chunks ? best[r * n_chunks + i] : kPad;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  block_sort(bs, c2);
  const uint64_t t_key = bs[k - 1];
  for (int i = threadIdx.x; i < k; i += blockDim.x) chosen[i] = static_cast<int>((bs[i] & 0xffffffffu) / kChunk);
  __syncthreads();
  for (int idx = threadIdx.x; idx < k * kChunk; idx += blockDim.x) {
    const int64_t i = static_cast<int64_t>(chosen[idx / kChunk]) * kChunk + idx % kChunk;
    if (i >= n) continue;
    const uint64_t key = sort_key(*row_elem(a, r, i), i, true);
    if (key <= t_key) cand[atomicAdd(&count, 1)] = key;
  }
  __syncthreads();
  sort_write_first(cand, count, k, o, r);  // k ≤ count ≤ k·kChunk
}

// ---- TOP_K by radix selection (Tuning::topk_radix_rows: from 8 rows by default) ----
// One block per row finds the k-th best key's upper half T (the value's order-preserving 32 bits)
// by three histogram passes over the row, 11, 11 and 10 bits of it at a time: each pass counts the
// elements whose bits above the digit equal the prefix chosen so far, and the bin where the count
// from the best end reaches the keys still wanted extends the prefix. Every element with an upper
// half better than T is then in the answer, and of those equal to T the ones of lowest index (the
// lower half of the key): they are gathered into shared memory (or, when too many values tie at T,
// those equal to T are taken in index order) and sorted, and the first k written. The same answer as
// sorting the row, reading it four times instead of sorting tiles of 4096 keys.
constexpr int kRadixBins = 2048;  // 11-bit digits
constexpr int kRadixCap = 4096;   // candidate keys sorted in shared memory at once (32 KiB)
constexpr int kRadixMaxK = 1024;

__device__ inline uint32_t upper_key(float v) { return static_cast<uint32_t>(sort_key(v, 0, true) >> 32); }

// f(value, index) for every element of a row, each by one thread of the block (float4 loads when
// the row is contiguous and 16-byte aligned).
template <class F>
__device__ inline void for_row(const uint8_t* base, int64_t nb0, int64_t n, F f) {
  if (nb0 == 4 && (reinterpret_cast<uintptr_t>(base) & 15) == 0) {
    const float4* p = reinterpret_cast<const float4*>(base);
    const int64_t n4 = n / 4;
    for (int64_t j = threadIdx.x; j < n4; j += blockDim.x) {
      const float4 v = p[j];
      f(v.x, 4 * j);
      f(v.y, 4 * j + 1);
      f(v.z, 4 * j + 2);
      f(v.w, 4 * j + 3);
    }
    for (int64_t i = n4 * 4 + threadIdx.x; i < n; i += blockDim.x) f(reinterpret_cast<const float*>(base)[i], i);
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) f(*reinterpret_cast<const float*>(base + i * nb0), i);
  }
}

// Block-wide exclusive prefix sum of one value per thread (blockDim.x == kThreads); `total` gets
// the sum. Uses warp_tot[kThreads / kWarp].
__device__ inline int block_exclusive_sum(int v, int* warp_tot, int* total) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  int x = v;
#pragma unroll
  for (int o = 1; o < kWarp; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == kWarp - 1) warp_tot[warp] = x;
  __syncthreads();
  if (warp == 0) {
    int w = warp_tot[lane];
#pragma unroll
    for (int o = 1; o < kWarp; o <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += y;
    }
    warp_tot[lane] = w;  // inclusive
    if (lane == kWarp - 1) *total = w;
  }
  __syncthreads();
  const int before = (warp > 0 ? warp_tot[warp - 1] : 0) + x - v;
  __syncthreads();  // (warp_tot is reused by the caller's next scan)
  return before;
}

__global__ void __launch_bounds__(kThreads) radix_select_kernel(Tensor a, int k, Tensor o) {
  __shared__ int hist[kRadixBins];
  __shared__ uint64_t cand[kRadixCap];
  __shared__ int warp_tot[kThreads / kWarp];
  __shared__ int sel_bin, sel_before, sel_count, count, total;
  const int64_t n = a.ne[0], rows = a.ne[1] * a.ne[2] * a.ne[3];
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const uint8_t* base = reinterpret_cast<const uint8_t*>(row_elem(a, r, 0));
    uint32_t prefix = 0, mask = 0;
    int wanted = k;  // keys still wanted among those whose upper half matches prefix under mask
    int eq = 0;      // elements whose upper half is T (after the last pass)
    constexpr int kShift[3] = {21, 10, 0}, kBits[3] = {11, 11, 10};
#pragma unroll
    for (int pass = 0; pass < 3; pass++) {
      const int shift = kShift[pass];
      const uint32_t bins_mask = (1u << kBits[pass]) - 1u;
      for (int b = threadIdx.x; b < kRadixBins; b += blockDim.x) hist[b] = 0;
      __syncthreads();
      for_row(base, a.nb[0], n, [&](float v, int64_t) {
        const uint32_t u = upper_key(v);
        const bool take = (u & mask) == prefix;
        const unsigned active = __activemask();
        const unsigned takers = __ballot_sync(active, take);
        if (take) {
          const int bin = static_cast<int>((u >> shift) & bins_mask);
          const unsigned peers = __match_any_sync(takers, bin);
          if (lane == __ffs(peers) - 1) atomicAdd(&hist[bin], __popc(peers));
        }
      });
      __syncthreads();
      // the bin where the count from the best end (bin 0) reaches `wanted`
      const int h0 = hist[2 * threadIdx.x], h1 = hist[2 * threadIdx.x + 1];
      const int before = block_exclusive_sum(h0 + h1, warp_tot, &total);
      if (before < wanted && wanted <= before + h0 + h1) {
        const bool first = wanted <= before + h0;
        sel_bin = 2 * threadIdx.x + (first ? 0 : 1);
        sel_before = first ? before : before + h0;
        sel_count = first ? h0 : h1;
      }
      __syncthreads();
      prefix |= static_cast<uint32_t>(sel_bin) << shift;
      mask |= bins_mask << shift;
      wanted -= sel_before;
      eq = sel_count;
      __syncthreads();  // (sel_* and hist are written again by the next pass)
    }
    // prefix is T: k - wanted keys have a better upper half, and `wanted` of the eq equal to it.
    const uint32_t t_up = prefix;
    const int better = k - wanted;
    const bool all_eq = better + eq <= kRadixCap;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    for_row(base, a.nb[0], n, [&](float v, int64_t i) {
      const uint32_t u = upper_key(v);
      if (u < t_up || (all_eq && u == t_up)) {
        const int c = atomicAdd(&count, 1);
        if (c < kRadixCap) cand[c] = sort_key(v, i, true);
      }
    });
    __syncthreads();
    if (!all_eq) {
      // Too many ties at T to gather: those equal to T in index order until `wanted` are taken.
      int taken = 0;
      for (int64_t t0 = 0; t0 < n && taken < wanted; t0 += blockDim.x) {
        const int64_t i = t0 + threadIdx.x;
        const float v = i < n ? *reinterpret_cast<const float*>(base + i * a.nb[0]) : 0.0f;
        const bool is_eq = i < n && upper_key(v) == t_up;
        const int rank = taken + block_exclusive_sum(is_eq ? 1 : 0, warp_tot, &total);
        if (is_eq && rank < wanted) cand[better + rank] = sort_key(v, i, true);
        taken += total;  // (total is read by every thread before the next scan writes it)
        __syncthreads();
      }
      if (threadIdx.x == 0) count = k;
      __syncthreads();
    }
    sort_write_first(cand, count < kRadixCap ? count : kRadixCap, k, o, r);  // (better + eq, or k)
    __syncthreads();  // cand and count are reused by the next row
  }
}

__global__ void write_indices_kernel(const uint64_t* keys, Tensor o, int64_t n_pow2, int64_t k_out) {
  const int64_t total = k_out * o.ne[1] * o.ne[2] * o.ne[3];
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = e / k_out, i = e % k_out;
    *out_elem(o, r, i) = static_cast<int32_t>(keys[r * n_pow2 + i] & 0xffffffffu);
  }
}

// ---- host side ----

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

int64_t n_rows(const Tensor& t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

unsigned grid_1d(int64_t n, int threads) {
  const int64_t g = ceil_div(n, threads);
  return static_cast<unsigned>(g < 1 ? 1 : g < (1 << 20) ? g : (1 << 20));
}

constexpr int kSelectMaxK = kTile / 4;  // each selection round keeps at most a quarter of its keys

// The keys a selection round keeps per row from n (each tile's first k).
int64_t select_kept(int64_t n, int64_t k) {
  const int64_t tiles = ceil_div(n, kTile), last = n - (tiles - 1) * kTile;
  return (tiles - 1) * k + (last < k ? last : k);
}

// Whether TOP_K can take the radix path (Tuning::topk_radix_rows decides whether it does).
bool radix_fits(const NodeArgs& args) {
  const int64_t n = args.in[0]->ne[0];
  return n > kTile && n <= INT32_MAX && param_i32(args, program::param::TOP_K::k) <= kRadixMaxK;
}

bool by_selection(const NodeArgs& args, bool top_k) {
  return top_k && args.in[0]->ne[0] > kTile && param_i32(args, program::param::TOP_K::k) <= kSelectMaxK;
}

// Whether TOP_K can take the chunk-best path (Tuning::topk_chunks decides whether it does).
bool chunks_fit(const NodeArgs& args) {
  const int64_t n = args.in[0]->ne[0], k = param_i32(args, program::param::TOP_K::k), c = ceil_div(n, kChunk);
  return n > kTile && k <= kChunkMaxK && c >= k && c <= kChunkMaxC && n <= INT32_MAX;
}

size_t sort_scratch_impl(const NodeArgs& args, bool top_k) {
  const int64_t n = args.in[0]->ne[0], rows = n_rows(*args.in[0]);
  if (by_selection(args, top_k)) {  // two ping-pong buffers of the first round's kept keys
    const int64_t kept = select_kept(n, param_i32(args, program::param::TOP_K::k));
    const size_t tiles = static_cast<size_t>(2 * kept * rows) * sizeof(uint64_t);
    // (or the chunk bests, when the tuning takes that path: scratch is sized for either)
    const size_t chunks = chunks_fit(args) ? static_cast<size_t>(ceil_div(n, kChunk) * rows) * sizeof(uint64_t) : 0;
    return tiles > chunks ? tiles : chunks;
  }
  const int64_t n_pow2 = next_pow2(n);
  if (n_pow2 <= kTile) return 0;
  return static_cast<size_t>(n_pow2 * rows) * sizeof(uint64_t);
}
size_t argsort_scratch(const NodeArgs& args) { return sort_scratch_impl(args, false); }
size_t top_k_scratch(const NodeArgs& args) { return sort_scratch_impl(args, true); }

cudaError_t launch_select(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &a = *args.in[0], &o = *args.out[0];
  const int64_t rows = n_rows(a), k = param_i32(args, program::param::TOP_K::k);
  uint64_t* buf[2] = {static_cast<uint64_t*>(ctx.scratch), static_cast<uint64_t*>(ctx.scratch) + select_kept(a.ne[0], k) * rows};
  const uint64_t* src = nullptr;
  int64_t n = a.ne[0];
  for (int round = 0;; round++) {
    const int64_t tiles = ceil_div(n, kTile);
    const bool final_round = tiles == 1;
    const int64_t n_out = final_round ? 0 : select_kept(n, k);
    uint64_t* dst = buf[round & 1];
    select_tile_kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(rows < 65535 ? rows : 65535)), kThreads, 0, ctx.stream>>>(
        a, src, n, dst, n_out, static_cast<int>(k), final_round, o);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess || final_round) return e;
    src = dst;
    n = n_out;
  }
}

cudaError_t launch_chunk_select(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &a = *args.in[0], &o = *args.out[0];
  const int64_t n = a.ne[0], rows = n_rows(a), c = ceil_div(n, kChunk);
  const int k = param_i32(args, program::param::TOP_K::k);
  uint64_t* best = static_cast<uint64_t*>(ctx.scratch);
  constexpr int kWarps = 8;
  chunk_best_kernel<<<dim3(static_cast<unsigned>(ceil_div(c, kWarps)), static_cast<unsigned>(rows < 65535 ? rows : 65535)),
                      kWarps * kWarp, 0, ctx.stream>>>(a, best, c);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  constexpr size_t smem = static_cast<size_t>(kChunkMaxC + kChunkCap) * sizeof(uint64_t);
  static bool configured[64] = {};  // the >48 KiB shared-memory opt-in, once per device
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  if (dev < 0 || dev >= 64 || !configured[dev]) {
    if (cudaError_t e = cudaFuncSetAttribute(chunk_select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        e != cudaSuccess)
      return e;
    if (dev >= 0 && dev < 64) configured[dev] = true;
  }
  chunk_select_kernel<<<static_cast<unsigned>(rows), kThreads, smem, ctx.stream>>>(a, best, c, k, o);
  return cudaGetLastError();
}

template <bool kTopK>
cudaError_t launch_sort(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &a = *args.in[0], &o = *args.out[0];
  const int64_t n = a.ne[0], rows = n_rows(a);
  if (n <= 0 || rows <= 0) return cudaSuccess;
  const bool desc = kTopK || param_i32(args, program::param::ARGSORT::descending) != 0;
  if (kTopK && ctx.tuning.topk_radix_rows > 0 && rows >= ctx.tuning.topk_radix_rows && radix_fits(args)) {
    radix_select_kernel<<<static_cast<unsigned>(rows < 65535 ? rows : 65535), kThreads, 0, ctx.stream>>>(
        a, param_i32(args, program::param::TOP_K::k), o);
    return cudaGetLastError();
  }
  if (kTopK && ctx.tuning.topk_chunks && chunks_fit(args) && rows <= INT32_MAX) return launch_chunk_select(args, ctx);
  if (by_selection(args, kTopK)) return launch_select(args, ctx);
  const int64_t k_out = kTopK ? param_i32(args, program::param::TOP_K::k) : n;
  const int64_t n_pow2 = next_pow2(n);
  if (n_pow2 <= kTile) {
    const int threads = static_cast<int>(n_pow2 / 2 < 32 ? 32 : n_pow2 / 2 < kThreads ? n_pow2 / 2 : kThreads);
    sort_small_kernel<<<grid_1d(rows, 1), threads, n_pow2 * sizeof(uint64_t), ctx.stream>>>(
        a, o, static_cast<int>(n_pow2), static_cast<int>(k_out), desc);
    return cudaGetLastError();
  }
  uint64_t* keys = static_cast<uint64_t*>(ctx.scratch);
  const int64_t n_tiles = rows * (n_pow2 / kTile);
  const unsigned tile_grid = grid_1d(n_tiles, 1);
  fill_keys_kernel<<<grid_1d(rows * n_pow2, 256), 256, 0, ctx.stream>>>(a, keys, n_pow2, desc);
  sort_tile_kernel<<<tile_grid, kThreads, 0, ctx.stream>>>(keys, n_pow2, n_tiles, 2, kTile);
  for (int64_t k = 2 * kTile; k <= n_pow2; k <<= 1) {
    for (int64_t j = k >> 1; j >= kTile; j >>= 1)
      sort_stage_kernel<<<grid_1d(rows * n_pow2 / 2, 256), 256, 0, ctx.stream>>>(keys, n_pow2, rows, k, j);
    sort_tile_kernel<<<tile_grid, kThreads, 0, ctx.stream>>>(keys, n_pow2, n_tiles, k, k);
  }
  write_indices_kernel<<<grid_1d(rows * k_out, 256), 256, 0, ctx.stream>>>(keys, o, n_pow2, k_out);
  return cudaGetLastError();
}

const Registrar argsort_kernel(Op::ARGSORT, {contract::check_argsort, argsort_scratch, launch_sort<false>});
const Registrar top_k_kernel(Op::TOP_K, {contract::check_top_k, top_k_scratch, launch_sort<true>});

}  // namespace
}  // namespace minfer::cuda
