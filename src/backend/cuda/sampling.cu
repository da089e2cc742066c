// Sampled picks, one thread block cluster per row (8 blocks; 16 for rows of
// more than 262,144 logits). Each block keeps its slice of the row in shared
// memory, so only the first pass reads the row from L2, and the blocks of a
// cluster share what they count through distributed shared memory. One block
// per row made every pass over a 150K-entry row a single SM's work, tens of
// microseconds each: a sampled step cost ~265 us more than a greedy one.
//
// The kept candidates of engine/pick.h are always a prefix of the order (logit
// descending, id ascending), so the filters reduce to finding where that
// prefix ends, and the draw to a walk in id order:
//  1. the largest logit, and whether any is NaN / +inf;
//  2. with top-k or top-p, a histogram of the candidates by d = (max - logit) /
//     temperature in 1,024 bins (1/128 wide below 4, wider to 32; d >= 32 in
//     one more bin): counts, and weights exp(-d) as integers (w * 2^40, so
//     sums are exact and order-free); the bin where the count reaches k, or
//     the weight reaches top_p of the sum, holds the prefix's end;
//  3. inside that bin: its candidates, when at most 256 (a trained model's
//     rows mostly), gathered and ranked; else a radix select: histograms of
//     the candidates' keys (the logit's bits, above the bin's smallest key)
//     in digits of up to 11 bits, then a walk in id order among equal logits;
//  4. the draw: the kept candidates' weights summed per tile of 256 ids, the
//     tile where draw * sum falls, then the id inside it.
// Every histogram is counted by each block over its slice, then each block
// sums a share of the bins over the cluster, and every block finds the
// crossing from the shares; a draw's walk is finished by the cluster's first
// block (the leader). Bins by d, not by the logit's leading bits, spread a
// row's logits over hundreds of counters: the leading bits put most of them
// in a handful, where a block's atomic adds would queue behind each other.
//
// Distributed shared memory is read only between two cluster barriers: a
// block writes what others will read before a barrier, they read it after,
// and the block writes it again (or exits) only after a later barrier.
#include <cooperative_groups.h>

#include <array>
#include <climits>
#include <cmath>

#include "backend/cuda/launch.cuh"
#include "backend/cuda/sampling.h"
#include "util/error.h"

namespace ember::cuda {

DevicePick device_pick(const Pick& p) {
  DevicePick d;
  d.temperature = p.greedy() ? 0.0f : p.temperature;  // the kernel leaves greedy rows to argmax_rows
  d.top_k = p.top_k;
  d.top_p = p.top_p;
  d.min_p = p.min_p;
  d.draw = p.draw;
  return d;
}

namespace {

namespace cg = cooperative_groups;
using u64 = unsigned long long;
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kCoarse = 1024;             // bins of d below 32
constexpr int kCoarseBins = kCoarse + 1;  // and one for d >= 32 (weights below kMinWeight)
constexpr int kDigitBins = 2048;          // 11-bit digits
constexpr int kTile = 256;                // ids per tile of a walk: 8 rounds of 32
constexpr int kSliceCap = 32768;          // logits one block keeps in shared memory (128 KB)
constexpr int kMinCluster = 8, kMaxCluster = 16;
constexpr int kMaxShare = (kDigitBins + kMinCluster - 1) / kMinCluster;  // a block's share of a histogram's bins
constexpr int kFew = 256;  // a bin of at most this many candidates is gathered and ranked, not radix-selected
static_assert(kMaxCluster * kSliceCap >= kMaxSampledVocab, "a row fits in one cluster's slices");

// The candidates ordered by this key descending are in logit order (the float's bits made unsigned-ordered).
__device__ __forceinline__ uint32_t order_key(float l) {
  const uint32_t u = __float_as_uint(l);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// A prefix of the order: ids with a larger key, and those with this key up to `id`.
struct Prefix {
  uint32_t key = 0;  // below every finite logit's key
  int id = INT_MAX;
};
__device__ __forceinline__ bool in_prefix(uint32_t key, int i, Prefix p) { return key > p.key || (key == p.key && i <= p.id); }

__device__ __forceinline__ float key_logit(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

struct Row {
  const float* g;   // the row, in global memory
  const float* lg;  // this block's slice of it, in shared memory
  int n;            // the row's length
  int slice;        // every block's slice length (a multiple of kTile)
  int base, len;    // this block's first id, and its slice's length (0 past the row's end)
  float mx, inv_t;
  __device__ bool finite(float v) const { return v != -INFINITY; }  // NaN and +inf were ruled out first
  __device__ float scaled(float v) const { return __fmul_rn(v - mx, inv_t); }  // <= 0, as pick_id computes it
  __device__ float weight(float v) const { return expf(scaled(v)); }
  // w in units of 2^-40 (the scaling is exact); weights at or below kMinWeight drop out, as in pick_id.
  __device__ u64 fixed(float w) const { return w > kMinWeight ? __float2ull_rn(w * 1099511627776.0f) : 0; }
  // Non-decreasing in d, so each bin holds a stretch of the candidate order.
  __device__ int bin(float v) const {
    const float d = -scaled(v);
    if (d < 4.0f) return int(d * 128.0f);
    return d < 32.0f ? min(kCoarse - 1, 512 + int((d - 4.0f) * (512.0f / 28.0f))) : kCoarse;
  }
};

// Calls f(i, logit) for every id of this block's slice, from shared memory
// (-inf past its end, which no pass counts).
template <class F>
__device__ __forceinline__ void for_each_logit(const Row& r, F f) {
  const int rounds = (r.len + kThreads - 1) / kThreads;
  for (int k = 0; k < rounds; ++k) {
    const int j = k * kThreads + int(threadIdx.x);
    f(r.base + j, j < r.len ? r.lg[j] : -INFINITY);
  }
}

// The answer to a histogram search (cross).
struct Crossing {
  int at;                        // the bin where the running total reaches need; -1 when the total falls short
  u64 need;                      // what was searched for
  u64 above_count, above_mass;   // the totals of the bins walked before it
  u64 at_count, at_mass;         // its own
};

struct Stats {
  float mx;
  u64 count;
  int bad;
};
struct Span {
  uint32_t lo, hi;
};
struct Sums {
  u64 count, mass;
};
struct Member {
  uint32_t key;
  int id;
};

// One block's histogram over its slice: counts, and the weights (w * 2^40,
// at most 2^40) in three parts of 16, 16 and 9 bits, each summed by 32-bit
// shared-memory atomics: a 64-bit atomic add is a compare-and-swap loop
// there, which a flat row's thousands of adds to the same few bins made the
// kernel's largest cost. A slice holds at most 2^15 logits, so no part overflows.
template <int N>
struct Hist {
  uint32_t count[N], lo[N], mid[N], hi[N];
  __device__ void clear(int nbins) {
    for (int j = threadIdx.x; j < nbins; j += kThreads) count[j] = lo[j] = mid[j] = hi[j] = 0;
  }
  __device__ u64 mass(int j) const { return u64(lo[j]) + (u64(mid[j]) << 16) + (u64(hi[j]) << 32); }
};
static_assert(kSliceCap <= (1 << 15), "a histogram's 16-bit weight parts sum in 32 bits");

struct Shared {
  Hist<kCoarseBins> coarse;
  Hist<kDigitBins> digit;
  // This block's share of a histogram summed over the cluster (cross), in the order bins are walked.
  uint32_t merged_count[kMaxShare];
  u64 merged_mass[kMaxShare];
  u64 tile[kSliceCap / kTile];  // a walk's tile sums
  // A few candidates of one bin (select_few): this block's, then the cluster's, then in candidate order.
  Member few[kFew], gathered[kFew], ranked[kFew];
  int n_few;
  int few_count[kMaxCluster];
  float red_f[kWarps];
  u64 red_u[kWarps];
  int red_i[kWarps];
  uint32_t red_w[kWarps];
  // What the cluster's other blocks read.
  Stats part_stats;
  Span part_span;
  Sums part_sums, part_share;
  u64 part_total;
  int id;  // the leader's walk
  Crossing answer;
};

// Adds a logit to bin b (b < 0: none) with weight w (w * 2^40, at most 2^40).
// Aggregating a warp's adds to the same bin first (match_any, then a reduce
// per group of lanes) measured slower: the reduces of a warp's groups run
// one after another.
template <int N>
__device__ __forceinline__ void hist_add(Hist<N>& h, int b, u64 w) {
  if (b < 0) return;
  atomicAdd(&h.count[b], 1u);
  const uint32_t lo = uint32_t(w & 0xffffu), mid = uint32_t((w >> 16) & 0xffffu), hi = uint32_t(w >> 32);
  if (lo != 0) atomicAdd(&h.lo[b], lo);
  if (mid != 0) atomicAdd(&h.mid[b], mid);
  if (hi != 0) atomicAdd(&h.hi[b], hi);
}

__device__ __forceinline__ u64 warp_inclusive_scan(u64 v, int lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const u64 t = __shfl_up_sync(kFull, v, o);
    if (lane >= o) v += t;
  }
  return v;
}

// v combined over the block by op, in every thread: within each warp, then
// every warp combines the warps' results from shared memory (a load and five
// shuffles, not 32 loads one after another).
static_assert(kWarps == 32, "a warp combines the block's warps");
template <class T, class Op>
__device__ T block_reduce(T v, T* red, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFull, v, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = red[threadIdx.x & 31];
  for (int o = 16; o > 0; o >>= 1) r = op(r, __shfl_xor_sync(kFull, r, o));
  __syncthreads();  // red is free again
  return r;
}
__device__ float block_max(float v, Shared& sh) { return block_reduce(v, sh.red_f, [](float a, float b) { return fmaxf(a, b); }); }
__device__ u64 block_sum(u64 v, Shared& sh) { return block_reduce(v, sh.red_u, [](u64 a, u64 b) { return a + b; }); }
__device__ int block_or(int v, Shared& sh) { return block_reduce(v, sh.red_i, [](int a, int b) { return a | b; }); }
__device__ uint32_t block_min_u32(uint32_t v, Shared& sh) { return block_reduce(v, sh.red_w, [](uint32_t a, uint32_t b) { return min(a, b); }); }
__device__ uint32_t block_max_u32(uint32_t v, Shared& sh) { return block_reduce(v, sh.red_w, [](uint32_t a, uint32_t b) { return max(a, b); }); }

// Every block's `mine` (its own, already combined over the block) combined
// over the cluster, in every thread. `part` is the block's field that the
// others read; a call site has one of its own, or a cluster barrier between
// two calls with the same field.
template <class T, class Combine>
__device__ T cluster_combine(const T& mine, T* part, Combine combine, const cg::cluster_group& cl) {
  __shared__ T parts[kMaxCluster];
  if (threadIdx.x == 0) *part = mine;
  cl.sync();
  const int nb = int(cl.num_blocks());
  if (int(threadIdx.x) < nb) parts[threadIdx.x] = *cl.map_shared_rank(part, threadIdx.x);
  __syncthreads();
  T all = parts[0];
  for (int b = 1; b < nb; ++b) all = combine(all, parts[b]);
  return all;  // parts is written again only after the next call's barrier, which every reader here reaches after reading
}

// A search over a histogram that every block has counted over its slice: the
// first bin, walking `nbins` bins up (descending false) or down, where the
// running total of count (by_mass false) or mass reaches `need` (need 0:
// max(1, ceil(share * the total)), a share of all the bins). With limit >= 0
// the mass of bin `limit` counts as limit_mass and the bins after it as 0.
// Every block sums its share of the bins over the cluster (a group of nb
// lanes per bin, one lane per block read); then each block finds, from the
// shares' totals, the share where the total is reached and, in it, the bin:
// all blocks the same answer, with no leader to wait for.
template <int N>
__device__ Crossing cross(const Hist<N>& h, int nbins, bool descending, bool by_mass, u64 need, double share, int limit,
                          u64 limit_mass, const cg::cluster_group& cl, Shared& sh) {
  const int nb = int(cl.num_blocks()), rank = int(cl.block_rank());
  const int lane = threadIdx.x & 31;
  const int per = (nbins + nb - 1) / nb;  // bins in a share: at most kDigitBins / 8 = 256
  auto bin_at = [&](int p) { return descending ? nbins - 1 - p : p; };  // the p-th bin walked
  cl.sync();  // every block's histogram is complete
  const int first = rank * per, mine = max(0, min(nbins - first, per));
  const int groups = kThreads / nb, src = int(threadIdx.x) % nb;
  for (int q0 = 0; q0 < mine; q0 += groups) {
    const int q = q0 + int(threadIdx.x) / nb;
    uint32_t c = 0;
    u64 m = 0;
    if (q < mine) {
      const Hist<N>& o = *cl.map_shared_rank(&h, src);
      const int b = bin_at(first + q);
      c = o.count[b];
      m = o.mass(b);
    }
    for (int x = nb / 2; x > 0; x >>= 1) {
      c += __shfl_xor_sync(kFull, c, x);
      m += __shfl_xor_sync(kFull, m, x);
    }
    if (src == 0 && q < mine) {
      const int b = bin_at(first + q);
      if (limit >= 0 && b >= limit) m = b == limit ? limit_mass : 0;
      sh.merged_count[q] = c;
      sh.merged_mass[q] = m;
    }
  }
  __syncthreads();
  u64 sc = 0, sm = 0;
  for (int q = threadIdx.x; q < mine; q += kThreads) {
    sc += sh.merged_count[q];
    sm += sh.merged_mass[q];
  }
  sc = block_sum(sc, sh);
  sm = block_sum(sm, sh);
  if (threadIdx.x == 0) sh.part_share = Sums{sc, sm};
  cl.sync();  // every share is summed
  if (threadIdx.x < 32) {
    // The share where the running total reaches need.
    const Sums t = lane < nb ? *cl.map_shared_rank(&sh.part_share, lane) : Sums{0, 0};
    const u64 ic = warp_inclusive_scan(t.count, lane), im = warp_inclusive_scan(t.mass, lane);
    const u64 iv = by_mass ? im : ic, tv = by_mass ? t.mass : t.count;
    if (need == 0) need = max(u64(1), u64(ceil(share * double(__shfl_sync(kFull, iv, 31)))));
    if (lane == 0) sh.answer = Crossing{-1, need, 0, 0, 0, 0};
    const unsigned owners = __ballot_sync(kFull, iv - tv < need && need <= iv);
    if (owners != 0) {
      // Its bins, up to 8 a lane, in walking order.
      const int o = __ffs(owners) - 1;
      const u64 before_c = __shfl_sync(kFull, ic - t.count, o), before_m = __shfl_sync(kFull, im - t.mass, o);
      const int ofirst = o * per, ocnt = min(nbins - ofirst, per), k = (ocnt + 31) / 32;
      const uint32_t* oc = cl.map_shared_rank(sh.merged_count, o);
      const u64* om = cl.map_shared_rank(sh.merged_mass, o);
      uint32_t c[8];
      u64 m[8];
      u64 lc = 0, lm = 0;
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int q = lane * k + u;
        const bool in = u < k && q < ocnt;
        c[u] = in ? oc[q] : 0;
        m[u] = in ? om[q] : 0;
        lc += c[u];
        lm += m[u];
      }
      const u64 jc = warp_inclusive_scan(lc, lane), jm = warp_inclusive_scan(lm, lane);
      u64 ac = before_c + jc - lc, am = before_m + jm - lm;
      const bool here = (by_mass ? am : ac) < need && need <= (by_mass ? am + lm : ac + lc);
      const unsigned holders = __ballot_sync(kFull, here);
      __syncwarp();
      if (holders != 0 && lane == __ffs(holders) - 1) {
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          if (need <= (by_mass ? am + m[u] : ac + c[u])) {
            sh.answer = Crossing{bin_at(ofirst + lane * k + u), need, ac, am, c[u], m[u]};
            break;
          }
          ac += c[u];
          am += m[u];
        }
      }
    }
  }
  __syncthreads();
  return sh.answer;  // written again only after the next search's first barrier
}

// The id in id order where the running total of weight(i, logit) first
// exceeds x, for x = x_or_share (use_draw false) or x = floor(x_or_share *
// the total) (use_draw true); -1 when the total is 0. Every block sums its
// tiles; the leader finds the block, the tile and the id. With broadcast
// every thread of the cluster gets the id, else only the leader's.
template <class Weight>
__device__ int walk(const Row& r, Weight weight, double x_or_share, bool use_draw, bool broadcast, const cg::cluster_group& cl,
                    Shared& sh) {
  u64* tile = sh.tile;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nt = (r.len + kTile - 1) / kTile;
  for (int t = warp; t < nt; t += kWarps) {
    u64 s = 0;
#pragma unroll
    for (int m = 0; m < kTile / 32; ++m) {
      const int j = t * kTile + m * 32 + lane;
      s += weight(r.base + j, j < r.len ? r.lg[j] : -INFINITY);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
    if (lane == 0) tile[t] = s;
  }
  __syncthreads();
  if (warp == 0) {
    u64 s = 0;
    for (int t = lane; t < nt; t += 32) s += tile[t];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
    if (lane == 0) sh.part_total = s;
  }
  cl.sync();  // every block's tile sums are ready
  if (cl.block_rank() == 0 && warp == 0) {
    const int nb = int(cl.num_blocks());
    const u64 own = lane < nb ? *cl.map_shared_rank(&sh.part_total, lane) : 0;
    const u64 incl = warp_inclusive_scan(own, lane), excl = incl - own;
    const u64 total = __shfl_sync(kFull, incl, 31);
    u64 x = u64(x_or_share);
    if (use_draw) x = total == 0 ? 0 : min(total - 1, u64(x_or_share * double(total)));
    int found = -1;
    const unsigned owners = total == 0 ? 0u : __ballot_sync(kFull, excl <= x && x < incl);
    if (owners != 0) {
      // The block whose sums hold x, then its tile.
      const int owner = __ffs(owners) - 1;
      u64 rest = __shfl_sync(kFull, x - excl, owner);
      const int olen = max(0, min(r.n - owner * r.slice, r.slice)), ont = (olen + kTile - 1) / kTile;
      const u64* otile = cl.map_shared_rank(tile, owner);
      const int per = (ont + 31) / 32, lo = min(ont, lane * per), hi = min(ont, lo + per);
      u64 s = 0;
      for (int t = lo; t < hi; ++t) s += otile[t];
      const u64 ti = warp_inclusive_scan(s, lane), te = ti - s;
      const int src = __ffs(__ballot_sync(kFull, te <= rest && rest < ti)) - 1;  // rest < the owner's total
      int at = 0;
      u64 left = 0;
      if (lane == src) {
        u64 a = te;
        for (int t = lo; t < hi; ++t) {
          if (rest < a + otile[t]) {
            at = t;
            left = rest - a;
            break;
          }
          a += otile[t];
        }
      }
      at = __shfl_sync(kFull, at, src);
      rest = __shfl_sync(kFull, left, src);
      // The id inside the tile, from the row in global memory (the same values), its loads first.
      const int first = owner * r.slice + at * kTile;
      float v[kTile / 32];
#pragma unroll
      for (int m = 0; m < kTile / 32; ++m) {
        const int i = first + m * 32 + lane;
        v[m] = i < r.n ? r.g[i] : -INFINITY;
      }
#pragma unroll
      for (int m = 0; m < kTile / 32; ++m) {
        if (found >= 0) break;
        const u64 w = weight(first + m * 32 + lane, v[m]);  // -inf past n weighs 0
        const u64 wi = warp_inclusive_scan(w, lane);
        const u64 round = __shfl_sync(kFull, wi, 31);
        if (rest < round) {
          found = first + m * 32 + __ffs(__ballot_sync(kFull, wi - w <= rest && rest < wi)) - 1;
        } else {
          rest -= round;
        }
      }
    }
    if (lane == 0) sh.id = found;
  }
  cl.sync();  // the leader has read every block's sums; its id is ready
  if (!broadcast) return cl.block_rank() == 0 ? sh.id : -1;
  __shared__ int id;
  if (threadIdx.x == 0) id = *cl.map_shared_rank(&sh.id, 0);
  __syncthreads();
  return id;
}

// select_in_bin for a bin of at most kFew candidates (a trained model's rows
// mostly): each block gathers its members, every block copies the cluster's
// and ranks them in candidate order, then scans them; every block the same
// answer. One pass over the slices instead of a radix select's three or four.
template <class IsMember>
__device__ Prefix select_few(const Row& r, IsMember member, bool by_mass, u64 need, Prefix within, u64* taken_mass,
                             const cg::cluster_group& cl, Shared& sh) {
  if (threadIdx.x == 0) sh.n_few = 0;
  __syncthreads();
  for_each_logit(r, [&](int i, float v) {
    uint32_t key;
    if (!member(i, v, &key)) return;
    const int slot = atomicAdd(&sh.n_few, 1);
    if (slot < kFew) sh.few[slot] = Member{key, i};  // never more: the bin holds at most kFew
  });
  cl.sync();  // every block's members are gathered
  const int nb = int(cl.num_blocks());
  if (int(threadIdx.x) < nb) sh.few_count[threadIdx.x] = min(kFew, *cl.map_shared_rank(&sh.n_few, threadIdx.x));
  __syncthreads();
  int m = 0;
  for (int k = 0; k < nb; ++k) m += sh.few_count[k];
  m = min(m, kFew);
  for (int t = threadIdx.x; t < m; t += kThreads) {
    int k = 0, j = t;
    while (j >= sh.few_count[k]) j -= sh.few_count[k++];
    sh.gathered[t] = cl.map_shared_rank(sh.few, k)[j];
  }
  __syncthreads();
  for (int t = threadIdx.x; t < m; t += kThreads) {
    const Member a = sh.gathered[t];
    int rank = 0;
    for (int u = 0; u < m; ++u) {
      const Member c = sh.gathered[u];
      rank += c.key > a.key || (c.key == a.key && c.id < a.id);
    }
    sh.ranked[rank] = a;
  }
  __syncthreads();
  __shared__ int end;
  __shared__ u64 end_mass;
  if (threadIdx.x < 32) {
    // Eight candidates a lane, in order: where the running count or weight reaches need.
    const int lane = threadIdx.x;
    u64 w[kFew / 32], own_v = 0, own_m = 0;
#pragma unroll
    for (int u = 0; u < kFew / 32; ++u) {
      const int j = lane * (kFew / 32) + u;
      w[u] = j < m ? r.fixed(r.weight(key_logit(sh.ranked[j].key))) : 0;
      own_m += w[u];
      own_v += j < m ? (by_mass ? w[u] : 1) : 0;
    }
    const u64 iv = warp_inclusive_scan(own_v, lane), im = warp_inclusive_scan(own_m, lane);
    const bool here = iv - own_v < need && need <= iv;
    const unsigned holders = __ballot_sync(kFull, here);
    if (lane == 0) end = -1;
    __syncwarp();
    if (holders != 0 && lane == __ffs(holders) - 1) {
      u64 v = iv - own_v, ms = im - own_m;
#pragma unroll
      for (int u = 0; u < kFew / 32; ++u) {
        v += by_mass ? w[u] : 1;
        ms += w[u];
        if (v >= need) {
          end = lane * (kFew / 32) + u;
          end_mass = ms;  // the weight up to and including the end
          break;
        }
      }
    }
  }
  __syncthreads();
  if (end < 0) return within;  // never expected: the caller's crossing put the end here
  *taken_mass += end_mass;
  return Prefix{sh.ranked[end].key, sh.ranked[end].id};  // few, gathered and ranked are written again only after a later barrier
}

// The exact end of the prefix inside coarse bin `b`, among the candidates of
// `within`: the one where the running count (by_mass false) or weight
// (by_mass true) from the top reaches `need`. Adds the weight of the part
// of the bin it takes to *taken_mass.
__device__ __noinline__ Prefix select_in_bin(const Row& r, int b, u64 bin_count, bool by_mass, u64 need, Prefix within,
                                             u64* taken_mass, const cg::cluster_group& cl, Shared& sh) {
  auto member = [&](int i, float v, uint32_t* key) {
    if (!r.finite(v) || r.bin(v) != b) return false;
    *key = order_key(v);
    return in_prefix(*key, i, within);
  };
  if (bin_count <= u64(kFew)) return select_few(r, member, by_mass, need, within, taken_mass, cl, sh);
  // The digits are those of key - (the members' smallest key), from the
  // highest bit the members' span needs: nearly equal logits then spread over
  // the digit counters instead of queueing on one (their leading bits agree).
  uint32_t lo = 0xffffffffu, hi = 0;
  for_each_logit(r, [&](int i, float v) {
    uint32_t key;
    if (!member(i, v, &key)) return;
    lo = min(lo, key);
    hi = max(hi, key);
  });
  lo = block_min_u32(lo, sh);
  hi = block_max_u32(hi, sh);
  const Span span = cluster_combine(Span{lo, hi}, &sh.part_span, [](Span a, Span c) { return Span{min(a.lo, c.lo), max(a.hi, c.hi)}; }, cl);
  lo = span.lo;
  hi = span.hi;
  if (lo > hi) return within;  // no members: never expected (the caller's crossing put the end here)
  const int span_bits = hi > lo ? 32 - __clz(hi - lo) : 0;
  uint32_t pv = 0, pm = 0;  // the digits found so far, and their bits
  int digit = -1;
  u64 ties = 0, tie_mass = 0;  // the candidates of the last digit found, and their weight
  for (int top = span_bits; top > 0; top -= 11) {
    const int shift = max(0, top - 11), nb = 1 << (top - shift);
    sh.digit.clear(nb);
    __syncthreads();
    for_each_logit(r, [&](int i, float v) {
      uint32_t key;
      const bool in = member(i, v, &key) && ((key - lo) & pm) == pv;
      hist_add(sh.digit, in ? int(((key - lo) >> shift) & uint32_t(nb - 1)) : -1, in ? r.fixed(r.weight(v)) : 0);
    });
    const Crossing c = cross(sh.digit, nb, true, by_mass, need, 0.0, -1, 0, cl, sh);
    digit = c.at;  // the caller's crossing put the end in this bin, so its candidates reach need
    if (digit < 0) return within;  // never expected; keep the candidates rather than read outside the histogram
    need -= by_mass ? c.above_mass : c.above_count;
    *taken_mass += c.above_mass;
    ties = c.at_count;
    tie_mass = c.at_mass;
    pv |= uint32_t(digit) << shift;
    pm |= uint32_t(nb - 1) << shift;
  }
  if (digit < 0) {  // every member holds the same logit: count them as the last digit would have
    u64 count = 0, mass = 0;
    for_each_logit(r, [&](int i, float v) {
      uint32_t key;
      if (member(i, v, &key)) {
        ++count;
        mass += r.fixed(r.weight(v));
      }
    });
    count = block_sum(count, sh);
    mass = block_sum(mass, sh);
    const Sums all = cluster_combine(Sums{count, mass}, &sh.part_sums, [](Sums a, Sums c) { return Sums{a.count + c.count, a.mass + c.mass}; }, cl);
    ties = all.count;
    tie_mass = all.mass;
  }
  if (ties == 0) return within;  // never expected
  pv += lo;  // the key at the end
  // The candidates holding logit key pv, all of the same weight: take the first `take` of them.
  const u64 tie_w = tie_mass / ties;
  const u64 take = by_mass ? (tie_w == 0 ? ties : (need + tie_w - 1) / tie_w) : need;
  Prefix p;
  p.key = pv;
  if (take >= ties) {
    p.id = within.key == pv ? within.id : INT_MAX;
    *taken_mass += ties * tie_w;
    return p;
  }
  *taken_mass += take * tie_w;
  p.id = walk(r, [&](int i, float v) -> u64 { return r.finite(v) && order_key(v) == pv && in_prefix(pv, i, within) ? 1 : 0; },
              double(take - 1), false, true, cl, sh);
  return p;
}

// Launched in clusters of gridDim.x / rows blocks; slice: the logits each block keeps.
__global__ void __launch_bounds__(kThreads) sample_kernel(const float* logits, int64_t ld, int n, int slice, const DevicePick* picks,
                                                          int32_t* ids) {
  __shared__ Shared sh;
  extern __shared__ float slice_logits[];
  begin_kernel();
  const cg::cluster_group cl = cg::this_cluster();
  const int rank = int(cl.block_rank()), row = int(blockIdx.x / cl.num_blocks());
  const DevicePick pk = picks[row];
  if (!(pk.temperature > 0.0f)) return;  // greedy (argmax_rows picked it): the whole cluster leaves alike
  Row r{logits + int64_t(row) * ld, slice_logits, n, slice, rank * slice, 0, -INFINITY, __fdiv_rn(1.0f, pk.temperature)};
  r.len = max(0, min(n - r.base, slice));

  // 1. The slice into shared memory; the largest logit, the candidates, bad logits. Each thread
  // loads kBatch logits before it uses any, so that its loads wait out the trip to L2 together.
  constexpr int kBatch = 8;
  float mx = -INFINITY;
  u64 cnt = 0;
  int bad = 0;
  for (int b0 = 0; b0 < r.len; b0 += kThreads * kBatch) {
    float v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int j = b0 + u * kThreads + int(threadIdx.x);
      v[u] = j < r.len ? r.g[r.base + j] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int j = b0 + u * kThreads + int(threadIdx.x);
      if (j >= r.len) continue;
      slice_logits[j] = v[u];
      if (isnan(v[u]) || v[u] == INFINITY) bad = 1;
      else if (v[u] != -INFINITY) {
        mx = fmaxf(mx, v[u]);
        ++cnt;
      }
    }
  }
  const Stats mine{block_max(mx, sh), block_sum(cnt, sh), block_or(bad, sh)};
  const Stats st = cluster_combine(mine, &sh.part_stats, [](Stats a, Stats c) { return Stats{fmaxf(a.mx, c.mx), a.count + c.count, a.bad | c.bad}; }, cl);
  if (st.bad || st.count == 0) {
    if (rank == 0 && threadIdx.x == 0) ids[row] = st.bad ? kPickNonFinite : kPickAllMasked;
    cl.sync();  // no block leaves while another may still read its part_stats
    return;
  }
  r.mx = st.mx;

  const bool top_k = pk.top_k > 0 && u64(pk.top_k) < st.count, top_p = pk.top_p < 1.0f;
  Prefix by_k, by_p;
  if (top_k || top_p) {
    // 2. The coarse histogram (d >= 32 weighs 0 at 2^40).
    sh.coarse.clear(kCoarseBins);
    __syncthreads();
    for_each_logit(r, [&](int, float v) {
      const int b = r.finite(v) ? r.bin(v) : -1;
      hist_add(sh.coarse, b, b >= 0 && b < kCoarse ? r.fixed(r.weight(v)) : 0);
    });

    // 3. top-k: the k-th candidate, and the weight of the first k (what top-p takes a share of).
    int k_bin = -1;
    u64 k_mass = 0;
    if (top_k) {
      const Crossing c = cross(sh.coarse, kCoarseBins, false, false, u64(pk.top_k), 0.0, -1, 0, cl, sh);
      k_bin = c.at;  // k is below the count of candidates, so the crossing exists
      u64 taken = c.above_mass;
      by_k = select_in_bin(r, k_bin, c.at_count, false, u64(pk.top_k) - c.above_count, Prefix{}, &taken, cl, sh);
      k_mass = taken - c.above_mass;  // the part of k's bin that the first k take
    }
    // top-p: the shortest prefix whose weight reaches top_p of the sum (at least 1: the largest weighs
    // 2^40); after top-k only the first k count: the rest of k's bin and the bins after it weigh 0.
    if (top_p) {
      const Crossing c = cross(sh.coarse, kCoarseBins, false, true, 0, double(pk.top_p), k_bin, k_mass, cl, sh);
      if (c.at >= 0) {
        u64 taken = 0;
        by_p = select_in_bin(r, c.at, c.at_count, true, c.need - c.above_mass, c.at == k_bin ? by_k : Prefix{}, &taken, cl, sh);
      }
    }
  }

  // 4. The draw over the kept candidates, in id order.
  const float min_p = pk.min_p;
  const int id = walk(
      r,
      [&](int i, float v) -> u64 {
        if (!r.finite(v)) return 0;
        const uint32_t key = order_key(v);
        if (!in_prefix(key, i, by_k) || !in_prefix(key, i, by_p)) return 0;
        const float w = r.weight(v);
        return w >= min_p ? r.fixed(w) : 0;
      },
      pk.draw, true, false, cl, sh);
  if (rank == 0 && threadIdx.x == 0) ids[row] = id >= 0 ? id : kPickAllMasked;
}

// How many clusters of `cluster` blocks the device runs at once (0: none fit).
int active_clusters(unsigned cluster) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(cluster);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = size_t(kSliceCap) * sizeof(float);
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  EMBER_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, sample_kernel, &cfg));
  return n;
}

}  // namespace

void sample_rows(const float* logits, int64_t ld, int64_t n_rows, int n, const DevicePick* picks, int32_t* ids,
                 cudaStream_t s) {
  if (n_rows <= 0) return;
  if (n <= 0 || n > kMaxSampledVocab)
    throw Error("CUDA backend: sampling takes rows of 1.." + std::to_string(kMaxSampledVocab) + " logits, not " + std::to_string(n));
  // Clusters of 8 (the portable size) up to 8 slices of kSliceCap, else 16.
  static const std::array<int, 2> fits = [] {
    EMBER_CUDA_CHECK(cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSliceCap * sizeof(float))));
    EMBER_CUDA_CHECK(cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    return std::array<int, 2>{active_clusters(kMinCluster), active_clusters(kMaxCluster)};
  }();
  const bool small = n <= kMinCluster * kSliceCap;
  const unsigned cluster = small ? kMinCluster : kMaxCluster;
  if (fits[small ? 0 : 1] == 0)
    throw Error("CUDA backend: this device cannot run clusters of " + std::to_string(cluster) + " blocks, which sampling rows of " +
                std::to_string(n) + " logits takes");
  const int per = (n + int(cluster) - 1) / int(cluster), slice = (per + kTile - 1) / kTile * kTile;
  launch_clustered(sample_kernel, dim3(unsigned(n_rows) * cluster), kThreads, size_t(slice) * sizeof(float), cluster, s, logits, ld, n,
                   slice, picks, ids);
}

}  // namespace ember::cuda
