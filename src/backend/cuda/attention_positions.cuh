// The inner loop both decode attention kernels share: one warp's online
// softmax of one query head over a run of positions, whose key and value rows
// come from the paged KV blocks (the split kernel) or from shared memory (the
// cluster kernel). The same expressions in both, so a row's arithmetic does
// not depend on where its keys were read from.
#pragma once
#include <cmath>

#include "backend/cuda/attention.h"
#include "backend/cuda/kv_access.cuh"

namespace ember::cuda {

// Warps of a block of either kernel: one per query head of a key/value head's
// group, each taking several heads in turn where a group has more (register
// use then stays within what 256 threads may have).
constexpr int kAttentionWarps = 8;
__host__ __device__ constexpr int attention_warps(int group) { return group < kAttentionWarps ? group : kAttentionWarps; }

// Calls f.template operator()<NE>() with NE the elements of a head each lane
// holds: the fewest of 1, 2, 4, 8 with head_dim <= 32 NE.
template <class F>
void with_lane_elems(int head_dim, F&& f) {
  if (head_dim <= 32) f.template operator()<1>();
  else if (head_dim <= 64) f.template operator()<2>();
  else if (head_dim <= 128) f.template operator()<4>();
  else f.template operator()<8>();
}

// NE consecutive elements of a key or value row, in one load of up to 16
// bytes (two for 8 floats) where head_dim is a multiple of NE (every lane's
// elements then lie wholly inside or outside the head, aligned), else one by one.
template <class E, int NE>
struct alignas(sizeof(E) * NE > 16 ? 16 : sizeof(E) * NE) KvVec {
  E e[NE];
};
template <class E, int NE>
__device__ __forceinline__ void load_kv_elems(const E* row, int d0, int hd, bool vec, float (&out)[NE]) {
  if (vec) {
    if (d0 < hd) {
      const KvVec<E, NE> x = *reinterpret_cast<const KvVec<E, NE>*>(row + d0);
#pragma unroll
      for (int i = 0; i < NE; ++i) out[i] = to_f(x.e[i]);
    } else {
#pragma unroll
      for (int i = 0; i < NE; ++i) out[i] = 0.f;
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < NE; ++i) out[i] = d0 + i < hd ? to_f(row[d0 + i]) : 0.f;
}

// Positions lo..hi (none when hi < lo) of one query head, by one warp: q and
// acc are the lane's NE elements (from d0), (m, l) the running maximum and
// denominator. rows(p, k, v) points k and v at position p's key and value
// rows of the head.
template <class E, int NE, class Rows>
__device__ __forceinline__ void attend_positions(const AttnArgs& a, const float (&q)[NE], int lo, int hi, int d0, bool vec,
                                                 Rows rows, float (&acc)[NE], float& m, float& l) {
  constexpr int G = NE <= 4 ? 8 : 4;  // positions whose keys and values are loaded together
  const int hd = a.head_dim;
  for (int p0 = lo; p0 <= hi; p0 += G) {
    // G positions at a time: all their loads in flight together, their
    // reductions overlapped; the softmax updates stay in position order.
    float s[G], v[G][NE];
#pragma unroll
    for (int j = 0; j < G; ++j) {
      s[j] = 0.f;
      const E *kr, *vr;
      rows(p0 + j <= hi ? p0 + j : lo, kr, vr);
      float k[NE];
      load_kv_elems<E, NE>(kr, d0, hd, vec, k);
      load_kv_elems<E, NE>(vr, d0, hd, vec, v[j]);
#pragma unroll
      for (int i = 0; i < NE; ++i) s[j] = fmaf(q[i], k[i], s[j]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int j = 0; j < G; ++j) s[j] += __shfl_xor_sync(0xffffffffu, s[j], o);
    // One softmax update for the G positions (positions past hi weigh
    // nothing): a rescale per group instead of a chain of G dependent ones.
    float m_new = m;
#pragma unroll
    for (int j = 0; j < G; ++j) {
      float sc = s[j] * a.scale;
      if (a.softcap > 0.f) sc = a.softcap * tanhf(sc / a.softcap);
      s[j] = p0 + j <= hi ? sc : -INFINITY;
      m_new = fmaxf(m_new, s[j]);
    }
    const float corr = expf(m - m_new);
    l *= corr;
#pragma unroll
    for (int i = 0; i < NE; ++i) acc[i] *= corr;
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const float e = expf(s[j] - m_new);
      l += e;
#pragma unroll
      for (int i = 0; i < NE; ++i) acc[i] = fmaf(e, v[j][i], acc[i]);
    }
    m = m_new;
  }
}

// A head's partial result as the merges read it: head_dim weighted sums (the
// lane's NE from d0), then the running maximum and the denominator.
template <int NE>
__device__ __forceinline__ void store_partial(float* part, const float (&acc)[NE], float m, float l, int d0, int hd) {
#pragma unroll
  for (int i = 0; i < NE; ++i)
    if (d0 + i < hd) part[d0 + i] = acc[i];
  if ((threadIdx.x & 31) == 0) {
    part[hd] = m;
    part[hd + 1] = l;
  }
}

}  // namespace ember::cuda
