// One block per sampled row. The kept candidates of engine/pick.h are always a
// prefix of the order (logit descending, id ascending), so the filters reduce
// to finding where that prefix ends, and the draw to a walk in id order:
//  1. the largest logit, and whether any is NaN / +inf;
//  2. with top-k or top-p, a histogram of the candidates by d = (max - logit) /
//     temperature in 1,024 bins (1/128 wide below 4, wider to 32; d >= 32 in
//     one more bin): counts, and weights exp(-d) as integers (w * 2^40, so
//     sums are exact and order-free); the bin where the count reaches k, or
//     the weight reaches top_p of the sum, holds the prefix's end;
//  3. that bin's candidates (up to 8,192) are gathered into shared memory,
//     sorted and scanned to the exact end; a bin holding more (rows of nearly
//     equal logits) takes a radix select over the row instead, in digits of
//     11 bits of the logit's bits above the bin's smallest, and a walk in id
//     order among equal logits;
//  4. the draw: the kept candidates' weights summed per tile of 256 ids, the
//     tile where draw * sum falls, then the id inside it.
// Bins by d, not by the logit's leading bits, spread a row's 150K logits
// over hundreds of counters: the leading bits put most of them in a handful,
// where the block's atomic adds would queue behind each other.
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

using u64 = unsigned long long;
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kCoarse = 1024;          // bins of d below 32
constexpr int kCoarseBins = kCoarse + 1;  // and one for d >= 32 (weights below kMinWeight)
constexpr int kGather = 8192;          // candidates of one bin sorted in shared memory
constexpr size_t kGatherBytes = kGather * sizeof(unsigned long long);
constexpr int kDigitBins = 2048;       // 11-bit digits
constexpr int kTile = 256;             // ids per tile of a walk: 8 rounds of 32
constexpr int kMaxTiles = kMaxSampledVocab / kTile;
static_assert(kMaxTiles <= kDigitBins, "a walk's tile sums share the digit histogram's memory");

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

struct Row {
  const float* l;
  int n;
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

// Calls f(i, logit) for every id of the row (i >= n: -inf, which no pass
// counts), each thread loading kBatch logits before it uses any: one thread's
// loads one after another would each wait out the trip to L2, and a pass over a
// 150K-entry row took ~45 us that way. Every thread makes the same number of
// calls, so f may use warp votes.
constexpr int kBatch = 8;
template <class F>
__device__ __forceinline__ void for_each_logit(const Row& r, F f) {
  for (int base = 0; base < r.n; base += kThreads * kBatch) {
    float v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * kThreads + int(threadIdx.x);
      v[u] = i < r.n ? r.l[i] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) f(base + u * kThreads + int(threadIdx.x), v[u]);
  }
}

__device__ __forceinline__ float key_logit(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

struct Shared {
  uint32_t coarse_count[kCoarseBins];
  u64 coarse_mass[kCoarseBins];
  uint32_t digit_count[kDigitBins];
  u64 digit_mass[kDigitBins];  // also a walk's tile sums
  float red_f[kWarps];
  u64 red_u[kWarps], red_m[kWarps];
  int red_i[kWarps];
  // Results warp 0 hands the block.
  int at;
  u64 above_count, above_mass;
  int id;
  int n_gathered;
};

extern __shared__ u64 gathered[];  // kGather sort keys: order key << 32 | ~id (descending = candidate order)

__device__ __forceinline__ u64 warp_inclusive_scan(u64 v, int lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const u64 t = __shfl_up_sync(kFull, v, o);
    if (lane >= o) v += t;
  }
  return v;
}

__device__ float block_max(float v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  if ((threadIdx.x & 31) == 0) sh.red_f[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = sh.red_f[0];
  for (int w = 1; w < kWarps; ++w) r = fmaxf(r, sh.red_f[w]);
  __syncthreads();
  return r;
}

__device__ u64 block_sum(u64 v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  if ((threadIdx.x & 31) == 0) sh.red_u[threadIdx.x >> 5] = v;
  __syncthreads();
  u64 r = 0;
  for (int w = 0; w < kWarps; ++w) r += sh.red_u[w];
  __syncthreads();
  return r;
}

__device__ int block_or(int v, Shared& sh) {
  v = __any_sync(kFull, v);
  if ((threadIdx.x & 31) == 0) sh.red_i[threadIdx.x >> 5] = v;
  __syncthreads();
  int r = 0;
  for (int w = 0; w < kWarps; ++w) r |= sh.red_i[w];
  __syncthreads();
  return r;
}

// The block's smallest (take_max false) or largest of v.
__device__ uint32_t block_extreme_u32(uint32_t v, bool take_max, Shared& sh) {
  auto pick = [&](uint32_t a, uint32_t b) { return take_max ? max(a, b) : min(a, b); };
  for (int o = 16; o > 0; o >>= 1) v = pick(v, __shfl_xor_sync(kFull, v, o));
  if ((threadIdx.x & 31) == 0) sh.red_i[threadIdx.x >> 5] = int(v);
  __syncthreads();
  uint32_t r = uint32_t(sh.red_i[0]);
  for (int w = 1; w < kWarps; ++w) r = pick(r, uint32_t(sh.red_i[w]));
  __syncthreads();
  return r;
}

// Warp 0: the first bin, walking `bins` in the given direction, where the
// running total of `value` reaches `need` (need >= 1): sh.at, and the totals of
// the bins before it (sh.above_count, sh.above_mass). sh.at = -1 when the
// total falls short.
template <class Value>
__device__ void find_crossing(int nbins, bool descending, u64 need, Value value, const uint32_t* count, const u64* mass,
                              Shared& sh) {
  const int lane = threadIdx.x & 31;
  const int per = (nbins + 31) / 32;
  auto bin_at = [&](int j) { return descending ? nbins - 1 - j : j; };  // j-th bin walked
  const int lo = lane * per, hi = min(nbins, lo + per);
  u64 s = 0;
  for (int j = lo; j < hi; ++j) s += value(bin_at(j));
  const u64 incl = warp_inclusive_scan(s, lane), excl = incl - s;
  const unsigned mine = __ballot_sync(kFull, excl < need && need <= incl);
  if (mine == 0) {
    if (lane == 0) sh.at = -1;
    return;
  }
  if (lane != __ffs(mine) - 1) return;
  u64 a = excl, ac = 0, am = 0;
  for (int j = 0; j < lo; ++j) {
    ac += count[bin_at(j)];
    am += mass[bin_at(j)];
  }
  for (int j = lo; j < hi; ++j) {
    const int b = bin_at(j);
    const u64 v = value(b);
    if (need <= a + v) {
      sh.at = b;
      sh.above_count = ac;
      sh.above_mass = am;
      return;
    }
    a += v;
    ac += count[b];
    am += mass[b];
  }
}

// The id in id order where the running total of weight(i, logit) first
// exceeds x, for x = x_or_share (use_draw false) or x = floor(x_or_share *
// the total) (use_draw true). -1 when the total is 0. Every thread returns it.
template <class Weight>
__device__ int walk(const Row& r, Weight weight, double x_or_share, bool use_draw, Shared& sh) {
  u64* tile = sh.digit_mass;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nt = (r.n + kTile - 1) / kTile;
  for (int t = warp; t < nt; t += kWarps) {
    float v[kTile / 32];
#pragma unroll
    for (int m = 0; m < kTile / 32; ++m) {
      const int i = t * kTile + m * 32 + lane;
      v[m] = i < r.n ? r.l[i] : -INFINITY;
    }
    u64 s = 0;
#pragma unroll
    for (int m = 0; m < kTile / 32; ++m) s += weight(t * kTile + m * 32 + lane, v[m]);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
    if (lane == 0) tile[t] = s;
  }
  __syncthreads();
  if (warp == 0) {
    const int per = (nt + 31) / 32;
    const int lo = lane * per, hi = min(nt, lo + per);
    u64 s = 0;
    for (int t = lo; t < hi; ++t) s += tile[t];
    const u64 incl = warp_inclusive_scan(s, lane), excl = incl - s;
    const u64 total = __shfl_sync(kFull, incl, 31);
    u64 x = u64(x_or_share);
    if (use_draw) x = min(total - 1, u64(x_or_share * double(total)));
    int found = -1;
    const unsigned mine = total == 0 ? 0u : __ballot_sync(kFull, excl <= x && x < incl);
    if (mine != 0) {
      const int src = __ffs(mine) - 1;
      int at = 0;
      u64 rest = 0;
      if (lane == src) {
        u64 a = excl;
        for (int t = lo; t < hi; ++t) {
          if (x < a + tile[t]) {
            at = t;
            rest = x - a;
            break;
          }
          a += tile[t];
        }
      }
      at = __shfl_sync(kFull, at, src);
      rest = __shfl_sync(kFull, rest, src);
      for (int m = 0; m < kTile / 32 && found < 0; ++m) {
        const int i = at * kTile + m * 32 + lane;
        const u64 v = i < r.n ? weight(i, r.l[i]) : 0;  // -inf past n would weigh 0 too
        const u64 vi = warp_inclusive_scan(v, lane);
        const u64 round = __shfl_sync(kFull, vi, 31);
        if (rest < round) {
          found = at * kTile + m * 32 + __ffs(__ballot_sync(kFull, vi - v <= rest && rest < vi)) - 1;
        } else {
          rest -= round;
        }
      }
    }
    if (lane == 0) sh.id = found;
  }
  __syncthreads();
  return sh.id;
}

// select_in_bin below for a bin of at most kGather candidates: gathered into
// shared memory, sorted into candidate order, and scanned.
__device__ Prefix select_gathered(const Row& r, int b, bool by_mass, u64 need, Prefix within, u64* taken_mass, Shared& sh) {
  if (threadIdx.x == 0) {
    sh.n_gathered = 0;
    sh.at = -1;
  }
  __syncthreads();
  for_each_logit(r, [&](int i, float v) {
    if (!r.finite(v) || r.bin(v) != b) return;
    const uint32_t key = order_key(v);
    if (in_prefix(key, i, within)) gathered[atomicAdd(&sh.n_gathered, 1)] = u64(key) << 32 | u64(~uint32_t(i));
  });
  __syncthreads();
  const int m = sh.n_gathered;
  int size = 1;
  while (size < m) size <<= 1;
  for (int j = m + int(threadIdx.x); j < size; j += kThreads) gathered[j] = 0;  // below every candidate
  __syncthreads();
  // Bitonic sort, descending.
  for (int k = 2; k <= size; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < size; i += kThreads) {
        const int o = i ^ j;
        if (o > i) {
          const u64 a = gathered[i], c = gathered[o];
          if (((i & k) == 0) == (a < c)) {
            gathered[i] = c;
            gathered[o] = a;
          }
        }
      }
      __syncthreads();
    }
  // Scan in candidate order: each thread a run of `per` consecutive
  // candidates, its count or weight (the criterion) and its weight.
  const int per = (size + kThreads - 1) / kThreads;
  const int lo = int(threadIdx.x) * per, hi = min(m, lo + per);
  auto weight_at = [&](int j) { return r.fixed(r.weight(key_logit(uint32_t(gathered[j] >> 32)))); };
  u64 own_v = 0, own_m = 0;
  for (int j = lo; j < hi; ++j) {
    const u64 w = weight_at(j);
    own_m += w;
    own_v += by_mass ? w : 1;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const u64 incl_v = warp_inclusive_scan(own_v, lane), incl_m = warp_inclusive_scan(own_m, lane);
  if (lane == 31) {
    sh.red_u[warp] = incl_v;
    sh.red_m[warp] = incl_m;
  }
  __syncthreads();
  u64 cum_v = incl_v - own_v, cum_m = incl_m - own_m;  // before this thread's run
  for (int w = 0; w < warp; ++w) {
    cum_v += sh.red_u[w];
    cum_m += sh.red_m[w];
  }
  if (cum_v < need && need <= cum_v + own_v) {
    for (int j = lo; j < hi; ++j) {
      const u64 w = weight_at(j);
      cum_v += by_mass ? w : 1;
      cum_m += w;
      if (cum_v >= need) {
        sh.at = j;
        sh.above_mass = cum_m;  // the weight up to and including the end
        break;
      }
    }
  }
  __syncthreads();
  const int at = sh.at;
  if (at < 0) {  // never expected: the coarse crossing put the end here
    __syncthreads();
    return within;
  }
  *taken_mass += sh.above_mass;
  Prefix p;
  p.key = uint32_t(gathered[at] >> 32);
  p.id = int(~uint32_t(gathered[at] & 0xffffffffu));
  __syncthreads();
  return p;
}

// The exact end of the prefix inside coarse bin `b`, among the candidates of
// `within`: the one where the running count (by_mass false) or weight
// (by_mass true) from the top reaches `need`. Adds the weight of the part
// of the bin it takes to *taken_mass.
__device__ Prefix select_in_bin(const Row& r, int b, bool by_mass, u64 need, Prefix within, u64* taken_mass, Shared& sh) {
  if (sh.coarse_count[b] <= unsigned(kGather)) return select_gathered(r, b, by_mass, need, within, taken_mass, sh);
  auto member = [&](int i, float v, uint32_t* key) {
    if (!r.finite(v) || r.bin(v) != b) return false;
    *key = order_key(v);
    return in_prefix(*key, i, within);
  };
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
  lo = block_extreme_u32(lo, false, sh);
  hi = block_extreme_u32(hi, true, sh);
  const int span_bits = hi > lo ? 32 - __clz(hi - lo) : 0;
  uint32_t pv = 0, pm = 0;  // the digits found so far, and their bits
  int digit = -1;
  for (int top = span_bits; top > 0; top -= 11) {
    const int shift = max(0, top - 11), nb = 1 << (top - shift);
    for (int j = threadIdx.x; j < nb; j += kThreads) {
      sh.digit_count[j] = 0;
      sh.digit_mass[j] = 0;
    }
    __syncthreads();
    for_each_logit(r, [&](int i, float v) {
      uint32_t key;
      if (!member(i, v, &key) || ((key - lo) & pm) != pv) return;
      const int d = int(((key - lo) >> shift) & uint32_t(nb - 1));
      atomicAdd(&sh.digit_count[d], 1u);
      atomicAdd(&sh.digit_mass[d], r.fixed(r.weight(v)));
    });
    __syncthreads();
    if (threadIdx.x < 32) {
      if (by_mass) find_crossing(nb, true, need, [&](int j) { return sh.digit_mass[j]; }, sh.digit_count, sh.digit_mass, sh);
      else find_crossing(nb, true, need, [&](int j) { return u64(sh.digit_count[j]); }, sh.digit_count, sh.digit_mass, sh);
    }
    __syncthreads();
    digit = sh.at;  // the caller's crossing put the end in this bin, so its candidates reach need
    if (digit < 0) {  // never expected; keep the candidates rather than read outside the histogram
      __syncthreads();
      return within;
    }
    need -= by_mass ? sh.above_mass : sh.above_count;
    *taken_mass += sh.above_mass;
    pv |= uint32_t(digit) << shift;
    pm |= uint32_t(nb - 1) << shift;
    __syncthreads();
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
    if (threadIdx.x == 0) {
      sh.digit_count[0] = uint32_t(count);
      sh.digit_mass[0] = mass;
    }
    digit = 0;
    __syncthreads();
  }
  pv += lo;  // the key at the end
  // The candidates holding logit key pv, all of the same weight: take the first r of them.
  const u64 ties = sh.digit_count[digit], tie_w = sh.digit_mass[digit] / ties;
  const u64 take = by_mass ? (tie_w == 0 ? ties : (need + tie_w - 1) / tie_w) : need;
  __syncthreads();
  Prefix p;
  p.key = pv;
  if (take >= ties) {
    p.id = within.key == pv ? within.id : INT_MAX;
    *taken_mass += ties * tie_w;
    return p;
  }
  *taken_mass += take * tie_w;
  p.id = walk(r, [&](int i, float v) -> u64 { return r.finite(v) && order_key(v) == pv && in_prefix(pv, i, within) ? 1 : 0; },
              double(take - 1), false, sh);
  return p;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* logits, int64_t ld, int n, const DevicePick* picks,
                                                          int32_t* ids) {
  __shared__ Shared sh;
  begin_kernel();
  const DevicePick pk = picks[blockIdx.x];
  if (!(pk.temperature > 0.0f)) return;  // greedy: argmax_rows picked it
  Row r{logits + int64_t(blockIdx.x) * ld, n, -INFINITY, __fdiv_rn(1.0f, pk.temperature)};

  // 1. The largest logit, the candidates, bad logits.
  float mx = -INFINITY;
  u64 cnt = 0;
  int bad = 0;
  for_each_logit(r, [&](int, float v) {
    if (isnan(v) || v == INFINITY) bad = 1;
    else if (v != -INFINITY) {
      mx = fmaxf(mx, v);
      ++cnt;
    }
  });
  bad = block_or(bad, sh);
  cnt = block_sum(cnt, sh);
  r.mx = block_max(mx, sh);
  if (bad || cnt == 0) {
    if (threadIdx.x == 0) ids[blockIdx.x] = bad ? kPickNonFinite : kPickAllMasked;
    return;
  }

  const bool top_k = pk.top_k > 0 && u64(pk.top_k) < cnt, top_p = pk.top_p < 1.0f;
  Prefix by_k, by_p;
  if (top_k || top_p) {
    // 2. The coarse histogram; d >= 32 weighs 0 at 2^40 and is counted a warp at a time.
    for (int j = threadIdx.x; j < kCoarseBins; j += kThreads) {
      sh.coarse_count[j] = 0;
      sh.coarse_mass[j] = 0;
    }
    __syncthreads();
    for_each_logit(r, [&](int, float v) {
      const int b = r.finite(v) ? r.bin(v) : -1;
      const unsigned far = __ballot_sync(kFull, b == kCoarse);
      if (b >= 0 && b < kCoarse) {
        atomicAdd(&sh.coarse_count[b], 1u);
        atomicAdd(&sh.coarse_mass[b], r.fixed(r.weight(v)));
      }
      if (far != 0 && (threadIdx.x & 31) == unsigned(__ffs(far) - 1)) atomicAdd(&sh.coarse_count[kCoarse], unsigned(__popc(far)));
    });
    __syncthreads();
    u64 sum = 0;
    for (int j = threadIdx.x; j < kCoarseBins; j += kThreads) sum += sh.coarse_mass[j];
    sum = block_sum(sum, sh);

    // 3. top-k: the k-th candidate, and the weight of the first k (what top-p takes a share of).
    int k_bin = kCoarse;
    if (top_k) {
      if (threadIdx.x < 32)
        find_crossing(kCoarseBins, false, u64(pk.top_k), [&](int j) { return u64(sh.coarse_count[j]); }, sh.coarse_count,
                      sh.coarse_mass, sh);
      __syncthreads();
      k_bin = sh.at;
      const u64 above_count = sh.above_count;
      u64 taken = sh.above_mass;
      __syncthreads();
      by_k = select_in_bin(r, k_bin, false, u64(pk.top_k) - above_count, Prefix{}, &taken, sh);
      sum = taken;
      // Only the first k count from here on: the rest of k's bin and the bins after it drop out.
      for (int j = k_bin + 1 + int(threadIdx.x); j < kCoarseBins; j += kThreads) sh.coarse_mass[j] = 0;
      __syncthreads();
      if (threadIdx.x == 0) {
        u64 before = 0;
        for (int j = 0; j < k_bin; ++j) before += sh.coarse_mass[j];
        sh.coarse_mass[k_bin] = taken - before;
      }
      __syncthreads();
    }
    // top-p: the shortest prefix whose weight reaches top_p of the sum (at least 1: the largest weighs 2^40).
    if (top_p) {
      const u64 need = max(u64(1), u64(ceil(double(pk.top_p) * double(sum))));
      if (threadIdx.x < 32)
        find_crossing(kCoarseBins, false, need, [&](int j) { return sh.coarse_mass[j]; }, sh.coarse_count, sh.coarse_mass, sh);
      __syncthreads();
      const int p_bin = sh.at;
      const u64 above_mass = sh.above_mass;
      __syncthreads();
      if (p_bin >= 0) {
        u64 taken = 0;
        by_p = select_in_bin(r, p_bin, true, need - above_mass, p_bin == k_bin ? by_k : Prefix{}, &taken, sh);
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
      pk.draw, true, sh);
  if (threadIdx.x == 0) ids[blockIdx.x] = id >= 0 ? id : kPickAllMasked;
}

}  // namespace

void sample_rows(const float* logits, int64_t ld, int64_t n_rows, int n, const DevicePick* picks, int32_t* ids,
                 cudaStream_t s) {
  if (n_rows <= 0) return;
  if (n <= 0 || n > kMaxSampledVocab)
    throw Error("CUDA backend: sampling takes rows of 1.." + std::to_string(kMaxSampledVocab) + " logits, not " + std::to_string(n));
  static const bool sized = [] {
    EMBER_CUDA_CHECK(cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kGatherBytes)));
    return true;
  }();
  (void)sized;
  launch(sample_kernel, dim3(unsigned(n_rows)), kThreads, kGatherBytes, s, logits, ld, n, picks, ids);
}

}  // namespace ember::cuda
