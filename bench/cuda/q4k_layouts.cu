// One-token Q4_K products over three layouts of the same weights, the
// measurement behind the device layout (src/backend/cuda/device_layout.h):
//
//   ember_bench_q4k_layouts [rows] [k]        (default 14336 4096)
//
//   file:       the GGUF block as read (d, dmin, 12 bytes of 6-bit scales and
//               mins packed as ggml packs them, 128 bytes of codes);
//   device:     the same block with its scales re-encoded by to_device_layout,
//               decoded with q4k_scale_bits (what the backend does);
//   coalesced:  device headers, but a row's 16-byte headers first and then its
//               codes in groups of 32 pieces, first halves then second halves,
//               so that each warp load reads 512 contiguous bytes.
// The kernels follow gemv_int8.cu's one-token product (a lane per 64-weight
// piece, R rows per warp, U pieces loaded ahead); every variant sums in the
// same order and must give the file-layout kernel's bits, which the float64
// product checks. "loads only" variants fold the bytes without multiplying:
// the memory ceiling of that access pattern.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/dequant.cuh"
#include "backend/cuda/device_layout.h"
#include "backend/cuda/launch.cuh"

namespace {

using ember::cuda::begin_kernel;
using ember::cuda::h2f;
using ember::cuda::q4k_scale_bits;

constexpr int kBlockBytes = 144;

__device__ __forceinline__ int dp4a_us(uint32_t w, int a, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(w), "r"(a), "r"(c));
  return d;
}

struct Acts {
  const int8_t* q;
  const float* d;
  const int32_t* sums;
};

struct Raw {
  uint4 hdr, q0, q1;
};

enum class Layout { File, Device, Coalesced };

template <Layout L>
__device__ __forceinline__ void fetch(const uint8_t* row, int nsb, int p, Raw& r) {
  const int sb = p >> 2, pp = p & 3;
  if constexpr (L == Layout::Coalesced) {
    r.hdr = *reinterpret_cast<const uint4*>(row + 16 * sb);
    const int pieces = 4 * nsb, g0 = p & ~31, in_group = min(32, pieces - g0);
    const uint8_t* q = row + 16 * nsb + 32 * g0;
    r.q0 = *reinterpret_cast<const uint4*>(q + 16 * (p & 31));
    r.q1 = *reinterpret_cast<const uint4*>(q + 16 * in_group + 16 * (p & 31));
  } else {
    const uint8_t* blk = row + size_t(sb) * kBlockBytes;
    r.hdr = *reinterpret_cast<const uint4*>(blk);
    const uint4* qv = reinterpret_cast<const uint4*>(blk + 16 + 32 * pp);
    r.q0 = qv[0];
    r.q1 = qv[1];
  }
}

// ggml's packing: sub-block s's scale and min, as the former one-token kernel decoded it.
__device__ __forceinline__ void file_scale_min(const uint4& hdr, int s, bool low, int& sc, int& m) {
  auto byte = [&](int i) -> int {
    const uint32_t word = i < 4 ? hdr.y : i < 8 ? hdr.z : hdr.w;
    return int((word >> (8 * (i & 3))) & 0xFF);
  };
  if (low) {
    sc = byte(s) & 63;
    m = byte(s + 4) & 63;
  } else {
    sc = (byte(s + 4) & 0xF) | ((byte(s - 4) >> 6) << 4);
    m = (byte(s + 4) >> 4) | ((byte(s) >> 6) << 4);
  }
}

// MaskedHigh: the high nibbles enter dp4a masked in place (16 times their
// value, unsigned) and the sum is shifted once, instead of shifting each word.
template <Layout L, bool MaskedHigh>
__device__ __forceinline__ float piece_dot(const Raw& r, const Acts& x, int p) {
  const int sb = p >> 2, pp = p & 3;
  int sc0, sc1, m0, m1;
  if constexpr (L == Layout::File) {
    if (pp < 2) {
      file_scale_min(r.hdr, 2 * pp, true, sc0, m0);
      file_scale_min(r.hdr, 2 * pp + 1, true, sc1, m1);
    } else {
      file_scale_min(r.hdr, 2 * pp, false, sc0, m0);
      file_scale_min(r.hdr, 2 * pp + 1, false, sc1, m1);
    }
  } else {
    const uint32_t v = q4k_scale_bits(r.hdr, 2 * pp);
    sc0 = v & 63;
    m0 = (v >> 6) & 63;
    sc1 = (v >> 12) & 63;
    m1 = (v >> 18) & 63;
  }
  const uint32_t words[8] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w, r.q1.x, r.q1.y, r.q1.z, r.q1.w};
  const uint4* a = reinterpret_cast<const uint4*>(x.q + sb * 256 + 64 * pp);
  const uint4 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
  const int av[16] = {int(a0.x), int(a0.y), int(a0.z), int(a0.w), int(a1.x), int(a1.y), int(a1.z), int(a1.w),
                      int(a2.x), int(a2.y), int(a2.z), int(a2.w), int(a3.x), int(a3.y), int(a3.z), int(a3.w)};
  int s0 = 0, s1 = 0;
  if constexpr (MaskedHigh) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      s0 = dp4a_us(words[i] & 0x0F0F0F0Fu, av[i], s0);
      s1 = dp4a_us(words[i] & 0xF0F0F0F0u, av[8 + i], s1);
    }
    s1 >>= 4;
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      s0 = __dp4a(int(words[i] & 0x0F0F0F0Fu), av[i], s0);
      s1 = __dp4a(int((words[i] >> 4) & 0x0F0F0F0Fu), av[8 + i], s1);
    }
  }
  const int4 g = *reinterpret_cast<const int4*>(x.sums + sb * 16 + 4 * pp);
  const int mins = m0 * (g.x + g.y) + m1 * (g.z + g.w);
  const float d = h2f(uint16_t(r.hdr.x)), dmin = h2f(uint16_t(r.hdr.x >> 16));
  return x.d[sb] * (d * float(sc0 * s0 + sc1 * s1) - dmin * float(mins));
}

// Warps of R rows, U pieces per lane loaded ahead; ReadOnly only folds the bytes.
template <Layout L, bool MaskedHigh, int W, int R, int U, bool ReadOnly>
__global__ void __launch_bounds__(W * 32) product(const uint8_t* Wt, size_t stride, int rows, int nsb, Acts x,
                                                  float* Y) {
  const int lane = threadIdx.x & 31;
  const int r0 = (blockIdx.x * W + (threadIdx.x >> 5)) * R;
  if (r0 >= rows) return;
  const uint8_t* row[R];
#pragma unroll
  for (int r = 0; r < R; ++r) row[r] = Wt + size_t(min(r0 + r, rows - 1)) * stride;
  float acc[R];
  uint32_t fold[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.f, fold[r] = 0;
  const int pieces = 4 * nsb;
  bool await = true;
  for (int p0 = lane; p0 < pieces; p0 += 32 * U) {
    Raw raw[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (p0 + 32 * u < pieces)
#pragma unroll
        for (int r = 0; r < R; ++r) fetch<L>(row[r], nsb, p0 + 32 * u, raw[u][r]);
    if (await) {
      begin_kernel();
      await = false;
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (p0 + 32 * u < pieces)
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if constexpr (ReadOnly) {
            const Raw& q = raw[u][r];
            fold[r] ^= q.hdr.x ^ q.hdr.y ^ q.hdr.z ^ q.hdr.w ^ q.q0.x ^ q.q0.y ^ q.q0.z ^ q.q0.w ^ q.q1.x ^ q.q1.y ^
                       q.q1.z ^ q.q1.w;
          } else {
            acc[r] += piece_dot<L, MaskedHigh>(raw[u][r], x, p0 + 32 * u);
          }
        }
  }
  if (await) begin_kernel();
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
      fold[r] ^= __shfl_xor_sync(0xffffffffu, fold[r], o);
    }
  }
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (r0 + r < rows) Y[r0 + r] = ReadOnly ? float(fold[r] & 0xFFFF) : acc[r];
}

// The bytes alone, grid-stride, four 16-byte loads in flight per thread.
__global__ void __launch_bounds__(256) stream_read(const uint4* p, size_t n, float* Y) {
  begin_kernel();
  uint32_t f = 0;
  const size_t step = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * step < n; i += 4 * step) {
    const uint4 a = p[i], b = p[i + step], c = p[i + 2 * step], d = p[i + 3 * step];
    f ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += step) f ^= p[i].x;
  if (f == 0x12345678u) Y[0] = 1.f;
}

// Host side.
float half_to_float(uint16_t h) {
  __half x;
  std::memcpy(&x, &h, 2);
  return __half2float(x);
}

template <class Launch>
double time_graph(Launch&& launch_all, cudaStream_t s, int launches) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  EMBER_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  launch_all();
  EMBER_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  EMBER_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 3; ++i) EMBER_CUDA_CHECK(cudaGraphLaunch(ge, s));
  cudaEvent_t e0, e1;
  EMBER_CUDA_CHECK(cudaEventCreate(&e0));
  EMBER_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> t;
  for (int i = 0; i < 11; ++i) {
    EMBER_CUDA_CHECK(cudaEventRecord(e0, s));
    EMBER_CUDA_CHECK(cudaGraphLaunch(ge, s));
    EMBER_CUDA_CHECK(cudaEventRecord(e1, s));
    EMBER_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(1e3 * ms / launches);
  }
  std::sort(t.begin(), t.end());
  EMBER_CUDA_CHECK(cudaGraphExecDestroy(ge));
  EMBER_CUDA_CHECK(cudaGraphDestroy(g));
  return t[t.size() / 2];
}

}  // namespace

int run(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 14336;
  const int k = argc > 2 ? std::atoi(argv[2]) : 4096;
  if (rows <= 0 || k <= 0 || k % 256 != 0) {
    std::fprintf(stderr, "usage: ember_bench_q4k_layouts [rows] [k, a multiple of 256]\n");
    return 1;
  }
  const int nsb = k / 256;
  const size_t stride = size_t(nsb) * kBlockBytes, bytes = stride * rows;
  const int copies = int(std::max<size_t>(2, (400u << 20) / bytes));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255), code(-127, 127);
  std::uniform_real_distribution<float> scale(1e-3f, 1e-2f);

  std::vector<uint8_t> file(bytes);
  for (size_t b = 0; b < bytes / kBlockBytes; ++b) {
    uint8_t* blk = file.data() + b * kBlockBytes;
    const __half d = __float2half(scale(rng)), dmin = __float2half(scale(rng));
    std::memcpy(blk, &d, 2);
    std::memcpy(blk + 2, &dmin, 2);
    for (int i = 4; i < kBlockBytes; ++i) blk[i] = uint8_t(byte(rng));
  }
  // The device layout as the backend makes it, then the coalesced one from it.
  std::vector<uint8_t> device(bytes), coal(bytes);
  {
    uint8_t* tmp;
    EMBER_CUDA_CHECK(cudaMalloc(&tmp, bytes));
    EMBER_CUDA_CHECK(cudaMemcpy(tmp, file.data(), bytes, cudaMemcpyHostToDevice));
    ember::cuda::to_device_layout(ember::GgmlType::Q4_K, tmp, bytes, k, nullptr);
    EMBER_CUDA_CHECK(cudaMemcpy(device.data(), tmp, bytes, cudaMemcpyDeviceToHost));
    EMBER_CUDA_CHECK(cudaFree(tmp));
  }
  for (int r = 0; r < rows; ++r) {
    const uint8_t* src = device.data() + r * stride;
    uint8_t* dst_row = coal.data() + r * stride;
    for (int sb = 0; sb < nsb; ++sb) std::memcpy(dst_row + 16 * sb, src + sb * kBlockBytes, 16);
    const int pieces = 4 * nsb;
    for (int p = 0; p < pieces; ++p) {
      const uint8_t* q = src + (p >> 2) * kBlockBytes + 16 + 32 * (p & 3);
      const int g0 = p & ~31, in_group = std::min(32, pieces - g0);
      uint8_t* dst = dst_row + 16 * nsb + 32 * g0;
      std::memcpy(dst + 16 * (p & 31), q, 16);
      std::memcpy(dst + 16 * in_group + 16 * (p & 31), q + 16, 16);
    }
  }
  // Activations: codes, a scale per 256, sums per 16.
  std::vector<int8_t> aq(k);
  std::vector<float> ad(nsb);
  std::vector<int32_t> as(k / 16, 0);
  for (int i = 0; i < k; ++i) aq[i] = int8_t(code(rng)), as[i / 16] += aq[i];
  for (auto& v : ad) v = scale(rng);
  std::vector<double> ref(rows, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int sb = 0; sb < nsb; ++sb) {
      const uint8_t* blk = file.data() + r * stride + sb * kBlockBytes;
      uint16_t dh, mh;
      std::memcpy(&dh, blk, 2);
      std::memcpy(&mh, blk + 2, 2);
      for (int j = 0; j < 8; ++j) {
        uint8_t scale_j, min_j;
        ember::quant::k4_scale_min(j, blk + 4, scale_j, min_j);
        const double sc = half_to_float(dh) * scale_j, mn = half_to_float(mh) * min_j;
        for (int l = 0; l < 32; ++l) {
          const int q = (blk[16 + 32 * (j / 2) + l] >> (4 * (j & 1))) & 0xF;
          ref[r] += (sc * q - mn) * double(ad[sb]) * aq[sb * 256 + 32 * j + l];
        }
      }
    }

  uint8_t* dW[3];
  for (int l = 0; l < 3; ++l) EMBER_CUDA_CHECK(cudaMalloc(&dW[l], bytes * copies));
  for (int c = 0; c < copies; ++c) {
    EMBER_CUDA_CHECK(cudaMemcpy(dW[0] + c * bytes, file.data(), bytes, cudaMemcpyHostToDevice));
    EMBER_CUDA_CHECK(cudaMemcpy(dW[1] + c * bytes, device.data(), bytes, cudaMemcpyHostToDevice));
    EMBER_CUDA_CHECK(cudaMemcpy(dW[2] + c * bytes, coal.data(), bytes, cudaMemcpyHostToDevice));
  }
  int8_t* dq;
  float *dd, *dY;
  int32_t* ds;
  EMBER_CUDA_CHECK(cudaMalloc(&dq, k));
  EMBER_CUDA_CHECK(cudaMalloc(&dd, nsb * 4));
  EMBER_CUDA_CHECK(cudaMalloc(&ds, k / 16 * 4));
  EMBER_CUDA_CHECK(cudaMalloc(&dY, rows * 4));
  EMBER_CUDA_CHECK(cudaMemcpy(dq, aq.data(), k, cudaMemcpyHostToDevice));
  EMBER_CUDA_CHECK(cudaMemcpy(dd, ad.data(), nsb * 4, cudaMemcpyHostToDevice));
  EMBER_CUDA_CHECK(cudaMemcpy(ds, as.data(), k / 16 * 4, cudaMemcpyHostToDevice));
  const Acts x{dq, dd, ds};
  cudaStream_t s;
  EMBER_CUDA_CHECK(cudaStreamCreate(&s));
  const int launches = 4 * copies;

  std::vector<float> base;
  std::printf("rows %d k %d: %.1f MB per matrix, %d copies; times are medians of 11 graphs of %d launches\n", rows, k,
              bytes / 1e6, copies, launches);
  auto measure = [&]<Layout L, bool MaskedHigh, int W, int R, int U, bool ReadOnly>(const char* name) {
    const unsigned grid = unsigned((rows + W * R - 1) / (W * R));
    auto one = [&](int c) {
      ember::cuda::launch(product<L, MaskedHigh, W, R, U, ReadOnly>, grid, W * 32, 0, s, dW[int(L)] + size_t(c) * bytes, stride, rows,
                 nsb, x, dY);
    };
    EMBER_CUDA_CHECK(cudaMemset(dY, 0xFF, rows * 4));
    one(0);
    EMBER_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> y(rows);
    EMBER_CUDA_CHECK(cudaMemcpy(y.data(), dY, rows * 4, cudaMemcpyDeviceToHost));
    const double us = time_graph([&] { for (int i = 0; i < launches; ++i) one(i % copies); }, s, launches);
    cudaFuncAttributes fa;
    EMBER_CUDA_CHECK(cudaFuncGetAttributes(&fa, product<L, MaskedHigh, W, R, U, ReadOnly>));
    int per_sm = 0;
    EMBER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, product<L, MaskedHigh, W, R, U, ReadOnly>, W * 32, 0));
    char check[96] = "";
    if (!ReadOnly) {
      double num = 0, den = 0;
      for (int r = 0; r < rows; ++r) num += (y[r] - ref[r]) * (y[r] - ref[r]), den += ref[r] * ref[r];
      bool same = true;
      if (base.empty()) base = y;
      else same = std::memcmp(base.data(), y.data(), rows * 4) == 0;
      std::snprintf(check, sizeof check, "rel err %.1e%s", std::sqrt(num / den), same ? ", bits of file-layout" : ", BITS DIFFER");
    }
    std::printf("%-44s %7.2f us %7.0f GB/s  %3d regs %2d warps/SM  %s\n", name, us, bytes / us / 1e3, fa.numRegs,
                per_sm * W, check);
  };
  measure.operator()<Layout::File, false, 4, 2, 1, false>("file layout W4 R2 U1 (the former kernel)");
  measure.operator()<Layout::Device, false, 4, 2, 1, false>("device layout W4 R2 U1 (the backend's kernel)");
  measure.operator()<Layout::Device, true, 4, 2, 1, false>("device layout, masked dp4a");
  measure.operator()<Layout::Device, false, 4, 4, 1, false>("device layout W4 R4 U1");
  measure.operator()<Layout::Device, false, 4, 2, 2, false>("device layout W4 R2 U2");
  measure.operator()<Layout::Coalesced, false, 4, 2, 1, false>("coalesced W4 R2 U1");
  measure.operator()<Layout::Coalesced, false, 4, 4, 1, false>("coalesced W4 R4 U1");
  measure.operator()<Layout::Coalesced, false, 4, 2, 2, false>("coalesced W4 R2 U2");
  measure.operator()<Layout::File, false, 4, 2, 1, true>("file layout, loads only");
  measure.operator()<Layout::Coalesced, false, 4, 2, 1, true>("coalesced, loads only W4 R2 U1");
  measure.operator()<Layout::Coalesced, false, 4, 4, 2, true>("coalesced, loads only W4 R4 U2");
  {
    const size_t n = bytes / 16;
    int sms = 0;
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    auto one = [&](int c) {
      ember::cuda::launch(stream_read, unsigned(sms * 8), 256u, 0, s, reinterpret_cast<const uint4*>(dW[2] + size_t(c) * bytes), n,
                 dY);
    };
    const double us = time_graph([&] { for (int i = 0; i < launches; ++i) one(i % copies); }, s, launches);
    std::printf("%-44s %7.2f us %7.0f GB/s\n", "grid-stride read of the same bytes", us, bytes / us / 1e3);
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
