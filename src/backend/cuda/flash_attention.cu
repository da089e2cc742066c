// FlashAttention-style prefill on the tensor cores (mma.sync m16n8k16, 16-bit
// inputs, float accumulators). One block per (query tile, query head): four
// warps of 16 query rows each. Keys and values come in tiles of BKV positions
// from the paged blocks into shared memory (cp.async, two stages, so the next
// tile loads while this one is multiplied); S = Q K^T, the online softmax and
// O += P V stay in registers. A tile's keys are read once for 64 queries
// instead of once per query, which is what bounds the per-token kernel of
// attention.cu on long prompts.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/async_copy.cuh"
#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kv_access.cuh"
#include "backend/cuda/launch.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kWarps = kFlashRows / 16;

// The tensor-core product and the packing of two floats into one 32-bit
// operand, per 16-bit type: the low half holds the element of lower index.
template <class E> struct Mma;
template <> struct Mma<__half> {
  static __device__ __forceinline__ void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};
template <> struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

// Four 8x8 matrices of 16-bit elements from shared memory; lanes 8i..8i+7 give the rows of matrix i.
__device__ __forceinline__ void ldsm_x4(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// Shared memory of one block: the query tile and two stages of keys and
// values, rows padded by 16 bytes so ldmatrix reads no bank twice.
template <int HD, int BKV>
constexpr size_t flash_smem_bytes() { return size_t(kFlashRows + 4 * BKV) * (HD + 8) * 2; }

// HD: head_dim rounded up to a multiple of 64 (the dims past head_dim are
// zero); BKV: positions per key/value tile.
template <class E, int HD, int BKV>
__global__ void __launch_bounds__(kWarps * 32) flash_kernel(AttnArgs a, StepIndex ix, KvLayer kv, const int32_t* tiles,
                                                             int n_tiles) {
  constexpr int S = HD + 8;  // elements per shared-memory row
  extern __shared__ __align__(16) unsigned char smem[];
  E* Qs = reinterpret_cast<E*>(smem);
  E* Ks = Qs + kFlashRows * S;
  E* Vs = Ks + 2 * BKV * S;
  begin_kernel();

  const int h = blockIdx.x;
  const int tile = n_tiles - 1 - int(blockIdx.y);  // a sequence's last tiles see the most positions: start them first
  const int t0 = tiles[2 * tile], cnt = tiles[2 * tile + 1];
  const int hd = a.head_dim;
  const int g = h / (a.n_heads / a.n_kv_heads);
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
  const int32_t* table = ix.tables + ix.table_off[ix.seq[t0]];
  const int pos_first = ix.pos[t0], pos_last = ix.pos[t0 + cnt - 1];
  const int window = a.sliding_window;
  const int lo = window > 0 ? max(0, pos_first - window + 1) : 0;  // the tile's lowest visible position

  // The query tile, rounded to E; rows past the tile and dims past head_dim are zero.
  for (int i = tid; i < kFlashRows * (HD / 2); i += kWarps * 32) {
    const int r = i / (HD / 2), d = (i % (HD / 2)) * 2;
    float2 x = make_float2(0.f, 0.f);
    if (r < cnt && d < hd) x = *reinterpret_cast<const float2*>(a.q + (int64_t(t0 + r) * a.n_heads + h) * hd + d);
    *reinterpret_cast<uint32_t*>(Qs + r * S + d) = Mma<E>::pack(x.x, x.y);
  }

  // Keys and values of positions j*BKV.. into stage st; positions outside
  // [lo, pos_last] and dims past head_dim are zero-filled (never read from memory).
  auto load_kv = [&](int j, int st) {
    constexpr int CH = HD / 8;  // 16-byte chunks per row
    for (int i = tid; i < BKV * CH; i += kWarps * 32) {
      const int r = i / CH, c = i % CH, p = j * BKV + r;
      const bool ok = p >= lo && p <= pos_last && c * 8 < hd;
      const E* kr = static_cast<const E*>(kv.base);
      const E* vr = kr;
      if (ok) {
        kr = kv_at<E>(kv, table, p, 0) + g * hd + c * 8;
        vr = kv_at<E>(kv, table, p, 1) + g * hd + c * 8;
      }
      cp_async16(Ks + (st * BKV + r) * S + c * 8, kr, ok);
      cp_async16(Vs + (st * BKV + r) * S + c * 8, vr, ok);
    }
  };

  const int j_lo = lo / BKV, j_hi = pos_last / BKV;
  load_kv(j_lo, 0);
  cp_async_commit();
  __syncthreads();  // the query tile is in shared memory

  // This thread's two rows (A: lane/4, B: lane/4 + 8 of the warp's 16), their
  // visible positions, and their query fragments.
  const int rA = w * 16 + lane / 4, rB = rA + 8;
  const int lastA = rA < cnt ? ix.pos[t0 + rA] : -1, lastB = rB < cnt ? ix.pos[t0 + rB] : -1;
  const int firstA = window > 0 ? lastA - window + 1 : 0, firstB = window > 0 ? lastB - window + 1 : 0;
  const int warp_last = max(lastA, lastB);  // equal across the warp after the max below
  const int warp_max = __reduce_max_sync(0xffffffffu, warp_last);
  uint32_t qf[HD / 16][4];
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk)
    ldsm_x4(qf[kk], Qs + (w * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * S + kk * 16 + (lane >> 4) * 8);

  float o[HD / 8][4];
#pragma unroll
  for (int i = 0; i < HD / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float mA = -INFINITY, mB = -INFINITY, lA = 0.f, lB = 0.f;
  constexpr float kLog2e = 1.4426950408889634f;

  for (int j = j_lo; j <= j_hi; ++j) {
    const int st = (j - j_lo) & 1;
    if (j < j_hi) load_kv(j + 1, st ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();  // tile j is in stage st for every warp

    // Warps whose rows all lie before this tile (or past the tile's rows) skip it.
    if (j * BKV <= warp_max) {
      const E* Kt = Ks + st * BKV * S;
      const E* Vt = Vs + st * BKV * S;
      float s[BKV / 8][4];
#pragma unroll
      for (int n = 0; n < BKV / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk)
#pragma unroll
        for (int n2 = 0; n2 < BKV / 16; ++n2) {
          uint32_t b[4];
          ldsm_x4(b, Kt + (n2 * 16 + (lane & 7) + (lane >> 4) * 8) * S + kk * 16 + ((lane >> 3) & 1) * 8);
          Mma<E>::run(s[2 * n2], qf[kk], b);
          Mma<E>::run(s[2 * n2 + 1], qf[kk], b + 2);
        }

      // Scale, soft-cap, mask (causal and window), in log2 units.
      float mxA = -INFINITY, mxB = -INFINITY;
#pragma unroll
      for (int n = 0; n < BKV / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int p = j * BKV + n * 8 + 2 * (lane & 3) + (e & 1);
          float x = s[n][e] * a.scale;
          if (a.softcap > 0.f) x = a.softcap * tanhf(x / a.softcap);
          const bool visible = e < 2 ? (p <= lastA && p >= firstA) : (p <= lastB && p >= firstB);
          x = visible ? x * kLog2e : -INFINITY;
          s[n][e] = x;
          if (e < 2) mxA = fmaxf(mxA, x);
          else mxB = fmaxf(mxB, x);
        }
#pragma unroll
      for (int o2 = 1; o2 <= 2; o2 <<= 1) {
        mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, o2));
        mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, o2));
      }
      const float nA = fmaxf(mA, mxA), nB = fmaxf(mB, mxB);
      // A row that has seen nothing yet keeps a finite base: its exponentials are all 0.
      const float bA = nA == -INFINITY ? 0.f : nA, bB = nB == -INFINITY ? 0.f : nB;
      const float cA = exp2f(mA - bA), cB = exp2f(mB - bB);
      mA = nA;
      mB = nB;
      lA *= cA;
      lB *= cB;
#pragma unroll
      for (int i = 0; i < HD / 8; ++i) {
        o[i][0] *= cA; o[i][1] *= cA;
        o[i][2] *= cB; o[i][3] *= cB;
      }
#pragma unroll
      for (int n = 0; n < BKV / 8; ++n) {
        s[n][0] = exp2f(s[n][0] - bA); s[n][1] = exp2f(s[n][1] - bA);
        s[n][2] = exp2f(s[n][2] - bB); s[n][3] = exp2f(s[n][3] - bB);
        lA += s[n][0] + s[n][1];
        lB += s[n][2] + s[n][3];
      }

      // O += P V: the probabilities as the A operand straight from the accumulators.
#pragma unroll
      for (int kk = 0; kk < BKV / 16; ++kk) {
        const uint32_t pa[4] = {Mma<E>::pack(s[2 * kk][0], s[2 * kk][1]), Mma<E>::pack(s[2 * kk][2], s[2 * kk][3]),
                                Mma<E>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                Mma<E>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int d2 = 0; d2 < HD / 16; ++d2) {
          uint32_t b[4];
          ldsm_x4_trans(b, Vt + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * S + d2 * 16 + (lane >> 4) * 8);
          Mma<E>::run(o[2 * d2], pa, b);
          Mma<E>::run(o[2 * d2 + 1], pa, b + 2);
        }
      }
    }
    __syncthreads();  // every warp is done with stage st before it is loaded again
  }

  // The row sums were kept per thread: add the four threads of each row.
#pragma unroll
  for (int o2 = 1; o2 <= 2; o2 <<= 1) {
    lA += __shfl_xor_sync(0xffffffffu, lA, o2);
    lB += __shfl_xor_sync(0xffffffffu, lB, o2);
  }
  const float iA = lA > 0.f ? 1.f / lA : 0.f, iB = lB > 0.f ? 1.f / lB : 0.f;
#pragma unroll
  for (int i = 0; i < HD / 8; ++i) {
    const int d = i * 8 + 2 * (lane & 3);
    if (d >= hd) continue;
    if (rA < cnt)
      *reinterpret_cast<float2*>(a.out + (int64_t(t0 + rA) * a.n_heads + h) * hd + d) = make_float2(o[i][0] * iA, o[i][1] * iA);
    if (rB < cnt)
      *reinterpret_cast<float2*>(a.out + (int64_t(t0 + rB) * a.n_heads + h) * hd + d) = make_float2(o[i][2] * iB, o[i][3] * iB);
  }
}

template <class E, int HD, int BKV>
void launch_flash(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, const int32_t* tiles, int n_tiles, cudaStream_t s) {
  constexpr size_t smem = flash_smem_bytes<HD, BKV>();
  // Above 48 KB of dynamic shared memory a kernel must opt in, once per process.
  static const cudaError_t opted =
      cudaFuncSetAttribute(flash_kernel<E, HD, BKV>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  EMBER_CUDA_CHECK(opted);
  launch(flash_kernel<E, HD, BKV>, dim3(unsigned(a.n_heads), unsigned(n_tiles)), kWarps * 32, smem, s, a, ix, kv, tiles, n_tiles);
}

template <class E>
void launch_for_head_dim(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, const int32_t* tiles, int n_tiles,
                         cudaStream_t s) {
  if (a.head_dim <= 64) launch_flash<E, 64, 64>(a, ix, kv, tiles, n_tiles, s);
  else if (a.head_dim <= 128) launch_flash<E, 128, 64>(a, ix, kv, tiles, n_tiles, s);
  else launch_flash<E, 256, 32>(a, ix, kv, tiles, n_tiles, s);  // half the positions per tile: the accumulators double
}

}  // namespace

bool flash_attention_fits(KvType type, int head_dim) {
  return (type == KvType::F16 || type == KvType::BF16) && head_dim % 8 == 0 && head_dim <= 256;
}

void flash_attention(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, const int32_t* tiles, int n_tiles,
                     cudaStream_t s) {
  if (!flash_attention_fits(kv.type, a.head_dim))
    throw Error("CUDA backend: flash attention needs F16 or BF16 keys and values and head_dim a multiple of 8, at most 256");
  if (n_tiles == 0) return;
  if (kv.type == KvType::F16) launch_for_head_dim<__half>(a, ix, kv, tiles, n_tiles, s);
  else launch_for_head_dim<__nv_bfloat16>(a, ix, kv, tiles, n_tiles, s);
}

}  // namespace ember::cuda
