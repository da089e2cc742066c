// The CUDA products against the CPU reference on fresh random data: every
// format the GPU decodes, shapes that are not multiples of the kernels' tiles,
// outputs poisoned before each run. Bound: ||out - ref|| / ||ref|| <= 1e-5
// (both sides multiply the same decoded weights in float; only the order of
// the sums differs).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/cpu/moe_routing.h"
#include "backend/cuda/argmax.h"
#include "backend/cuda/sampling.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_matrix.h"
#include "cuda_test_buffers.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/iq_tables_device.h"
#include "backend/cuda/moe.h"
#include "engine/backend.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "util/error.h"
#include "util/fp16.h"

namespace ember::cuda {
namespace {

using test::download;
using test::upload;
using test::upload_in_device_layout;
using test::zeroed_counter;

// The IQ codebooks in device memory, as the backend uploads them.
struct Tables {
  DeviceIqTables d = upload_iq_tables();
  IqTables t = d.tables;
};

std::vector<float> random_floats(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = nd(rng);
  return v;
}

// A random matrix quantised to `type`, with its decoded values for the reference.
struct HostMatrix {
  GgmlType type;
  int64_t rows, k;
  size_t stride;
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;
};

HostMatrix random_matrix(GgmlType type, int64_t rows, int64_t k, std::mt19937& rng) {
  HostMatrix m{type, rows, k, row_bytes(type, k), {}, {}};
  m.bytes.resize(m.stride * size_t(rows));
  m.decoded.resize(size_t(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row = random_floats(k, rng);
    quant::quantize_row(type, row.data(), m.bytes.data() + size_t(r) * m.stride, k);
    quant::dequantize_row(type, m.bytes.data() + size_t(r) * m.stride, m.decoded.data() + r * k, k);
  }
  return m;
}

// Row r of m dotted with x (k floats), in float64: the reference every product is held to.
double reference_dot(const HostMatrix& m, int64_t r, const float* x) {
  double s = 0;
  for (int64_t j = 0; j < m.k; ++j) s += double(m.decoded[size_t(r * m.k + j)]) * x[j];
  return s;
}

double rel_error(const std::vector<float>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;  // a poisoned (never written) element lands here
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

// Checks n tokens' products y (rows apart by ldy, poisoned with NaN before the
// run) against m times the activation rows x: the error bound, and the gap
// between output rows left untouched.
void expect_products(const HostMatrix& m, const std::vector<float>& y, int64_t ldy, const float* x, int64_t n,
                     const std::string& what, double bound = 1e-5) {
  std::vector<float> got;
  std::vector<double> ref;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < m.rows; ++r) {
      ref.push_back(reference_dot(m, r, x + t * m.k));
      got.push_back(y[size_t(t * ldy + r)]);
    }
  EXPECT_LE(rel_error(got, ref), bound) << what;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = m.rows; r < ldy; ++r) EXPECT_TRUE(std::isnan(y[size_t(t * ldy + r)])) << what << ": wrote past the row";
}

std::vector<GgmlType> gpu_formats() {
  std::vector<GgmlType> v;
  for (uint32_t i = 0; i <= 30; ++i) {
    const GgmlType t = GgmlType(i);
    if (type_info(t).known && quant::can_quantize(t) && device_can_decode(t)) v.push_back(t);
  }
  return v;
}

// The routing part of a MoE model's descriptor.
ModelDesc routing_desc(int n_experts, int k, Routing routing, bool norm_topk) {
  ModelDesc d;
  d.n_experts = n_experts;
  d.n_experts_used = k;
  d.routing = routing;
  d.norm_topk = norm_topk;
  return d;
}

// The formats with an integer product (gemv_int8.cu, gemv_int8_mma.cu).
constexpr GgmlType kIntegerProductFormats[] = {GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,   GgmlType::Q8_0,
                                               GgmlType::Q4_0,   GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::IQ3_XXS,
                                               GgmlType::IQ3_S,  GgmlType::IQ2_S,  GgmlType::Q3_K};

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  }
};

// Every format's float product (1 to 13 tokens) against the float64 product of
// its decoded weights.
TEST_F(CudaKernels, GemvEveryFormatMatchesTheReference) {
  std::mt19937 rng(20261202);
  Tables tab;
  const auto formats = gpu_formats();
  ASSERT_GE(formats.size(), 20u);
  for (GgmlType type : formats) {
    const int64_t rows = 37, k = 768;  // 3 super-blocks, 24 chunks: lanes 24..31 idle
    const HostMatrix m = random_matrix(type, rows, k, rng);
    DeviceBuffer w = upload_in_device_layout(type, m.bytes, k);
    DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0};
    for (int64_t n : {1, 2, 3, 8, 13}) {
      const std::vector<float> x = random_floats(n * k, rng);
      DeviceBuffer dx = upload(x);
      const int64_t ldy = rows + 3;  // a gap between output rows must stay untouched
      DeviceBuffer dy(size_t(n * ldy) * 4);
      EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));  // NaN everywhere
      gemv(dm, tab.t, dx.get<float>(), k, n, dy.get<float>(), ldy, nullptr);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      const auto y = download<float>(dy, size_t(n * ldy));
      // BF16 weights meet activations rounded to bfloat16, as on the CPU.
      std::vector<float> xr = x;
      if (type == GgmlType::BF16)
        for (float& v : xr) v = bf16_to_f32(f32_to_bf16(v));
      expect_products(m, y, ldy, xr.data(), n, std::string(type_name(type)) + " n=" + std::to_string(n));
    }
  }
}

// A token's float products (gemv_float, the CUDA cores) are the same bits alone
// and in any batch: the engine's batch invariance rests on it. (F16's steps of
// two or more tokens take the tensor cores, whose own test holds them to
// this: FloatTensorCoreProductsMatchTheReference.)
TEST_F(CudaKernels, GemvResultOfATokenDoesNotDependOnTheBatch) {
  std::mt19937 rng(7);
  Tables tab;
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::F16}) {
    const int64_t rows = 64, k = 512;
    const HostMatrix m = random_matrix(type, rows, k, rng);
    DeviceBuffer w = upload_in_device_layout(type, m.bytes, k);
    DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0};
    DeviceBuffer dx = upload(random_floats(19 * k, rng));
    std::vector<std::vector<float>> results;
    for (int64_t n : {1, 2, 4, 5, 19}) {
      DeviceBuffer dy(size_t(n * rows) * 4);
      gemv_float(dm, tab.t, dx.get<float>(), k, n, dy.get<float>(), rows, nullptr);
      auto y = download<float>(dy, size_t(rows));  // token 0's row
      results.push_back(y);
    }
    for (size_t i = 1; i < results.size(); ++i)
      EXPECT_EQ(0, std::memcmp(results[0].data(), results[i].data(), size_t(rows) * 4)) << type_name(type);
  }
}

// E random expert matrices of one format, packed one after another on the device as the backend holds them.
struct RandomExperts {
  std::vector<HostMatrix> host;
  DeviceBuffer w;
  DeviceMatrix dm;
  RandomExperts(GgmlType type, int64_t E, int64_t rows, int64_t k, std::mt19937& rng) {
    std::vector<uint8_t> packed;
    for (int64_t e = 0; e < E; ++e) {
      host.push_back(random_matrix(type, rows, k, rng));
      packed.insert(packed.end(), host.back().bytes.begin(), host.back().bytes.end());
    }
    w = upload_in_device_layout(type, packed, k);
    dm = DeviceMatrix{type, w.get<uint8_t>(), k, rows, host[0].stride, host[0].bytes.size()};
  }
};

// A random float router of E rows of k on the device (routers are kept unquantised).
struct RandomRouter {
  HostMatrix host;
  DeviceBuffer w;
  DeviceMatrix dm;
  RandomRouter(GgmlType type, int64_t E, int64_t k, std::mt19937& rng)
      : host(random_matrix(type, E, k, rng)), w(upload(host.bytes)), dm{type, w.get<uint8_t>(), k, E, host.stride, 0} {}
};

TEST_F(CudaKernels, ExpertProductsReadTheChosenExpert) {
  std::mt19937 rng(11);
  Tables tab;
  const int64_t E = 5, rows = 45, k = 256, K = 2, n_tok = 3;
  const RandomExperts ex(GgmlType::Q4_K, E, rows, k, rng);
  const std::vector<HostMatrix>& experts = ex.host;
  const DeviceMatrix& dm = ex.dm;
  const std::vector<int32_t> ids = {4, 0, 2, 4, 1, 3};  // token t's experts: ids[2t], ids[2t+1]
  const std::vector<float> x = random_floats(n_tok * k, rng);
  DeviceBuffer dids = upload(ids), dx = upload(x), dy(size_t(n_tok * K * rows) * 4);
  EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
  gemv_experts(dm, tab.t, dids.get<int32_t>(), dx.get<float>(), k, int(K), n_tok * K, dy.get<float>(), rows, nullptr);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  const auto y = download<float>(dy, size_t(n_tok * K * rows));
  std::vector<double> ref;
  for (int64_t i = 0; i < n_tok * K; ++i)
    for (int64_t r = 0; r < rows; ++r) ref.push_back(reference_dot(experts[size_t(ids[size_t(i)])], r, x.data() + (i / K) * k));
  EXPECT_LE(rel_error(y, ref), 1e-5);
}

// The one-launch router of a decoding token (route_one_token) against the
// router product and route() in two launches (the counter its blocks finish
// on left zeroed): the same logits, ids and weights
// bit for bit, for every routing, float router formats and expert counts that
// do not fill its warps or take several rows a warp; run twice. The two-launch
// choices are the CPU's routing of the same logits (cpu::route_token): the same
// experts in the same order, weights within 1e-6 (the GPU's expf is not the
// host's). Then two one-launch routings are queued before one wait, each with
// its own input.
TEST_F(CudaKernels, OneLaunchRouterGivesTheTwoLaunchBits) {
  std::mt19937 rng(19);
  Tables tab;
  DeviceBuffer arrivals = zeroed_counter();
  // Rows whose weights a lane holds through the wait in two chunks (2,048; 1,056: lane 0 alone takes a
  // second), four (4,096), or loads after it (5,120).
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
    for (const auto& [E, K, k] : {std::tuple{128, 8, int64_t(2048)}, std::tuple{61, 4, int64_t(4096)},
                                  std::tuple{256, 8, int64_t(5120)}, std::tuple{160, 6, int64_t(1056)},
                                  std::tuple{176, 6, int64_t(2048)}, std::tuple{300, 8, int64_t(1024)},
                                  std::tuple{512, 32, int64_t(2048)}})
      for (Routing routing : {Routing::SoftmaxTopK, Routing::SigmoidTopK, Routing::TopKSoftmax})
        for (bool norm : {false, true}) {
          const ModelDesc d = routing_desc(E, K, routing, norm);
          const RandomRouter router(type, E, k, rng);
          const DeviceMatrix& dm = router.dm;
          std::vector<float> x = random_floats(k, rng);
          for (float& v : x) v /= 64.f;  // logits of a few units: sigmoid and softmax scores do not saturate into ties
          DeviceBuffer dx = upload(x), dlog(size_t(E) * 4), dids(size_t(K) * 4), dw(size_t(K) * 4);
          auto fetch = [&] {
            EMBER_CUDA_CHECK(cudaDeviceSynchronize());
            return std::tuple{download<float>(dlog, size_t(E)), download<int32_t>(dids, size_t(K)), download<float>(dw, size_t(K))};
          };
          auto poison = [&] {
            for (DeviceBuffer* b : {&dlog, &dids, &dw}) EMBER_CUDA_CHECK(cudaMemset(b->get(), 0xFF, b->bytes()));
          };
          poison();
          gemv_float(dm, tab.t, dx.get<float>(), k, 1, dlog.get<float>(), E, nullptr);
          route(d, dlog.get<float>(), 1, dids.get<int32_t>(), dw.get<float>(), nullptr);
          const auto [logits2, ids2, w2] = fetch();
          const std::string what = std::string(type_name(type)) + " E=" + std::to_string(E) + " k=" + std::to_string(k) + " routing " +
                                   std::to_string(int(routing)) + (norm ? " norm" : "");
          {
            std::vector<int32_t> host_ids(static_cast<size_t>(K));
            std::vector<float> host_w(static_cast<size_t>(K)), scores(static_cast<size_t>(E));
            cpu::route_token(d, logits2.data(), host_ids.data(), host_w.data(), scores.data());
            ASSERT_EQ(ids2, host_ids) << what;
            for (int j = 0; j < K; ++j) EXPECT_NEAR(w2[size_t(j)], host_w[size_t(j)], 1e-6f * std::fabs(host_w[size_t(j)])) << what;
          }
          for (int run = 0; run < 2; ++run) {
            poison();
            route_one_token(d, dm, tab.t, dx.get<float>(), dlog.get<float>(), dids.get<int32_t>(), dw.get<float>(),
                            arrivals.get<unsigned>(), nullptr);
            const auto [logits1, ids1, w1] = fetch();
            ASSERT_EQ(download<uint32_t>(arrivals, 1)[0], 0u) << what << ": the launch leaves its counter zeroed";
            ASSERT_EQ(0, std::memcmp(logits1.data(), logits2.data(), size_t(E) * 4)) << what;
            ASSERT_EQ(ids1, ids2) << what;
            ASSERT_EQ(0, std::memcmp(w1.data(), w2.data(), size_t(K) * 4)) << what;
          }
          {  // two launches in a row, no wait between them: each routes its own input
            std::vector<float> x2 = random_floats(k, rng);
            for (float& v : x2) v /= 64.f;
            DeviceBuffer dx2 = upload(x2), dlog2(size_t(E) * 4), dids2(size_t(K) * 4), dw2(size_t(K) * 4);
            poison();
            route_one_token(d, dm, tab.t, dx2.get<float>(), dlog2.get<float>(), dids2.get<int32_t>(), dw2.get<float>(),
                            arrivals.get<unsigned>(), nullptr);
            route_one_token(d, dm, tab.t, dx.get<float>(), dlog.get<float>(), dids.get<int32_t>(), dw.get<float>(),
                            arrivals.get<unsigned>(), nullptr);
            const auto [logits1, ids1, w1] = fetch();
            ASSERT_EQ(0, std::memcmp(logits1.data(), logits2.data(), size_t(E) * 4)) << what << " queued";
            ASSERT_EQ(ids1, ids2) << what << " queued";
            ASSERT_EQ(0, std::memcmp(w1.data(), w2.data(), size_t(K) * 4)) << what << " queued";
            poison();
            gemv(dm, tab.t, dx2.get<float>(), k, 1, dlog.get<float>(), E, nullptr);
            route(d, dlog.get<float>(), 1, dids.get<int32_t>(), dw.get<float>(), nullptr);
            const auto [logits3, ids3, w3] = fetch();
            EXPECT_EQ(0, std::memcmp(download<float>(dlog2, size_t(E)).data(), logits3.data(), size_t(E) * 4)) << what << " queued";
            EXPECT_EQ(download<int32_t>(dids2, size_t(K)), ids3) << what << " queued";
            EXPECT_EQ(0, std::memcmp(download<float>(dw2, size_t(K)).data(), w3.data(), size_t(K) * 4)) << what << " queued";
          }
        }
}

// Equal scores (a router whose rows come in identical pairs, and an all-zero
// input) are chosen in index order, as the CPU picks them, by both routings.
TEST_F(CudaKernels, RouterTiesGoToTheLowerIndex) {
  std::mt19937 rng(23);
  Tables tab;
  const int E = 128, K = 8;
  const int64_t k = 2048;
  HostMatrix m = random_matrix(GgmlType::F32, E, k, rng);
  for (int e = 1; e < E; e += 2)
    std::memcpy(m.bytes.data() + size_t(e) * m.stride, m.bytes.data() + size_t(e - 1) * m.stride, m.stride);
  DeviceBuffer w = upload(m.bytes);
  const DeviceMatrix dm{GgmlType::F32, w.get<uint8_t>(), k, E, m.stride, 0};
  DeviceBuffer arrivals = zeroed_counter();
  for (bool zero_input : {false, true})
    for (Routing routing : {Routing::SoftmaxTopK, Routing::SigmoidTopK, Routing::TopKSoftmax}) {
      const ModelDesc d = routing_desc(E, K, routing, true);
      std::vector<float> x = random_floats(k, rng);
      for (float& v : x) v = zero_input ? 0.f : v / 64.f;
      DeviceBuffer dx = upload(x), dlog(size_t(E) * 4), dids(size_t(K) * 4), dw(size_t(K) * 4);
      for (bool one_launch : {false, true}) {
        EMBER_CUDA_CHECK(cudaMemset(dids.get(), 0xFF, dids.bytes()));
        if (one_launch) {
          route_one_token(d, dm, tab.t, dx.get<float>(), dlog.get<float>(), dids.get<int32_t>(), dw.get<float>(),
                          arrivals.get<unsigned>(), nullptr);
        } else {
          gemv_float(dm, tab.t, dx.get<float>(), k, 1, dlog.get<float>(), E, nullptr);
          route(d, dlog.get<float>(), 1, dids.get<int32_t>(), dw.get<float>(), nullptr);
        }
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto logits = download<float>(dlog, size_t(E));
        const auto ids = download<int32_t>(dids, size_t(K));
        for (int e = 1; e < E; e += 2) ASSERT_EQ(logits[size_t(e)], logits[size_t(e - 1)]);
        std::vector<int32_t> host_ids(static_cast<size_t>(K));
        std::vector<float> host_w(static_cast<size_t>(K)), scores(static_cast<size_t>(E));
        cpu::route_token(d, logits.data(), host_ids.data(), host_w.data(), scores.data());
        EXPECT_EQ(ids, host_ids) << "routing " << int(routing) << (one_launch ? " one launch" : " two launches")
                                 << (zero_input ? " zero input" : "");
        if (zero_input) {
          EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
        }
      }
    }
}

// The router's own norm (norm_and_route_one_token) gives the bits of the
// kernels it replaces: rmsnorm_int8_acts' row and rounding (the bits of
// rmsnorm_rows and its rounding, FusedNormAndGateRoundAsTheUnfusedKernels),
// then the one-launch router over that row. Rows of one 2,048-element pass,
// of part of one, of two and of a pass and a part; experts in one block (which
// then writes both passes) or in many; with the rounding, and without it
// (the int8 rows then untouched).
TEST_F(CudaKernels, RouterNormGivesTheNormKernelsBits) {
  std::mt19937 rng(29);
  Tables tab;
  DeviceBuffer arrivals = zeroed_counter();
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
    for (const auto& [E, K, k] : {std::tuple{128, 8, int64_t(2048)}, std::tuple{176, 6, int64_t(2048)},
                                  std::tuple{8, 2, int64_t(1280)}, std::tuple{300, 8, int64_t(4096)},
                                  std::tuple{64, 4, int64_t(3328)}, std::tuple{5, 2, int64_t(4096)}}) {
      const ModelDesc d = routing_desc(E, K, Routing::SoftmaxTopK, true);
      const RandomRouter router(type, E, k, rng);
      const DeviceMatrix& dm = router.dm;
      ASSERT_TRUE(norms_in_router(dm));
      const std::vector<float> x = random_floats(k, rng), g = random_floats(k, rng);
      DeviceBuffer dx = upload(x), dg = upload(g);
      DeviceBuffer y1(size_t(k) * 4), y2(size_t(k) * 4), q1(int8_acts_bytes(1, k)), q2(int8_acts_bytes(1, k)),
          l1(size_t(E) * 4), l2(size_t(E) * 4), i1(size_t(K) * 4), i2(size_t(K) * 4), w1(size_t(K) * 4), w2(size_t(K) * 4);
      for (DeviceBuffer* b : {&q1, &q2}) EMBER_CUDA_CHECK(cudaMemset(b->get(), 0xFF, b->bytes()));
      const float eps = 1e-6f;
      rmsnorm_int8_acts(dx.get<float>(), nullptr, 1, dg.get<float>(), eps, k, y1.get<float>(), q1.get(), nullptr);
      route_one_token(d, dm, tab.t, y1.get<float>(), l1.get<float>(), i1.get<int32_t>(), w1.get<float>(),
                      arrivals.get<unsigned>(), nullptr);
      for (bool rounded : {true, false}) {
        const std::string what = std::string(type_name(type)) + " E=" + std::to_string(E) + " k=" + std::to_string(k) +
                                 (rounded ? " rounded" : "");
        for (DeviceBuffer* b : {&y2, &q2, &l2, &i2, &w2}) EMBER_CUDA_CHECK(cudaMemset(b->get(), 0xFF, b->bytes()));
        RouterNorm rn;
        rn.x = dx.get<float>(); rn.w = dg.get<float>(); rn.eps = eps; rn.y = y2.get<float>();
        if (rounded) rn.acts = int8_acts_view(1, k, q2.get());
        norm_and_route_one_token(d, rn, dm, tab.t, l2.get<float>(), i2.get<int32_t>(), w2.get<float>(),
                                 arrivals.get<unsigned>(), nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        EXPECT_EQ(download<uint32_t>(arrivals, 1)[0], 0u) << what;
        EXPECT_EQ(download<float>(y1, size_t(k)), download<float>(y2, size_t(k))) << what;
        const std::vector<uint8_t> untouched(q2.bytes(), 0xFF);
        EXPECT_TRUE(download<uint8_t>(q2, q2.bytes()) == (rounded ? download<uint8_t>(q1, q1.bytes()) : untouched))
            << what << ": int8 rows";
        const auto logits1 = download<float>(l1, size_t(E)), logits2 = download<float>(l2, size_t(E));
        EXPECT_EQ(0, std::memcmp(logits1.data(), logits2.data(), size_t(E) * 4)) << what;
        EXPECT_EQ(download<int32_t>(i1, size_t(K)), download<int32_t>(i2, size_t(K))) << what;
        const auto wt1 = download<float>(w1, size_t(K)), wt2 = download<float>(w2, size_t(K));
        EXPECT_EQ(0, std::memcmp(wt1.data(), wt2.data(), size_t(K) * 4)) << what;
      }
    }
}

// route() of a step of many tokens (prefill, batched decode: one block per
// token) routes every row as the CPU routes it: the same experts in the same
// order, weights within 1e-6 (the GPU's expf is not the host's); each row's
// choices the bits of that row routed alone.
TEST_F(CudaKernels, RoutingOfManyTokensIsEachTokensOwn) {
  std::mt19937 rng(37);
  for (const auto& [E, K, n_tok] : {std::tuple{128, 8, int64_t(37)}, std::tuple{176, 6, int64_t(5)},
                                    std::tuple{61, 4, int64_t(70)}, std::tuple{512, 32, int64_t(3)}})
    for (Routing routing : {Routing::SoftmaxTopK, Routing::SigmoidTopK, Routing::TopKSoftmax})
      for (bool norm : {false, true}) {
        const ModelDesc d = routing_desc(E, K, routing, norm);
        const std::string what = "E=" + std::to_string(E) + " K=" + std::to_string(K) + " tokens " +
                                 std::to_string(n_tok) + " routing " + std::to_string(int(routing)) + (norm ? " norm" : "");
        std::vector<float> logits = random_floats(n_tok * E, rng);
        for (float& v : logits) v *= 2.f;  // a few units apart: distinct choices, no saturated ties
        const size_t nk = size_t(n_tok) * size_t(K);
        DeviceBuffer dlog = upload(logits), dids(nk * 4), dw(nk * 4);
        for (DeviceBuffer* b : {&dids, &dw}) EMBER_CUDA_CHECK(cudaMemset(b->get(), 0xFF, b->bytes()));
        route(d, dlog.get<float>(), n_tok, dids.get<int32_t>(), dw.get<float>(), nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto ids = download<int32_t>(dids, nk);
        const auto w = download<float>(dw, nk);
        std::vector<int32_t> host_ids(static_cast<size_t>(K));
        std::vector<float> host_w(static_cast<size_t>(K)), scores(static_cast<size_t>(E));
        for (int64_t t = 0; t < n_tok; ++t) {
          cpu::route_token(d, logits.data() + t * E, host_ids.data(), host_w.data(), scores.data());
          const size_t at = size_t(t) * size_t(K);
          ASSERT_EQ(std::vector<int32_t>(ids.begin() + long(at), ids.begin() + long(at + size_t(K))), host_ids)
              << what << " token " << t;
          for (int j = 0; j < K; ++j)
            EXPECT_NEAR(w[at + size_t(j)], host_w[size_t(j)], 1e-6f * std::fabs(host_w[size_t(j)])) << what << " token " << t;
        }
        // The last token routed alone: the same bits as in the step.
        DeviceBuffer one_ids(size_t(K) * 4), one_w(size_t(K) * 4);
        route(d, dlog.get<float>() + (n_tok - 1) * E, 1, one_ids.get<int32_t>(), one_w.get<float>(), nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const size_t last = nk - size_t(K);
        EXPECT_EQ(download<int32_t>(one_ids, size_t(K)), std::vector<int32_t>(ids.begin() + long(last), ids.end())) << what;
        EXPECT_EQ(0, std::memcmp(download<float>(one_w, size_t(K)).data(), w.data() + last, size_t(K) * 4)) << what;
      }
}

// The CPU's int8 rounding of activation rows (Q8_K blocks), and their values as floats.
struct HostInt8Acts {
  std::vector<quant::BlockQ8_K> blocks;
  std::vector<float> values;
};
HostInt8Acts host_int8_acts(const std::vector<float>& x, int64_t n, int64_t k) {
  HostInt8Acts h;
  h.blocks.resize(size_t(n * k / 256));
  quant::quantize_row(GgmlType::Q8_K, x.data(), h.blocks.data(), n * k);
  for (const auto& b : h.blocks)
    for (int j = 0; j < 256; ++j) h.values.push_back(b.d * float(b.qs[j]));
  return h;
}

TEST_F(CudaKernels, Int8ActivationsAreTheCpuRoundingBitForBit) {
  std::mt19937 rng(5);
  const int64_t n = 5, k = 768, ldx = k + 64;
  std::vector<float> x = random_floats(n * ldx, rng);
  for (int64_t j = 0; j < 256; ++j) x[size_t(ldx + j)] = 0.f;  // a zero block: scale 0, codes 0
  x[7] = 1e-30f;                                                // a tiny amax beside ordinary values
  DeviceBuffer dx = upload(x), dq(int8_acts_bytes(n, k));
  EMBER_CUDA_CHECK(cudaMemset(dq.get(), 0xAB, dq.bytes()));
  const Int8Acts a = quantize_int8_acts(dx.get<float>(), ldx, n, k, dq.get(), nullptr);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> packed;  // the rows without the gap, as the CPU rounds them
  for (int64_t t = 0; t < n; ++t) packed.insert(packed.end(), x.begin() + t * ldx, x.begin() + t * ldx + k);
  const HostInt8Acts ref = host_int8_acts(packed, n, k);
  std::vector<int8_t> q(size_t(n * k)), pairs(size_t(n * k));
  std::vector<float> d(size_t(n * k / 256));
  std::vector<int32_t> sums(size_t(n * k / 16));
  EMBER_CUDA_CHECK(cudaMemcpy(q.data(), a.q, q.size(), cudaMemcpyDeviceToHost));
  EMBER_CUDA_CHECK(cudaMemcpy(pairs.data(), a.pairs, pairs.size(), cudaMemcpyDeviceToHost));
  EMBER_CUDA_CHECK(cudaMemcpy(d.data(), a.d, d.size() * 4, cudaMemcpyDeviceToHost));
  EMBER_CUDA_CHECK(cudaMemcpy(sums.data(), a.sums, sums.size() * 4, cudaMemcpyDeviceToHost));
  for (size_t b = 0; b < ref.blocks.size(); ++b) {
    EXPECT_EQ(0, std::memcmp(&d[b], &ref.blocks[b].d, 4)) << "block " << b;
    EXPECT_EQ(0, std::memcmp(&q[256 * b], ref.blocks[b].qs, 256)) << "block " << b;
    for (int g = 0; g < 16; ++g) EXPECT_EQ(sums[16 * b + size_t(g)], ref.blocks[b].bsums[g]) << "block " << b;
    int differ = 0;  // the reordered copy holds every code once, where int8_acts.h says
    for (int e = 0; e < 256; ++e) differ += pairs[256 * b + size_t(pairs_position(e))] != ref.blocks[b].qs[e];
    EXPECT_EQ(differ, 0) << "block " << b;
  }
  std::vector<bool> hit(256, false);  // pairs_position is a permutation of the block
  for (int e = 0; e < 256; ++e) hit[size_t(pairs_position(e))] = true;
  EXPECT_EQ(std::count(hit.begin(), hit.end(), true), 256);
}

// Integer products against the float64 product of the same decoded weights and
// the CPU's rounded activations: only the order of the float sums differs.
TEST_F(CudaKernels, Int8ProductsMatchTheCpuRounding) {
  std::mt19937 rng(20261203);
  Tables tab;
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                        GgmlType::IQ2_S, GgmlType::Q3_K}) {
   ASSERT_TRUE(has_int8_product(type));
   // 3 super-blocks (Q4_K 12 pieces, Q6_K 24 per row: lanes idle), and a real FFN width.
   for (int64_t k : {768, 8192}) {
    const int64_t rows = 37;
    const HostMatrix m = random_matrix(type, rows, k, rng);
    DeviceBuffer w = upload_in_device_layout(type, m.bytes, k);
    DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0};
    for (int64_t n : {1, 2, 3, 8, 13, 17, 33, 64}) {
      const std::vector<float> x = random_floats(n * k, rng);
      const HostInt8Acts hx = host_int8_acts(x, n, k);
      DeviceBuffer dx = upload(x), dq(int8_acts_bytes(n, k));
      const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n, k, dq.get(), nullptr);
      {  // the rounding the products read is the CPU's, element for element
        std::vector<int8_t> q(size_t(n * k));
        EMBER_CUDA_CHECK(cudaMemcpy(q.data(), a.q, q.size(), cudaMemcpyDeviceToHost));
        int64_t differ = 0, first = -1;
        for (int64_t i = 0; i < n * k; ++i)
          if (q[size_t(i)] != hx.blocks[size_t(i / 256)].qs[i % 256] && differ++ == 0) first = i;
        EXPECT_EQ(differ, 0) << "codes rounded unlike the CPU, first at " << first << " n=" << n << " k=" << k;
      }
      const int64_t ldy = rows + 3;
      DeviceBuffer dy(size_t(n * ldy) * 4);
      EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
      gemv(dm, tab.t, dx.get<float>(), k, n, dy.get<float>(), ldy, nullptr, &a);  // takes the integer path
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      const auto y = download<float>(dy, size_t(n * ldy));
      expect_products(m, y, ldy, hx.values.data(), n, std::string(type_name(type)) + " int8 n=" + std::to_string(n));
    }
    // A token's bits do not depend on the batch (the tensor-core products):
    // every token of every size (one, two, four and eight tiles of 8 per
    // block, a partial last tile) against the same tokens in a step of 70.
    const std::vector<float> x = random_floats(70 * k, rng);
    DeviceBuffer dx = upload(x), dq(int8_acts_bytes(70, k)), dy(size_t(70 * rows) * 4);
    std::vector<float> all;
    for (int64_t n : {70, 1, 2, 4, 5, 12, 16, 19, 32, 40, 64}) {  // one token included: as EMBER_CUDA_BATCH_INVARIANT=1 runs it
      const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n, k, dq.get(), nullptr);
      const MatrixOut out{&dm, dy.get<float>(), rows};
      EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
      gemv_int8_mma_fused({&out, 1}, a, nullptr);
      const auto y = download<float>(dy, size_t(n * rows));
      if (all.empty()) all = y;
      EXPECT_EQ(0, std::memcmp(all.data(), y.data(), size_t(n * rows) * 4)) << type_name(type) << " n=" << n;
    }
    {  // the step of 70's second grid row of tiles (tokens 64..69), against those tokens alone
      const Int8Acts a = quantize_int8_acts(dx.get<float>() + 64 * k, k, 6, k, dq.get(), nullptr);
      const MatrixOut out{&dm, dy.get<float>(), rows};
      gemv_int8_mma_fused({&out, 1}, a, nullptr);
      const auto y = download<float>(dy, size_t(6 * rows));
      EXPECT_EQ(0, std::memcmp(all.data() + 64 * rows, y.data(), y.size() * 4)) << type_name(type) << " tokens 64..69";
    }
   }
  }
}

// BF16 and F16 products on the tensor cores (gemv_float_mma.cu) against the
// float64 product of the decoded weights and the activations as the CPU meets
// them (BF16: rounded to bfloat16; F16: as they are): alone, with add, rows
// and tokens that fill no tile, rows that are not whole 256-element chunks;
// and a token's bits in any batch.
TEST_F(CudaKernels, FloatTensorCoreProductsMatchTheReference) {
  std::mt19937 rng(20261206);
  Tables tab;
  for (GgmlType type : {GgmlType::BF16, GgmlType::F16}) {
    for (int64_t k : {768, 4096, 352}) {
      const int64_t rows = 37, ldy = rows + 3;
      const HostMatrix m = random_matrix(type, rows, k, rng);
      DeviceBuffer w = upload(m.bytes);
      const DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0};
      for (int64_t n : {2, 3, 8, 9, 16, 17, 33, 64, 70}) {
        ASSERT_TRUE(float_mma_serves(dm, n));
        std::vector<float> x = random_floats(n * k, rng);
        DeviceBuffer dx = upload(x), dy(size_t(n * ldy) * 4);
        EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));  // NaN everywhere: the gaps must stay so
        gemv(dm, tab.t, dx.get<float>(), k, n, dy.get<float>(), ldy, nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto y = download<float>(dy, size_t(n * ldy));
        if (type == GgmlType::BF16)
          for (float& v : x) v = bf16_to_f32(f32_to_bf16(v));
        const std::string what = std::string(type_name(type)) + " k=" + std::to_string(k) + " n=" + std::to_string(n);
        expect_products(m, y, ldy, x.data(), n, what);
        // With add: the products onto what Y held.
        const std::vector<float> base = random_floats(n * ldy, rng);
        DeviceBuffer dz = upload(base);
        gemv(dm, tab.t, dx.get<float>(), k, n, dz.get<float>(), ldy, nullptr, nullptr, true);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto z = download<float>(dz, size_t(n * ldy));
        double worst = 0;
        for (int64_t t = 0; t < n; ++t)
          for (int64_t r = 0; r < ldy; ++r) {
            const size_t i = size_t(t * ldy + r);
            const double want = r < rows ? double(base[i]) + double(y[i]) : double(base[i]);
            worst = std::max(worst, std::abs(double(z[i]) - want) / (1.0 + std::abs(want)));
          }
        EXPECT_LE(worst, 1e-6) << what << " with add";
        // Fused behind two other matrices (q/k/v): each output the bits of its own launch, nothing past its rows.
        const HostMatrix ma = random_matrix(type, 19, k, rng), mb = random_matrix(type, 50, k, rng);
        DeviceBuffer wa = upload(ma.bytes), wb = upload(mb.bytes);
        const DeviceMatrix da{type, wa.get<uint8_t>(), k, 19, ma.stride, 0}, db{type, wb.get<uint8_t>(), k, 50, mb.stride, 0};
        DeviceBuffer ya(size_t(n * 19) * 4), yb(size_t(n * 50) * 4), yf(size_t(n * ldy) * 4);
        for (DeviceBuffer* y : {&ya, &yb, &yf}) EMBER_CUDA_CHECK(cudaMemset(y->get(), 0xFF, y->bytes()));
        const MatrixOut outs[3] = {{&da, ya.get<float>(), 19}, {&db, yb.get<float>(), 50}, {&dm, yf.get<float>(), ldy}};
        gemv_float_mma_fused(outs, dx.get<float>(), k, n, nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto fused = download<float>(yf, size_t(n * ldy));
        EXPECT_EQ(0, std::memcmp(y.data(), fused.data(), fused.size() * 4)) << what << " fused";  // NaN gaps alike
        for (const auto& [hm, dmat, dout] : {std::tuple{&ma, &da, &ya}, std::tuple{&mb, &db, &yb}}) {
          DeviceBuffer alone(dout->bytes());
          EMBER_CUDA_CHECK(cudaMemset(alone.get(), 0xFF, alone.bytes()));
          gemv_float_mma(*dmat, dx.get<float>(), k, n, alone.get<float>(), hm->rows, nullptr);
          EMBER_CUDA_CHECK(cudaDeviceSynchronize());
          EXPECT_EQ(0, std::memcmp(download<float>(alone, size_t(n * hm->rows)).data(),
                                   download<float>(*dout, size_t(n * hm->rows)).data(), size_t(n * hm->rows) * 4))
              << what << " fused, matrix of " << hm->rows << " rows";
        }
      }
      // A token's bits do not depend on the batch: every size against a step of 70.
      const std::vector<float> x = random_floats(70 * k, rng);
      DeviceBuffer dx = upload(x), dy(size_t(70 * rows) * 4);
      std::vector<float> all;
      for (int64_t n : {70, 1, 2, 5, 8, 12, 16, 19, 32, 40, 64}) {  // one token: as EMBER_CUDA_BATCH_INVARIANT=1 runs it
        EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
        gemv_float_mma(dm, dx.get<float>(), k, n, dy.get<float>(), rows, nullptr);
        const auto y = download<float>(dy, size_t(n * rows));
        if (all.empty()) all = y;
        EXPECT_EQ(0, std::memcmp(all.data(), y.data(), size_t(n * rows) * 4)) << type_name(type) << " k=" << k << " n=" << n;
      }
      // Tokens at other places of their tiles: 64..69 first in a step, and 3..15 (each three places earlier than in the step of 70).
      for (const int64_t first : {64, 3}) {
        const int64_t count = first == 64 ? 6 : 13;
        gemv_float_mma(dm, dx.get<float>() + first * k, k, count, dy.get<float>(), rows, nullptr);
        const auto y = download<float>(dy, size_t(count * rows));
        EXPECT_EQ(0, std::memcmp(all.data() + first * rows, y.data(), y.size() * 4))
            << type_name(type) << " k=" << k << " tokens from " << first;
      }
    }
  }
}

// BF16 and F16 expert products on the tensor cores, grouped by expert and per
// item: the same bits for every item either way, each item the float64
// product of its expert's decoded rows and its activations (as the CPU meets
// them) within 1e-5; x_div K (gate and up read a token's row) and 1 (down).
TEST_F(CudaKernels, FloatExpertProductsGiveEachItemsBits) {
  std::mt19937 rng(23);
  const int E = 7, K = 3;
  for (GgmlType type : {GgmlType::BF16, GgmlType::F16}) {
    for (const int64_t k : {512, 352}) {
      const int64_t rows = 45, n_tok = 40, n_items = n_tok * K;
      std::vector<int32_t> ids;
      for (int64_t i = 0; i < n_items; ++i) ids.push_back(int32_t(rng() % 5 == 0 ? 6 : rng() % 4));  // 4, 5 never chosen
      const int64_t max_tiles = max_expert_tiles(n_items, E);
      DeviceBuffer dids = upload(ids), dorder(size_t(n_items) * 4), dtiles(size_t(3 * max_tiles) * 4);
      group_by_expert(dids.get<int32_t>(), n_items, E, dorder.get<int32_t>(), dtiles.get<int32_t>(), nullptr);
      std::vector<HostMatrix> experts;
      std::vector<uint8_t> packed;
      for (int e = 0; e < E; ++e) {
        experts.push_back(random_matrix(type, rows, k, rng));
        packed.insert(packed.end(), experts.back().bytes.begin(), experts.back().bytes.end());
      }
      DeviceBuffer w = upload(packed);
      const DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, experts[0].stride, experts[0].bytes.size()};
      ASSERT_TRUE(float_mma_experts_serve(dm));
      for (const int x_div : {K, 1}) {
        const int64_t n_x = n_items / x_div;
        std::vector<float> x = random_floats(n_x * k, rng);
        DeviceBuffer dx = upload(x), y1(size_t(n_items * rows) * 4), y2(size_t(n_items * rows) * 4);
        EMBER_CUDA_CHECK(cudaMemset(y1.get(), 0xFF, y1.bytes()));
        EMBER_CUDA_CHECK(cudaMemset(y2.get(), 0xFF, y2.bytes()));
        gemv_float_mma_experts(dm, dids.get<int32_t>(), nullptr, nullptr, n_items, dx.get<float>(), k, x_div,
                               y1.get<float>(), rows, nullptr);
        gemv_float_mma_experts(dm, nullptr, dorder.get<int32_t>(), dtiles.get<int32_t>(), max_tiles, dx.get<float>(), k,
                               x_div, y2.get<float>(), rows, nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto a1 = download<float>(y1, size_t(n_items * rows)), a2 = download<float>(y2, size_t(n_items * rows));
        for (float v : a2) ASSERT_TRUE(std::isfinite(v)) << "an item's output was never written";
        const std::string what = std::string(type_name(type)) + " k=" + std::to_string(k) + " x_div=" + std::to_string(x_div);
        EXPECT_EQ(0, std::memcmp(a1.data(), a2.data(), a1.size() * 4)) << what;
        if (type == GgmlType::BF16)
          for (float& v : x) v = bf16_to_f32(f32_to_bf16(v));
        for (int64_t i = 0; i < n_items; ++i) {
          std::vector<float> got(a1.begin() + i * rows, a1.begin() + (i + 1) * rows);
          std::vector<double> ref;
          for (int64_t r = 0; r < rows; ++r) ref.push_back(reference_dot(experts[size_t(ids[size_t(i)])], r, x.data() + (i / x_div) * k));
          ASSERT_LE(rel_error(got, ref), 1e-5) << what << " item " << i;
        }
      }
    }
  }
}

// Q8_0 weights meet activations rounded as the CPU rounds theirs (int8_acts.h
// Int8Style::Q8_0; quant::quantize_row of Q8_0): per 32 elements amax / 127 in
// half precision, codes x / that, ties to even.
struct HostQ80Acts {
  std::vector<int8_t> q;
  std::vector<float> d, values;
};
HostQ80Acts host_q8_0_acts(const std::vector<float>& x) {
  std::vector<quant::BlockQ8_0> blocks(x.size() / 32);
  quant::quantize_row(GgmlType::Q8_0, x.data(), blocks.data(), int64_t(x.size()));
  HostQ80Acts h;
  for (const quant::BlockQ8_0& b : blocks) {
    h.d.push_back(fp16_to_f32(b.d));
    for (int j = 0; j < 32; ++j) {
      h.q.push_back(b.qs[j]);
      h.values.push_back(h.d.back() * float(b.qs[j]));
    }
  }
  return h;
}

// Each of the three kernels that round (alone, fused with the RMSNorm, fused
// with the gated activation) in the Q8_0 style: codes and scales bit for bit
// the CPU's rounding of what it rounded (its own float output, for the fused
// ones); among ordinary blocks a zero block, blocks whose half-precision
// scale is subnormal (amax 1e-6 and 5e-4), one whose scale lies halfway
// between two half-precision values, and one whose scale overflows to
// infinity (codes 0); the memory after the scales untouched.
TEST_F(CudaKernels, Q8_0ActivationsAreTheCpuRounding) {
  std::mt19937 rng(8);
  const int64_t n = 3, k = 768, ldx = k + 64;
  std::vector<float> x = random_floats(n * ldx, rng), u = random_floats(n * k, rng), g = random_floats(k, rng);
  auto block = [&](int64_t t, int64_t b) { return x.begin() + t * ldx + 32 * b; };
  std::fill(block(1, 2), block(1, 3), 0.f);                         // a zero block: scale 0, codes 0
  std::for_each(block(0, 1), block(0, 2), [](float& v) { v *= 1e-6f; });  // subnormal scales
  std::for_each(block(0, 3), block(0, 4), [](float& v) { v *= 5e-4f; });
  *block(2, 5) = 127.f * (1.f + 1.f / 2048.f);  // amax / 127 halfway between 1 and the next half
  *block(2, 7) = 1e7f;                         // amax / 127 past the largest half: an infinite scale
  for (float& v : g) v = 1.f + 0.25f * v;
  std::vector<float> packed;  // the rows without the gap
  for (int64_t t = 0; t < n; ++t) packed.insert(packed.end(), x.begin() + t * ldx, x.begin() + t * ldx + k);
  DeviceBuffer dx = upload(x), dpacked = upload(packed), du = upload(u), dg = upload(g), dq(int8_acts_bytes(n, k)),
               dy(size_t(n * k) * 4);
  auto check = [&](const Int8Acts& a, const std::vector<float>& rounded, const std::string& what) {
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    ASSERT_EQ(a.style, Int8Style::Q8_0) << what;
    const HostQ80Acts ref = host_q8_0_acts(rounded);
    std::vector<int8_t> q(size_t(n * k));
    std::vector<float> d(size_t(n * k / 32) + 8);
    EMBER_CUDA_CHECK(cudaMemcpy(q.data(), a.q, q.size(), cudaMemcpyDeviceToHost));
    EMBER_CUDA_CHECK(cudaMemcpy(d.data(), a.d, d.size() * 4, cudaMemcpyDeviceToHost));
    int64_t differ = 0, first = -1;
    for (size_t i = 0; i < q.size(); ++i)
      if (q[i] != ref.q[i] && differ++ == 0) first = int64_t(i);
    EXPECT_EQ(differ, 0) << what << ": codes unlike the CPU's, first at " << first;
    EXPECT_EQ(0, std::memcmp(d.data(), ref.d.data(), ref.d.size() * 4)) << what << ": scales";
    uint32_t past;  // the poison after the rows' scales stays
    std::memcpy(&past, &d[ref.d.size()], 4);
    EXPECT_EQ(past, 0xABABABABu) << what << ": wrote past the scales";
  };
  {  // the edge blocks are what they say
    const HostQ80Acts ref = host_q8_0_acts(packed);
    EXPECT_EQ(ref.d[size_t(k / 32 + 2)], 0.f);
    EXPECT_LT(ref.d[1], 6.1e-5f);  // below the smallest normal half
    EXPECT_TRUE(std::isinf(ref.d[size_t(2 * k / 32 + 7)]));
  }
  EMBER_CUDA_CHECK(cudaMemset(dq.get(), 0xAB, dq.bytes()));
  check(quantize_int8_acts(dx.get<float>(), ldx, n, k, dq.get(), nullptr, Int8Style::Q8_0), packed, "alone");
  EMBER_CUDA_CHECK(cudaMemset(dq.get(), 0xAB, dq.bytes()));
  const Int8Acts normed = rmsnorm_int8_acts(dpacked.get<float>(), nullptr, n, dg.get<float>(), 1e-5f, k, dy.get<float>(), dq.get(),
                                            nullptr, Int8Style::Q8_0);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  check(normed, download<float>(dy, size_t(n * k)), "with the RMSNorm");
  EMBER_CUDA_CHECK(cudaMemset(dq.get(), 0xAB, dq.bytes()));
  std::vector<float> finite = packed;
  for (float& v : finite) v = std::clamp(v, -1e3f, 1e3f);  // the gated activation of 1e7 overflows
  DeviceBuffer dh = upload(finite);
  const Int8Acts gated = gated_int8_acts(Activation::SiLU, dh.get<float>(), du.get<float>(), dh.get<float>(), n, k, dq.get(),
                                         nullptr, Int8Style::Q8_0);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  check(gated, download<float>(dh, size_t(n * k)), "with the gated activation");
}

// The integer products of the formats that meet Q8_0-style activations (Q8_0,
// Q4_0, IQ4_NL): alone, fused, with add, and per expert item, against the float64 product of the decoded weights and the reference
// rounding, at one token (the CUDA cores; the tensor cores with
// EMBER_CUDA_BATCH_INVARIANT=1) and at several (the tensor cores: one to
// eight tiles of 8 tokens, partial tiles); then a token's bits do not depend
// on the batch on the tensor cores.
TEST_F(CudaKernels, Q8_0StyleInt8ProductsMatchTheCpuRounding) {
  std::mt19937 rng(80);
  Tables tab;
  for (const GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::IQ4_NL}) {
    const std::string name = type_name(type);
    for (int64_t k : {768, 4096}) {
      const int64_t rows = 37, ldy = rows + 3, max_n = 70;
      const HostMatrix m = random_matrix(type, rows, k, rng), m2 = random_matrix(type, 19, k, rng);
      DeviceBuffer w = upload_in_device_layout(type, m.bytes, k), w2 = upload_in_device_layout(type, m2.bytes, k);
      const DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0}, dm2{type, w2.get<uint8_t>(), k, 19, m2.stride, 0};
      ASSERT_TRUE(int8_product_serves(dm));
      const std::vector<float> x = random_floats(max_n * k, rng);
      const HostQ80Acts hx = host_q8_0_acts(x);
      DeviceBuffer dx = upload(x), dq(int8_acts_bytes(max_n, k)), dy(size_t(max_n * ldy) * 4), dy2(size_t(max_n * ldy) * 4);
      for (int64_t n : {1, 2, 3, 8, 13, 17, 33, 64}) {
        const std::string what = name + " k=" + std::to_string(k) + " n=" + std::to_string(n);
        const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n, k, dq.get(), nullptr, Int8Style::Q8_0);
        EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
        gemv(dm, tab.t, dx.get<float>(), k, n, dy.get<float>(), ldy, nullptr, &a);  // takes the integer path
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto alone = download<float>(dy, size_t(n * ldy));
        expect_products(m, alone, ldy, hx.values.data(), n, what);
        // Fused with a second matrix: each output the bits of its own launch.
        EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
        EMBER_CUDA_CHECK(cudaMemset(dy2.get(), 0xFF, dy2.bytes()));
        const MatrixOut outs[2] = {{&dm, dy.get<float>(), ldy}, {&dm2, dy2.get<float>(), ldy}};
        gemv_int8_fused(outs, a, nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        EXPECT_EQ(0, std::memcmp(alone.data(), download<float>(dy, size_t(n * ldy)).data(), alone.size() * 4)) << what << " fused";
        expect_products(m2, download<float>(dy2, size_t(n * ldy)), ldy, hx.values.data(), n, what + " fused, second matrix");
        // With add: the product lands on what was there.
        const std::vector<float> base = random_floats(n * ldy, rng);
        DeviceBuffer dbase = upload(base);
        gemv(dm, tab.t, dx.get<float>(), k, n, dbase.get<float>(), ldy, nullptr, &a, /*add=*/true);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto added = download<float>(dbase, size_t(n * ldy));
        for (int64_t t = 0; t < n; ++t)
          for (int64_t r = 0; r < rows; ++r) {
            const size_t i = size_t(t * ldy + r);
            ASSERT_EQ(added[i], base[i] + alone[i]) << what << " add, token " << t << " row " << r;
          }
      }
      // A token's bits do not depend on the batch (the tensor-core products).
      std::vector<float> all;
      for (int64_t n : {max_n, int64_t(1), int64_t(2), int64_t(5), int64_t(16), int64_t(19), int64_t(40), int64_t(64)}) {
        const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n, k, dq.get(), nullptr, Int8Style::Q8_0);
        const MatrixOut out{&dm, dy.get<float>(), rows};
        EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
        gemv_int8_mma_fused({&out, 1}, a, nullptr);
        const auto y = download<float>(dy, size_t(n * rows));
        if (all.empty()) all = y;
        EXPECT_EQ(0, std::memcmp(all.data(), y.data(), size_t(n * rows) * 4)) << name << " k=" << k << " n=" << n;
      }
      {  // the step of 70's second grid row of tiles (tokens 64..69), against those tokens alone
        const Int8Acts a = quantize_int8_acts(dx.get<float>() + 64 * k, k, 6, k, dq.get(), nullptr, Int8Style::Q8_0);
        const MatrixOut out{&dm, dy.get<float>(), rows};
        gemv_int8_mma_fused({&out, 1}, a, nullptr);
        const auto y = download<float>(dy, size_t(6 * rows));
        EXPECT_EQ(0, std::memcmp(all.data() + 64 * rows, y.data(), y.size() * 4)) << name << " k=" << k << " tokens 64..69";
      }
    }
    // Expert items, each its chosen expert and its token's row (two tokens, two experts each).
    const int64_t k = 512, rows = 21, E = 4, n_tok = 2, K = 2;
    std::vector<uint8_t> all;
    std::vector<HostMatrix> experts;
    for (int64_t e = 0; e < E; ++e) {
      experts.push_back(random_matrix(type, rows, k, rng));
      all.insert(all.end(), experts.back().bytes.begin(), experts.back().bytes.end());
    }
    const size_t expert_stride = experts[0].bytes.size();
    DeviceBuffer w = upload_in_device_layout(type, all, k);
    const DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, experts[0].stride, expert_stride};
    const std::vector<int32_t> ids = {3, 1, 0, 3};
    const std::vector<float> x = random_floats(n_tok * k, rng);
    const HostQ80Acts hx = host_q8_0_acts(x);
    DeviceBuffer dx = upload(x), dids = upload(ids), dq(int8_acts_bytes(n_tok, k)), dy(size_t(n_tok * K * rows) * 4);
    const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n_tok, k, dq.get(), nullptr, Int8Style::Q8_0);
    EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
    gemv_experts(dm, tab.t, dids.get<int32_t>(), dx.get<float>(), k, int(K), n_tok * K, dy.get<float>(), rows, nullptr, &a);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto y = download<float>(dy, size_t(n_tok * K * rows));
    for (int64_t i = 0; i < n_tok * K; ++i)
      expect_products(experts[size_t(ids[size_t(i)])], std::vector<float>(y.begin() + i * rows, y.begin() + (i + 1) * rows), rows,
                      hx.values.data() + (i / K) * k, 1, name + " expert item " + std::to_string(i));
  }
}

// Which integer product takes which activations (host only): the style of each
// format, the matrices the integer products serve, and launches given activations of
// another style refuse.
TEST(Int8Styles, EachFormatReadsItsOwnRounding) {
  EXPECT_EQ(int8_style_of(GgmlType::Q8_0), Int8Style::Q8_0);
  EXPECT_EQ(int8_style_of(GgmlType::Q4_0), Int8Style::Q8_0);
  EXPECT_EQ(int8_style_of(GgmlType::IQ4_NL), Int8Style::Q8_0);
  EXPECT_EQ(int8_style_of(GgmlType::IQ4_XS), Int8Style::K);
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ2_S,
                     GgmlType::Q3_K})
    EXPECT_TRUE(has_int8_product(t)) << type_name(t);
  for (GgmlType t : {GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ2_S, GgmlType::Q3_K}) EXPECT_EQ(int8_style_of(t), Int8Style::K) << type_name(t);
  // Every format with an integer product rounds its activations as the CPU does for it.
  for (uint32_t i = 0; i <= 30; ++i) {
    if (type_info(GgmlType(i)).known && has_int8_product(GgmlType(i))) {
      EXPECT_EQ(int8_style_of(GgmlType(i)) == Int8Style::Q8_0, quant::activation_type(GgmlType(i)) == GgmlType::Q8_0)
          << type_name(GgmlType(i));
    }
  }
  EXPECT_EQ(int8_style_of(GgmlType::Q4_K), Int8Style::K);
  EXPECT_EQ(int8_style_of(GgmlType::Q6_K), Int8Style::K);
  EXPECT_EQ(int8_style_of(GgmlType::Q5_K), Int8Style::K);
  EXPECT_TRUE(has_int8_product(GgmlType::Q5_K));
  EXPECT_TRUE(has_int8_product(GgmlType::Q8_0));
  EXPECT_FALSE(has_int8_product(GgmlType::F16));
  const DeviceMatrix q80{GgmlType::Q8_0, nullptr, 2048, 64, 0, 0}, q80_short{GgmlType::Q8_0, nullptr, 96, 64, 0, 0},
      q4k{GgmlType::Q4_K, nullptr, 2048, 64, 0, 0}, f16{GgmlType::F16, nullptr, 2048, 64, 0, 0};
  EXPECT_TRUE(int8_product_serves(q80));
  EXPECT_FALSE(int8_product_serves(q80_short));  // rows not whole 256-element blocks
  EXPECT_TRUE(int8_product_serves(q4k));
  EXPECT_FALSE(int8_product_serves(f16));
  float y[1];
  Int8Acts k_style;
  k_style.k = 2048;
  k_style.n = 1;
  Int8Acts q80_style = k_style;
  q80_style.style = Int8Style::Q8_0;
  const MatrixOut to_q80{&q80, y, 64}, to_q4k{&q4k, y, 64};
  // Refused before any launch, by the style check (not by a missing device).
  auto refused = [](auto&& launch) {
    try {
      launch();
    } catch (const Error& e) {
      return std::string(e.what()).find("another rounding") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refused([&] { gemv_int8_fused({&to_q80, 1}, k_style, nullptr); }));
  EXPECT_TRUE(refused([&] { gemv_int8_fused({&to_q4k, 1}, q80_style, nullptr); }));
  EXPECT_TRUE(refused([&] { gemv_int8_experts(q80, nullptr, k_style, 1, 1, y, 64, nullptr); }));
  EXPECT_TRUE(refused([&] { gemv_int8_mma_fused({&to_q80, 1}, k_style, nullptr); }));
  EXPECT_TRUE(refused([&] { gemv_int8_mma_experts({&to_q4k, 1}, nullptr, nullptr, nullptr, 1, q80_style, 1, nullptr); }));
  EXPECT_TRUE(refused([&] { gemv_int8_experts_grouped(q80, nullptr, nullptr, 1, k_style, 1, y, 64, nullptr); }));
}

// q/k/v and gate/up in one launch: every output is the bits of its own
// launch, rows of different counts (not multiples of a block's rows), with and
// without add, at one token (two rows per warp) and several (four).
TEST_F(CudaKernels, FusedInt8ProductsGiveEachProductsBits) {
  std::mt19937 rng(31);
  const int64_t k = 768;
  for (GgmlType type : kIntegerProductFormats) {
    const std::vector<int64_t> rows = {301, 64, 1001};
    std::vector<HostMatrix> hm;
    std::vector<DeviceBuffer> w;
    std::vector<DeviceMatrix> dm;
    for (int64_t r : rows) {
      hm.push_back(random_matrix(type, r, k, rng));
      w.push_back(upload_in_device_layout(type, hm.back().bytes, k));
    }
    for (size_t i = 0; i < rows.size(); ++i) dm.push_back({type, w[i].get<uint8_t>(), k, rows[i], hm[i].stride, 0});
    for (int64_t n : {1, 3, 13}) {
      const std::vector<float> x = random_floats(n * k, rng);
      DeviceBuffer dx = upload(x), dq(int8_acts_bytes(n, k));
      const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n, k, dq.get(), nullptr, int8_style_of(type));
      for (const bool add : {false, true}) {
        std::vector<DeviceBuffer> alone, fused;
        std::vector<MatrixOut> outs;
        for (size_t i = 0; i < rows.size(); ++i) {
          const int64_t ldy = rows[i] + 2;
          const std::vector<float> start = random_floats(n * ldy, rng);  // what add lands on
          alone.push_back(upload(start));
          fused.push_back(upload(start));
          gemv_int8(dm[i], a, alone.back().get<float>(), ldy, nullptr, add);
          outs.push_back({&dm[i], fused.back().get<float>(), ldy});
        }
        gemv_int8_fused(outs, a, nullptr, add);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        for (size_t i = 0; i < rows.size(); ++i) {
          const size_t nf = size_t(n * (rows[i] + 2));
          const auto ya = download<float>(alone[i], nf), yf = download<float>(fused[i], nf);
          EXPECT_EQ(0, std::memcmp(ya.data(), yf.data(), nf * 4))
              << type_name(type) << " matrix " << i << " n=" << n << (add ? " add" : "");
        }
      }
    }
  }
}

// n rows of k random activations rounded to int8 in the style of `type`.
struct RandomInt8Acts {
  DeviceBuffer x, q;
  Int8Acts a;
  RandomInt8Acts(int64_t n, int64_t k, GgmlType type, std::mt19937& rng)
      : x(upload(random_floats(n * k, rng))), q(int8_acts_bytes(n, k)),
        a(quantize_int8_acts(x.get<float>(), k, n, k, q.get(), nullptr, int8_style_of(type))) {}
};

// Two tensors of E random experts of one format (as gate and up), in the device layout.
struct ExpertTensors {
  DeviceBuffer w_gate, w_up;
  DeviceMatrix gate, up;
  ExpertTensors(GgmlType type, int E, int64_t rows, int64_t k, std::mt19937& rng) {
    std::vector<uint8_t> packed[2];
    size_t stride = 0, per_expert = 0;
    for (int e = 0; e < 2 * E; ++e) {
      const HostMatrix m = random_matrix(type, rows, k, rng);
      stride = m.stride;
      per_expert = m.bytes.size();
      packed[e / E].insert(packed[e / E].end(), m.bytes.begin(), m.bytes.end());
    }
    w_gate = upload_in_device_layout(type, packed[0], k);
    w_up = upload_in_device_layout(type, packed[1], k);
    gate = {type, w_gate.get<uint8_t>(), k, rows, stride, per_expert};
    up = {type, w_up.get<uint8_t>(), k, rows, stride, per_expert};
  }
};

// For every format with an integer product: E random experts in two tensors
// (as gate and up), then for activations of token rows (x_div = K) and of item
// rows (x_div = 1), n_items / x_div random rows rounded in the format's style:
// f(type, gate, up, x_div, activations).
template <class F>
void for_each_expert_case(int E, int K, int64_t rows, int64_t k, int64_t n_items, std::mt19937& rng, F&& f) {
  for (GgmlType type : kIntegerProductFormats) {
    const ExpertTensors ex(type, E, rows, k, rng);
    for (const int x_div : {K, 1}) {
      const RandomInt8Acts acts(n_items / x_div, k, type, rng);
      f(type, ex.gate, ex.up, x_div, acts.a);
    }
  }
}

// group_by_expert's tiles (downloaded) against the items' ids: each used tile
// holds 1..tile_items items of its own expert, every item is in exactly one.
// Returns how many tiles are full.
int expect_expert_tiles(const std::vector<int32_t>& ids, const std::vector<int32_t>& order,
                        const std::vector<int32_t>& tiles, int tile_items) {
  const int64_t n_items = int64_t(ids.size());
  std::vector<int> seen(ids.size(), 0);
  int full = 0;
  for (size_t t = 0; t + 2 < tiles.size(); t += 3) {
    const int32_t first = tiles[t], count = tiles[t + 1], e = tiles[t + 2];
    if (count == 0) continue;
    const bool in_range = count > 0 && count <= tile_items && first >= 0 && first + count <= n_items;
    EXPECT_TRUE(in_range) << "tile " << t / 3;
    if (!in_range) return full;
    full += count == tile_items;
    for (int j = 0; j < count; ++j) {
      const int32_t item = order[size_t(first + j)];
      EXPECT_TRUE(item >= 0 && item < n_items) << "tile " << t / 3;
      if (item < 0 || item >= n_items) return full;
      EXPECT_EQ(ids[size_t(item)], e) << "item " << item << " in a tile of expert " << e;
      ++seen[size_t(item)];
    }
  }
  for (int64_t i = 0; i < n_items; ++i) EXPECT_EQ(seen[size_t(i)], 1) << "item " << i;
  return full;
}

// Items grouped by expert: every item once, in its expert's range, tiles of at
// most kExpertTile that cover each expert's items; then the grouped products
// give every item the bits of the per-item products (gate/up reading token
// rows, x_div = K; down reading item rows, x_div = 1), including experts no
// item chose and experts with more items than a tile; and paired with a second
// tensor in one launch (gate and up), grouped or not, each output the bits of
// its own launch.
TEST_F(CudaKernels, GroupedExpertProductsGiveEachItemsBits) {
  std::mt19937 rng(17);
  const int E = 7, K = 3;
  const int64_t rows = 45, k = 512;
  for (int64_t n_tok : {1, 5, 40}) {
    const int64_t n_items = n_tok * K;
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < n_items; ++i) ids.push_back(int32_t(rng() % 5 == 0 ? 6 : rng() % 4));  // 4, 5 never chosen
    const int64_t max_tiles = max_expert_tiles(n_items, E);
    DeviceBuffer dids = upload(ids), dorder(size_t(n_items) * 4), dtiles(size_t(3 * max_tiles) * 4);
    EMBER_CUDA_CHECK(cudaMemset(dorder.get(), 0xFF, dorder.bytes()));
    EMBER_CUDA_CHECK(cudaMemset(dtiles.get(), 0x7F, dtiles.bytes()));
    group_by_expert(dids.get<int32_t>(), n_items, E, dorder.get<int32_t>(), dtiles.get<int32_t>(), nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto order = download<int32_t>(dorder, size_t(n_items));
    const auto tiles = download<int32_t>(dtiles, size_t(3 * max_tiles));
    expect_expert_tiles(ids, order, tiles, kExpertTile);

    for_each_expert_case(E, K, rows, k, n_items, rng, [&](GgmlType type, const DeviceMatrix& dm, const DeviceMatrix& dm2,
                                                         int x_div, const Int8Acts& a) {
      DeviceBuffer y1(size_t(n_items * rows) * 4), y2(size_t(n_items * rows) * 4);
      EMBER_CUDA_CHECK(cudaMemset(y1.get(), 0xFF, y1.bytes()));
      EMBER_CUDA_CHECK(cudaMemset(y2.get(), 0xFF, y2.bytes()));
      // Per item on the tensor cores (as EMBER_CUDA_BATCH_INVARIANT=1 runs them) against the grouped products.
      auto per_item = [&](std::span<const MatrixOut> outs) {
        gemv_int8_mma_experts(outs, dids.get<int32_t>(), nullptr, nullptr, n_items, a, x_div, nullptr);
      };
      const MatrixOut one[1] = {{&dm, y1.get<float>(), rows}};
      per_item(one);
      gemv_int8_experts_grouped(dm, dorder.get<int32_t>(), dtiles.get<int32_t>(), max_tiles, a, x_div, y2.get<float>(), rows,
                                nullptr);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      const auto a1 = download<float>(y1, size_t(n_items * rows)), a2 = download<float>(y2, size_t(n_items * rows));
      for (float v : a2) ASSERT_TRUE(std::isfinite(v)) << "an item's output was never written";
      EXPECT_EQ(0, std::memcmp(a1.data(), a2.data(), a1.size() * 4))
          << type_name(type) << " n_tok=" << n_tok << " x_div=" << x_div;

      // Paired with the second tensor in one launch, grouped or not: each output is the bits of its own launch.
      const size_t n_out = size_t(n_items * rows);
      DeviceBuffer solo2(n_out * 4), p1(n_out * 4), p2(n_out * 4), g1(n_out * 4), g2(n_out * 4);
      for (DeviceBuffer* b : {&solo2, &p1, &p2, &g1, &g2}) EMBER_CUDA_CHECK(cudaMemset(b->get(), 0xFF, b->bytes()));
      const MatrixOut solo[1] = {{&dm2, solo2.get<float>(), rows}};
      per_item(solo);
      const MatrixOut pair[2] = {{&dm, p1.get<float>(), rows}, {&dm2, p2.get<float>(), rows}};
      per_item(pair);
      const MatrixOut gpair[2] = {{&dm, g1.get<float>(), rows}, {&dm2, g2.get<float>(), rows}};
      gemv_int8_experts_grouped(gpair, dorder.get<int32_t>(), dtiles.get<int32_t>(), max_tiles, a, x_div, nullptr);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      const auto s2 = download<float>(solo2, n_out);
      EXPECT_NE(0, std::memcmp(a1.data(), s2.data(), n_out * 4)) << "the two tensors must differ";
      for (const auto& [got, want, what] : {std::tuple{&p1, &a1, "paired first"}, std::tuple{&p2, &s2, "paired second"},
                                            std::tuple{&g1, &a1, "grouped pair first"},
                                            std::tuple{&g2, &s2, "grouped pair second"}})
        EXPECT_EQ(0, std::memcmp(download<float>(*got, n_out).data(), want->data(), n_out * 4))
            << what << " " << type_name(type) << " n_tok=" << n_tok << " x_div=" << x_div;

      // The per-item products the engine takes by default (gemv_int8_experts), alone and paired.
      DeviceBuffer d1(n_out * 4), d2(n_out * 4), dp1(n_out * 4), dp2(n_out * 4);
      gemv_int8_experts(dm, dids.get<int32_t>(), a, x_div, n_items, d1.get<float>(), rows, nullptr);
      gemv_int8_experts(dm2, dids.get<int32_t>(), a, x_div, n_items, d2.get<float>(), rows, nullptr);
      const MatrixOut dpair[2] = {{&dm, dp1.get<float>(), rows}, {&dm2, dp2.get<float>(), rows}};
      gemv_int8_experts(dpair, dids.get<int32_t>(), a, x_div, n_items, nullptr);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      EXPECT_EQ(0, std::memcmp(download<float>(dp1, n_out).data(), download<float>(d1, n_out).data(), n_out * 4))
          << "default paired first " << type_name(type);
      EXPECT_EQ(0, std::memcmp(download<float>(dp2, n_out).data(), download<float>(d2, n_out).data(), n_out * 4))
          << "default paired second " << type_name(type);
    });
  }
}

// Prefill's tiles of up to 32 and 64 items (several tiles of 8 tokens a block,
// as the dense products take them): every item once, in its expert's range,
// and every item the bits of the per-item products, for every format, gate and
// up paired or alone, reading token rows (x_div = K) or item rows (1). Experts
// of many items (several tiles, the last one partial), of few, and of none.
TEST_F(CudaKernels, LargeExpertTilesGiveEachItemsBits) {
  std::mt19937 rng(23);
  const int E = 6, K = 2;
  const int64_t rows = 40, k = 768, n_tok = 150, n_items = n_tok * K;
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n_items; ++i) {
    const uint32_t r = rng() % 16;  // expert 0 takes about half the items, 5 none
    ids.push_back(int32_t(r < 8 ? 0 : r < 12 ? 1 : r < 14 ? 2 : r < 15 ? 3 : 4));
  }
  DeviceBuffer dids = upload(ids), dorder(size_t(n_items) * 4);
  for_each_expert_case(E, K, rows, k, n_items, rng, [&](GgmlType type, const DeviceMatrix& dm, const DeviceMatrix& dm2,
                                                       int x_div, const Int8Acts& a) {
    const size_t n_out = size_t(n_items * rows);
    DeviceBuffer ref1(n_out * 4), ref2(n_out * 4);
    const MatrixOut per_item[2] = {{&dm, ref1.get<float>(), rows}, {&dm2, ref2.get<float>(), rows}};
    gemv_int8_mma_experts(per_item, dids.get<int32_t>(), nullptr, nullptr, n_items, a, x_div, nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto want1 = download<float>(ref1, n_out), want2 = download<float>(ref2, n_out);
    for (const int tile_items : {32, kLargeExpertTile}) {
      const int64_t max_tiles = max_expert_tiles(n_items, E, tile_items);
      DeviceBuffer dtiles(size_t(3 * max_tiles) * 4);
      EMBER_CUDA_CHECK(cudaMemset(dorder.get(), 0xFF, dorder.bytes()));
      EMBER_CUDA_CHECK(cudaMemset(dtiles.get(), 0x7F, dtiles.bytes()));
      group_by_expert(dids.get<int32_t>(), n_items, E, dorder.get<int32_t>(), dtiles.get<int32_t>(), nullptr, tile_items);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      const auto order = download<int32_t>(dorder, size_t(n_items));
      const auto tiles = download<int32_t>(dtiles, size_t(3 * max_tiles));
      ASSERT_GE(expect_expert_tiles(ids, order, tiles, tile_items), 2) << "the test wants experts of several full tiles";

      DeviceBuffer g1(n_out * 4), g2(n_out * 4), s1(n_out * 4);
      for (DeviceBuffer* b : {&g1, &g2, &s1}) EMBER_CUDA_CHECK(cudaMemset(b->get(), 0xFF, b->bytes()));
      const MatrixOut gpair[2] = {{&dm, g1.get<float>(), rows}, {&dm2, g2.get<float>(), rows}};
      gemv_int8_experts_grouped(gpair, dorder.get<int32_t>(), dtiles.get<int32_t>(), max_tiles, a, x_div, nullptr, tile_items);
      gemv_int8_experts_grouped(dm, dorder.get<int32_t>(), dtiles.get<int32_t>(), max_tiles, a, x_div, s1.get<float>(), rows,
                                nullptr, tile_items);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      const std::string what = std::string(type_name(type)) + " tiles of " + std::to_string(tile_items) +
                               " x_div=" + std::to_string(x_div);
      const auto got1 = download<float>(g1, n_out), got2 = download<float>(g2, n_out), alone = download<float>(s1, n_out);
      for (float v : got1) ASSERT_TRUE(std::isfinite(v)) << what << ": an item's output was never written";
      EXPECT_EQ(0, std::memcmp(got1.data(), want1.data(), n_out * 4)) << what << ", paired first";
      EXPECT_EQ(0, std::memcmp(got2.data(), want2.data(), n_out * 4)) << what << ", paired second";
      EXPECT_EQ(0, std::memcmp(alone.data(), want1.data(), n_out * 4)) << what << ", alone";
    }
  });
}

// More items than a grid has rows (65,535): a step of 33,000 tokens of two
// experts each. The expert products (float, int8 on the CUDA cores, int8 on
// the tensor cores) and the experts' weighted sum run in several launches,
// every item's output where it belongs (poisoned first: an item left out stays NaN).
TEST_F(CudaKernels, ExpertProductsTakeMoreItemsThanAGridHolds) {
  std::mt19937 rng(41);
  Tables tab;
  const int64_t E = 3, rows = 8, k = 256, K = 2, n_tok = 33000, n_items = n_tok * K;
  static_assert(n_items > 65535);
  const RandomExperts ex(GgmlType::Q4_K, E, rows, k, rng);
  const std::vector<HostMatrix>& experts = ex.host;
  const DeviceMatrix& dm = ex.dm;
  std::vector<int32_t> ids(static_cast<size_t>(n_items));
  for (int32_t& id : ids) id = int32_t(rng() % uint32_t(E));
  const std::vector<float> x = random_floats(n_tok * k, rng);
  const HostInt8Acts hx = host_int8_acts(x, n_tok, k);
  DeviceBuffer dids = upload(ids), dx = upload(x), dq(int8_acts_bytes(n_tok, k)), dy(size_t(n_items * rows) * 4);
  const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n_tok, k, dq.get(), nullptr);
  auto reference = [&](const float* xs) {
    std::vector<double> ref;
    for (int64_t i = 0; i < n_items; ++i)
      for (int64_t r = 0; r < rows; ++r) ref.push_back(reference_dot(experts[size_t(ids[size_t(i)])], r, xs + (i / K) * k));
    return ref;
  };
  const std::vector<double> ref_float = reference(x.data()), ref_int8 = reference(hx.values.data());
  for (int path = 0; path < 3; ++path) {
    EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
    const MatrixOut out{&dm, dy.get<float>(), rows};
    if (path == 0) gemv_experts(dm, tab.t, dids.get<int32_t>(), dx.get<float>(), k, int(K), n_items, dy.get<float>(), rows, nullptr);
    if (path == 1) gemv_int8_experts(dm, dids.get<int32_t>(), a, int(K), n_items, dy.get<float>(), rows, nullptr);
    if (path == 2) gemv_int8_mma_experts({&out, 1}, dids.get<int32_t>(), nullptr, nullptr, n_items, a, int(K), nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto y = download<float>(dy, size_t(n_items * rows));
    EXPECT_LE(rel_error(y, path == 0 ? ref_float : ref_int8), 1e-5) << "path " << path;
  }
  // The weighted sum: each token's two rows, in choice order, from zero (combine_kernel's fmaf chain).
  const std::vector<float> yv = random_floats(n_items * rows, rng), wv = random_floats(n_items, rng);
  DeviceBuffer dyv = upload(yv), dwv = upload(wv), dout(size_t(n_tok * rows) * 4);
  EMBER_CUDA_CHECK(cudaMemset(dout.get(), 0xFF, dout.bytes()));
  combine_experts(dyv.get<float>(), dwv.get<float>(), int(K), n_tok, rows, dout.get<float>(), nullptr);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  const auto out = download<float>(dout, size_t(n_tok * rows));
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t c = 0; c < rows; ++c) {
      float sum = 0.f;
      for (int64_t j = 0; j < K; ++j) sum = std::fmaf(wv[size_t(t * K + j)], yv[size_t((t * K + j) * rows + c)], sum);
      ASSERT_EQ(out[size_t(t * rows + c)], sum) << "token " << t << " column " << c;
    }
}

TEST_F(CudaKernels, Int8ExpertProductsReadTheChosenExpert) {
  std::mt19937 rng(13);
  const int64_t E = 4, rows = 45, k = 512, K = 2, n_tok = 3;
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::IQ3_XXS,
                        GgmlType::IQ3_S, GgmlType::IQ2_S, GgmlType::Q3_K}) {
    std::vector<HostMatrix> experts;
    std::vector<uint8_t> packed;
    for (int e = 0; e < E; ++e) {
      experts.push_back(random_matrix(type, rows, k, rng));
      packed.insert(packed.end(), experts.back().bytes.begin(), experts.back().bytes.end());
    }
    DeviceBuffer w = upload_in_device_layout(type, packed, k);
    DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, experts[0].stride, experts[0].bytes.size()};
    const std::vector<int32_t> ids = {3, 0, 2, 3, 1, 2};
    const std::vector<float> x = random_floats(n_tok * k, rng);
    const HostInt8Acts hx = host_int8_acts(x, n_tok, k);
    DeviceBuffer dids = upload(ids), dx = upload(x), dq(int8_acts_bytes(n_tok, k)), dy(size_t(n_tok * K * rows) * 4);
    const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n_tok, k, dq.get(), nullptr);
    EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
    gemv_int8_experts(dm, dids.get<int32_t>(), a, int(K), n_tok * K, dy.get<float>(), rows, nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto y = download<float>(dy, size_t(n_tok * K * rows));
    std::vector<double> ref;
    for (int64_t i = 0; i < n_tok * K; ++i)
      for (int64_t r = 0; r < rows; ++r)
        ref.push_back(reference_dot(experts[size_t(ids[size_t(i)])], r, hx.values.data() + (i / K) * k));
    EXPECT_LE(rel_error(y, ref), 1e-5) << type_name(type);
    // With the ids read before the wait (written two launches back, as down's are): the same bits.
    const Int8Acts again = quantize_int8_acts(dx.get<float>(), k, n_tok, k, dq.get(), nullptr);
    EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
    gemv_int8_experts(dm, dids.get<int32_t>(), again, int(K), n_tok * K, dy.get<float>(), rows, nullptr, true);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(0, std::memcmp(y.data(), download<float>(dy, y.size()).data(), y.size() * 4)) << type_name(type) << " ids early";
  }
}

// The fused kernels give the bits of the two kernels they replace.
TEST_F(CudaKernels, FusedNormAndGateRoundAsTheUnfusedKernels) {
  std::mt19937 rng(17);
  const int64_t n = 3, k = 1280;
  const std::vector<float> x = random_floats(n * k, rng), w = random_floats(k, rng), u = random_floats(n * k, rng);
  DeviceBuffer dx = upload(x), dw = upload(w), du = upload(u);
  const std::vector<int32_t> rows = {2, 0, 2};
  DeviceBuffer drows = upload(rows);
  auto bytes_of = [](const Int8Acts& a) {
    std::vector<uint8_t> v(size_t(a.n * a.k) * 2 + size_t(a.n * a.k / 256) * 4 + size_t(a.n * a.k / 16) * 4);
    EMBER_CUDA_CHECK(cudaMemcpy(v.data(), a.q, size_t(a.n * a.k), cudaMemcpyDeviceToHost));
    EMBER_CUDA_CHECK(cudaMemcpy(v.data() + a.n * a.k, a.d, size_t(a.n * a.k / 256) * 4, cudaMemcpyDeviceToHost));
    EMBER_CUDA_CHECK(cudaMemcpy(v.data() + a.n * a.k + a.n * a.k / 256 * 4, a.sums, size_t(a.n * a.k / 16) * 4,
                                cudaMemcpyDeviceToHost));
    EMBER_CUDA_CHECK(cudaMemcpy(v.data() + a.n * a.k + a.n * a.k / 256 * 4 + a.n * a.k / 16 * 4, a.pairs,
                                size_t(a.n * a.k), cudaMemcpyDeviceToHost));
    return v;
  };
  for (const int32_t* r : {static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(drows.get<int32_t>())}) {
    DeviceBuffer y1(size_t(n * k) * 4), y2(size_t(n * k) * 4), q1(int8_acts_bytes(n, k)), q2(int8_acts_bytes(n, k));
    rmsnorm_rows(dx.get<float>(), r, n, dw.get<float>(), 1e-5f, k, y1.get<float>(), nullptr);
    const Int8Acts a1 = quantize_int8_acts(y1.get<float>(), k, n, k, q1.get(), nullptr);
    const Int8Acts a2 = rmsnorm_int8_acts(dx.get<float>(), r, n, dw.get<float>(), 1e-5f, k, y2.get<float>(), q2.get(), nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(download<float>(y1, size_t(n * k)), download<float>(y2, size_t(n * k))) << "norm, rows " << (r != nullptr);
    EXPECT_EQ(bytes_of(a1), bytes_of(a2)) << "norm, rows " << (r != nullptr);
  }
  for (Activation act : {Activation::SiLU, Activation::GeluTanh}) {
    DeviceBuffer g1 = upload(x), g2 = upload(x), q1(int8_acts_bytes(n, k)), q2(int8_acts_bytes(n, k));
    gated_activation(act, g1.get<float>(), du.get<float>(), g1.get<float>(), n * k, nullptr);
    const Int8Acts a1 = quantize_int8_acts(g1.get<float>(), k, n, k, q1.get(), nullptr);
    const Int8Acts a2 = gated_int8_acts(act, g2.get<float>(), du.get<float>(), g2.get<float>(), n, k, q2.get(), nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(download<float>(g1, size_t(n * k)), download<float>(g2, size_t(n * k))) << "gate";
    EXPECT_EQ(bytes_of(a1), bytes_of(a2)) << "gate";
  }
}

// The one-launch down half of a decoding token's experts (moe_down_one_token)
// gives the bits of the three kernels it replaces: the gated rounding, the
// per-item down products with their ids read early, and the weighted sum (also
// added onto its output). Shapes: rows of 8, 12, 16, 24 and more pieces (each
// lane group width, several pieces a lane), output rows that do not fill a
// cluster's rows, 2 to 16 choices.
TEST_F(CudaKernels, OneLaunchExpertDownGivesTheThreeKernelBits) {
  std::mt19937 rng(29);
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::IQ3_XXS,
                        GgmlType::IQ3_S, GgmlType::IQ2_S, GgmlType::Q3_K})
    for (const auto& [ef, H, K] : {std::tuple{int64_t(768), int64_t(300), 8}, std::tuple{int64_t(512), int64_t(70), 6},
                                   std::tuple{int64_t(1024), int64_t(130), 4}, std::tuple{int64_t(1536), int64_t(64), 16},
                                   std::tuple{int64_t(4096), int64_t(40), 2}, std::tuple{int64_t(256), int64_t(33), 3},
                                   // clusters of 9 to 15 blocks: sizes past the portable 8 that are not powers of two
                                   std::tuple{int64_t(768), int64_t(96), 10}, std::tuple{int64_t(512), int64_t(41), 12},
                                   std::tuple{int64_t(256), int64_t(32), 15}}) {
      const int E = K + 3;
      std::vector<uint8_t> packed;
      size_t expert_bytes = 0, stride = 0;
      for (int e = 0; e < E; ++e) {
        const HostMatrix m = random_matrix(type, H, ef, rng);
        packed.insert(packed.end(), m.bytes.begin(), m.bytes.end());
        expert_bytes = m.bytes.size();
        stride = m.stride;
      }
      DeviceBuffer w = upload_in_device_layout(type, packed, ef);
      const DeviceMatrix dm{type, w.get<uint8_t>(), ef, H, stride, expert_bytes};
      ASSERT_TRUE(moe_down_fits(dm, K)) << type_name(type) << " k=" << ef;
      std::vector<int32_t> ids(static_cast<size_t>(E));
      for (int e = 0; e < E; ++e) ids[size_t(e)] = E - 1 - e;  // distinct experts, not in index order
      std::shuffle(ids.begin(), ids.end(), rng);
      ids.resize(static_cast<size_t>(K));
      std::vector<float> weights = random_floats(K, rng);
      for (float& v : weights) v = std::fabs(v) + 0.1f;
      const std::vector<float> gate = random_floats(K * ef, rng), up = random_floats(K * ef, rng), out0 = random_floats(H, rng);
      DeviceBuffer dids = upload(ids), dw = upload(weights), dg = upload(gate), du = upload(up);
      for (Activation act : {Activation::SiLU, Activation::GeluTanh})
        for (bool add : {false, true}) {
          const std::string what = std::string(type_name(type)) + " k=" + std::to_string(ef) + " rows=" + std::to_string(H) +
                                   " K=" + std::to_string(K) + (act == Activation::SiLU ? " silu" : " gelu") + (add ? " add" : "");
          // Three kernels.
          DeviceBuffer h(size_t(K * ef) * 4), q(int8_acts_bytes(K, ef)), y(size_t(K * H) * 4), ref = upload(out0);
          const Int8Acts a = gated_int8_acts(act, dg.get<float>(), du.get<float>(), h.get<float>(), K, ef, q.get(), nullptr);
          gemv_int8_experts(dm, dids.get<int32_t>(), a, 1, K, y.get<float>(), H, nullptr, true);
          combine_experts(y.get<float>(), dw.get<float>(), K, 1, H, ref.get<float>(), nullptr, add);
          // One.
          DeviceBuffer out = upload(out0);
          if (!add) EMBER_CUDA_CHECK(cudaMemset(out.get(), 0xFF, out.bytes()));
          moe_down_one_token(act, dm, dids.get<int32_t>(), dw.get<float>(), dg.get<float>(), du.get<float>(), K,
                             out.get<float>(), add, nullptr);
          EMBER_CUDA_CHECK(cudaDeviceSynchronize());
          const auto want = download<float>(ref, size_t(H)), got = download<float>(out, size_t(H));
          EXPECT_EQ(0, std::memcmp(want.data(), got.data(), size_t(H) * 4)) << what;
          EXPECT_NE(want, out0) << what;  // the sum landed
        }
    }
}

// With add, a product lands on what Y held: the residual add of wo and down.
TEST_F(CudaKernels, ProductsAddOntoTheirOutput) {
  std::mt19937 rng(19);
  Tables tab;
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q8_0}) {
    const int64_t rows = 40, k = 512, n = 3;
    const HostMatrix m = random_matrix(type, rows, k, rng);
    DeviceBuffer w = upload_in_device_layout(type, m.bytes, k);
    DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0};
    const std::vector<float> x = random_floats(n * k, rng), base = random_floats(n * rows, rng);
    DeviceBuffer dx = upload(x), dq(int8_acts_bytes(n, k)), plain(size_t(n * rows) * 4), added = upload(base);
    const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n, k, dq.get(), nullptr);
    gemv(dm, tab.t, dx.get<float>(), k, n, plain.get<float>(), rows, nullptr, &a);
    gemv(dm, tab.t, dx.get<float>(), k, n, added.get<float>(), rows, nullptr, &a, true);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto p = download<float>(plain, size_t(n * rows)), s = download<float>(added, size_t(n * rows));
    for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(s[i], base[i] + p[i]) << type_name(type) << " element " << i;
  }
}

// The tensor-core path (prefill chunks): weights decoded and activations
// rounded to bfloat16, float32 sums. Bound ||out - ref|| / ||ref|| <= 1e-2: two
// bfloat16 roundings of at most 2^-9 each on independent elements give about
// 4e-3. With add the product lands on what was there.
TEST_F(CudaKernels, TensorCoreProductsMatchTheReference) {
  std::mt19937 rng(65);
  Tables tab;
  cudaStream_t s = nullptr;
  EMBER_CUDA_CHECK(cudaStreamCreate(&s));
  for (GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::IQ4_XS, GgmlType::F16, GgmlType::F32, GgmlType::BF16}) {
    const int64_t rows = 301, k = 768;
    const HostMatrix m = random_matrix(type, rows, k, rng);
    DeviceBuffer w = upload_in_device_layout(type, m.bytes, k);
    DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0};
    TensorCoreGemm gemm(rows * k, 200, k, s);
    for (int64_t n : {65, 130, 200}) {
      const std::vector<float> x = random_floats(n * k, rng);
      DeviceBuffer dx = upload(x);
      const int64_t ldy = rows + 3;
      DeviceBuffer dy(size_t(n * ldy) * 4);
      EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
      gemm.run(dm, tab.t, dx.get<float>(), k, n, dy.get<float>(), ldy, false);
      EMBER_CUDA_CHECK(cudaStreamSynchronize(s));
      const auto y = download<float>(dy, size_t(n * ldy));
      const std::string what = std::string(type_name(type)) + " n=" + std::to_string(n);
      expect_products(m, y, ldy, x.data(), n, what, 1e-2);
      gemm.run(dm, tab.t, dx.get<float>(), k, n, dy.get<float>(), ldy, true);
      EMBER_CUDA_CHECK(cudaStreamSynchronize(s));
      const auto y2 = download<float>(dy, size_t(n * ldy));
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < rows; ++r) {
          const size_t i = size_t(t * ldy + r);
          ASSERT_NEAR(y2[i], 2 * y[i], 1e-5 * (1 + std::fabs(y[i]))) << what << ": add";
        }
    }
  }
  EMBER_CUDA_CHECK(cudaStreamDestroy(s));
}

TEST_F(CudaKernels, GatherRowsDecodesTheEmbedding) {
  std::mt19937 rng(3);
  Tables tab;
  for (GgmlType type : {GgmlType::Q6_K, GgmlType::BF16, GgmlType::IQ4_NL}) {
    const int64_t rows = 50, k = 256;
    const HostMatrix m = random_matrix(type, rows, k, rng);
    DeviceBuffer w = upload_in_device_layout(type, m.bytes, k);
    DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0};
    // Negative ids name the picks of a step before: rows 31 and 2, and a failed pick (row 0).
    const std::vector<int32_t> ids = {49, -2, 0, 17, -1, 17, -3}, picked = {2, 31, kPickNonFinite};
    const std::vector<int32_t> rows_read = {49, 31, 0, 17, 2, 17, 0};
    DeviceBuffer dids = upload(ids), dpicked = upload(picked), dy(ids.size() * size_t(k) * 4);
    EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
    gather_rows(dm, tab.t, dids.get<int32_t>(), dpicked.get<int32_t>(), int64_t(ids.size()), 1.5f, dy.get<float>(), nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto y = download<float>(dy, ids.size() * size_t(k));
    for (size_t t = 0; t < ids.size(); ++t)
      for (int64_t j = 0; j < k; ++j)
      {
        const float ref = 1.5f * m.decoded[size_t(rows_read[t] * k + j)];
        ASSERT_NEAR(y[t * size_t(k) + size_t(j)], ref, 1e-6f * std::fabs(ref) + 1e-30f) << type_name(type);
      }
  }
}

// Random bytes in the shape of `type`'s rows, each block's leading fp16
// scale(s) then overwritten by `scales(block)`: the bytes of a device-layout
// test (every bit pattern of the codes and packed scales occurs).
template <class SetScales>
HostMatrix random_bytes_matrix(GgmlType type, int64_t rows, int64_t k, std::mt19937& rng, SetScales scales) {
  const size_t block = type_info(type).block_bytes;
  HostMatrix m{type, rows, k, row_bytes(type, k), {}, {}};
  m.bytes.resize(m.stride * size_t(rows));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : m.bytes) b = uint8_t(byte(rng));
  for (size_t b = 0; b < m.bytes.size() / block; ++b) scales(b, m.bytes.data() + b * block);
  m.decoded.resize(size_t(rows * k));
  for (int64_t r = 0; r < rows; ++r)
    quant::dequantize_row(type, m.bytes.data() + size_t(r) * m.stride, m.decoded.data() + r * k, k);
  return m;
}

// Uploads `m` in its device layout, decodes every row there (gather_rows, the
// embedding lookup, reads the layout as every float decoder does) and expects
// the CPU's decoding of the file bit for bit: the tests' scales are powers of
// two and the codes small integers, exact in float on both sides. Returns the
// uploaded weights so a test can go on to products.
DeviceBuffer expect_device_layout_decodes_as_the_file(const HostMatrix& m, const Tables& tab, const std::string& what) {
  DeviceBuffer w = upload_in_device_layout(m.type, m.bytes, m.k);
  DeviceMatrix dm{m.type, w.get<uint8_t>(), m.k, m.rows, m.stride, 0};
  std::vector<int32_t> ids(static_cast<size_t>(m.rows));
  for (int32_t i = 0; i < int32_t(m.rows); ++i) ids[size_t(i)] = i;
  DeviceBuffer dids = upload(ids), dy(size_t(m.rows * m.k) * 4);
  EMBER_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));
  gather_rows(dm, tab.t, dids.get<int32_t>(), nullptr, m.rows, 1.f, dy.get<float>(), nullptr);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  const auto y = download<float>(dy, size_t(m.rows * m.k));
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(y[i], m.decoded[i]) << what << " element " << i;
    if (y[i] != m.decoded[i]) break;
  }
  return w;
}

// Q4_K's and Q5_K's scales and mins are re-encoded on the device
// (device_layout.h): every bit pattern of the 12 packed bytes must decode as
// the CPU decodes the file. Random bytes rather than a quantiser's output, so
// the high bits that sub-blocks 4..7 keep in bytes 0..7 take every value (and
// every fifth bit of Q5_K's codes).
TEST_F(CudaKernels, KQuantDeviceLayoutKeepsEveryScaleAndMin) {
  std::mt19937 rng(41);
  Tables tab;
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K}) {
    ASSERT_TRUE(has_device_layout(type));
    const HostMatrix m = random_bytes_matrix(type, 96, 512, rng, [](size_t, uint8_t* block) {
      const uint16_t d = 0x2400, dmin = 0x1C00;  // 2^-6, 2^-8: d and dmin lead both formats' blocks
      std::memcpy(block, &d, 2);
      std::memcpy(block + 2, &dmin, 2);
    });
    expect_device_layout_decodes_as_the_file(m, tab, type_name(type));
  }
}

// Q8_0's, Q4_0's and IQ4_NL's blocks are regrouped on the device, eight a
// group, codes before scales (block32_layout.cuh): every block of rows whose
// length is a multiple of 256 and of rows that end in a short group (or are
// one) must decode as the CPU decodes the file, and a row's last block must
// not read the next row's. Random code bytes, every block a different power
// of two as its scale, so a scale read from the wrong block shows.
TEST_F(CudaKernels, Block32DeviceLayoutKeepsEveryBlock) {
  std::mt19937 rng(43);
  Tables tab;
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::IQ4_NL}) {
    ASSERT_TRUE(has_device_layout(type));
    for (int64_t k : {768, 352, 96, 32}) {
      const int64_t rows = 29;
      const HostMatrix m = random_bytes_matrix(type, rows, k, rng, [](size_t b, uint8_t* block) {
        const uint16_t d = uint16_t(0x1C00 + ((b % 23) << 10));  // 2^-8 .. 2^14
        std::memcpy(block, &d, 2);
      });
      const std::string what = std::string(type_name(type)) + " k=" + std::to_string(k);
      DeviceBuffer w = expect_device_layout_decodes_as_the_file(m, tab, what);
      // The float product of rows that end in a short group, as every other format's.
      if (k % 256 != 0) {
        const DeviceMatrix dm{type, w.get<uint8_t>(), k, rows, m.stride, 0};
        const int64_t n = 3, ldy = rows;
        const std::vector<float> x = random_floats(n * k, rng);
        DeviceBuffer dx = upload(x), dp(size_t(n * ldy) * 4);
        EMBER_CUDA_CHECK(cudaMemset(dp.get(), 0xFF, dp.bytes()));
        gemv(dm, tab.t, dx.get<float>(), k, n, dp.get<float>(), ldy, nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        expect_products(m, download<float>(dp, size_t(n * ldy)), ldy, x.data(), n, what);
      }
    }
  }
}

TEST_F(CudaKernels, ArgmaxIsTheHostsGreedyChoice) {
  std::mt19937 rng(77);
  const int n = 151'936 - 5, ld = 151'936;
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < 6; ++i) rows.push_back(random_floats(ld, rng));
  for (auto& r : rows) r[size_t(n + 2)] = 1e30f;  // past n: ignored
  rows[1][100] = rows[1][90'000] = rows[1][5] = 50.f;                       // a three-way tie: 5 wins
  rows[2][n - 1] = 40.f;                                                     // the last counted id
  rows[3][123'456] = std::nanf("");                                          // NaN
  rows[4][7] = INFINITY;                                                     // +inf
  rows[5].assign(size_t(ld), -INFINITY);                                     // all masked
  std::vector<float> one(size_t(ld), -INFINITY);
  one[77'777] = -3.f;                                                        // one finite logit
  rows.push_back(one);
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  DeviceBuffer d_l = upload(flat), d_ids(rows.size() * 4), d_scratch(argmax_scratch_bytes(int64_t(rows.size())));
  EMBER_CUDA_CHECK(cudaMemset(d_scratch.get(), 0, d_scratch.bytes()));
  const std::vector<int32_t> expect_fixed = {-100, 5, n - 1, kPickNonFinite, kPickNonFinite, kPickAllMasked, 77'777};
  // Twice over the whole row (the scratch left ready by the first call), then over short prefixes (fewer slices).
  for (int width : {n, n, 70'001, 4'097, 33}) {
    EMBER_CUDA_CHECK(cudaMemset(d_ids.get(), 0x7F, d_ids.bytes()));
    argmax_rows(d_l.get<float>(), ld, int64_t(rows.size()), width, d_ids.get<int32_t>(), d_scratch.get<int32_t>(), nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto ids = download<int32_t>(d_ids, rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_EQ(ids[r], greedy_id(rows[r].data(), width)) << "row " << r << " of " << width;
      if (width == n && expect_fixed[r] != -100) {
        EXPECT_EQ(ids[r], expect_fixed[r]) << "row " << r;
      }
    }
  }
}

// The GPU's sampled picks against the host's pick_id() (engine/pick.h) on the
// same logits and draws: rows shaped like a model's (a few strong logits over
// a wide spread), flat ones (top-p keeps thousands), ties, masks, and the bad
// rows; every filter alone and together; greedy rows left to argmax_rows.
// The GPU sums weights as integers and the host in doubles, so a pick may
// differ only where a draw or a top-p share lies within rounding of a
// boundary: a handful in thousands at most.
TEST_F(CudaKernels, SamplingIsTheHostsPick) {
  std::mt19937 rng(91);
  const Pick filters[] = {{1.0f, 0, 1.0f, 0.0f},  {0.7f, 40, 1.0f, 0.0f}, {0.8f, 0, 0.9f, 0.0f},  {1.0f, 0, 1.0f, 0.05f},
                          {0.6f, 20, 0.8f, 0.02f}, {2.5f, 0, 0.99f, 0.0f}, {0.3f, 1, 1.0f, 0.0f}, {1.5f, 3000, 0.6f, 0.0f},
                          {0.05f, 0, 0.95f, 0.0f}, {1.0f, 100000, 1.0f, 0.0f}};
  int checked = 0, differ = 0;
  for (const int n : {151'936, 32'001, 1'000, 7}) {
    const int ld = n + 3;
    std::vector<std::vector<float>> rows;
    std::normal_distribution<float> wide(0.0f, 3.0f), narrow(0.0f, 0.05f);
    std::vector<float> r(static_cast<size_t>(ld));
    for (auto& v : r) v = wide(rng);
    for (int j = 0; j < 5; ++j) r[size_t(rng() % unsigned(n))] = 18.0f + float(j);  // a few strong candidates
    rows.push_back(r);
    for (auto& v : r) v = narrow(rng);  // flat
    rows.push_back(r);
    for (auto& v : r) v = std::round(wide(rng));  // ties everywhere
    rows.push_back(r);
    for (size_t i = 0; i < r.size(); ++i) r[i] = i % 3 == 1 ? wide(rng) : -INFINITY;  // masked
    rows.push_back(r);
    r.assign(r.size(), 1.0f);
    r[size_t(n / 2)] = std::nanf("");
    rows.push_back(r);
    r[size_t(n / 2)] = INFINITY;
    rows.push_back(r);
    r.assign(r.size(), -INFINITY);
    rows.push_back(r);
    r[size_t(n - 1)] = -2.0f;  // one finite logit, the last counted id
    rows.push_back(r);
    for (auto& row : rows) row[size_t(n + 1)] = 1e30f;  // past n: ignored
    std::vector<float> flat;
    for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
    DeviceBuffer d_l = upload(flat), d_ids(rows.size() * 4), d_picks(rows.size() * sizeof(DevicePick));
    PickScratch scratch(ld);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (const Pick& f : filters)
      for (int d = 0; d < 12; ++d) {
        std::vector<DevicePick> picks;
        std::vector<Pick> host;
        for (size_t i = 0; i < rows.size(); ++i) {
          Pick p = f;
          p.draw = d == 0 ? 0.0 : d == 1 ? std::nextafter(1.0, 0.0) : u(rng);
          if (i == 2 && d % 4 == 3) p.temperature = 0.0f;  // a greedy row among sampled ones: not touched
          host.push_back(p);
          picks.push_back(device_pick(p));
        }
        EMBER_CUDA_CHECK(cudaMemcpy(d_picks.get(), picks.data(), d_picks.bytes(), cudaMemcpyHostToDevice));
        EMBER_CUDA_CHECK(cudaMemset(d_ids.get(), 0x7F, d_ids.bytes()));
        sample_rows(d_l.get<float>(), ld, int64_t(rows.size()), n, d_picks.get<DevicePick>(), d_ids.get<int32_t>(), nullptr);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
        const auto ids = download<int32_t>(d_ids, rows.size());
        for (size_t i = 0; i < rows.size(); ++i) {
          if (host[i].greedy()) {
            EXPECT_EQ(ids[i], 0x7F7F7F7F) << "a greedy row was written";
            continue;
          }
          const int32_t want = pick_id(rows[i].data(), n, host[i], scratch);
          ++checked;
          if (i >= 4) {  // the bad rows and the single candidate: exact
            EXPECT_EQ(ids[i], want) << "n " << n << " row " << i << " T " << f.temperature << " draw " << host[i].draw;
          } else if (ids[i] != want) {
            ++differ;
            std::printf("sampled pick differs: n %d row %zu T %g top-k %d top-p %g min-p %g draw %.17g: GPU %d, host %d\n", n, i,
                        double(f.temperature), f.top_k, double(f.top_p), double(f.min_p), host[i].draw, ids[i], want);
          }
        }
      }
  }
  EXPECT_EQ(checked, 4 * 10 * 12 * 8 - 4 * 10 * 3);
  EXPECT_LE(differ, checked / 500) << differ << " of " << checked << " sampled picks differ from the host's";
}

// Samples each of `rows` (n logits each) on the GPU with every filter and
// draw, against pick_id's choice; returns how many picks differ (printed).
int sampled_picks_differ(const std::vector<std::vector<float>>& rows, int n, const std::vector<Pick>& filters,
                         const std::vector<double>& draws, const char* what) {
  std::vector<float> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  DeviceBuffer d_l = upload(flat), d_ids(rows.size() * 4), d_picks(rows.size() * sizeof(DevicePick));
  PickScratch scratch(n);
  int differ = 0;
  for (const Pick& f : filters)
    for (const double draw : draws) {
      Pick p = f;
      p.draw = draw;
      const std::vector<DevicePick> picks(rows.size(), device_pick(p));
      EMBER_CUDA_CHECK(cudaMemcpy(d_picks.get(), picks.data(), d_picks.bytes(), cudaMemcpyHostToDevice));
      EMBER_CUDA_CHECK(cudaMemset(d_ids.get(), 0x7F, d_ids.bytes()));
      sample_rows(d_l.get<float>(), n, int64_t(rows.size()), n, d_picks.get<DevicePick>(), d_ids.get<int32_t>(), nullptr);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      const auto ids = download<int32_t>(d_ids, rows.size());
      for (size_t row = 0; row < rows.size(); ++row) {
        const int32_t want = pick_id(rows[row].data(), n, p, scratch);
        if (ids[row] != want) {
          ++differ;
          std::printf("%s: n %d row %zu top-k %d top-p %g draw %g: GPU %d, host %d\n", what, n, row, p.top_k, double(p.top_p), draw,
                      ids[row], want);
        }
      }
    }
  return differ;
}

// The longest rows: 262,144 logits (Gemma's vocabulary: eight blocks, each
// keeping as much of the row as it can), one more (clusters of sixteen) and
// the largest sample_rows takes; model-like and flat rows.
TEST_F(CudaKernels, SamplingOfTheLongestRows) {
  std::mt19937 rng(17);
  const std::vector<Pick> filters = {{0.7f, 0, 0.9f, 0.0f}, {0.8f, 40, 0.95f, 0.05f}, {1.0f, 0, 1.0f, 0.0f}};
  for (const int n : {262'144, 262'145, kMaxSampledVocab}) {
    std::normal_distribution<float> wide(0.0f, 3.0f), narrow(0.0f, 0.05f);
    std::vector<std::vector<float>> rows(2, std::vector<float>(static_cast<size_t>(n)));
    for (auto& v : rows[0]) v = wide(rng);
    for (int j = 0; j < 5; ++j) rows[0][size_t(rng() % unsigned(n))] = 18.0f + float(j);
    for (auto& v : rows[1]) v = narrow(rng);
    EXPECT_LE(sampled_picks_differ(rows, n, filters, {0.0, 0.37, std::nextafter(1.0, 0.0)}, "long row"), 1) << "of 18 picks, n " << n;
  }
}

// Rows whose end of the kept prefix falls among many equal logits (3,000 of
// 5,000): the radix select down to one key, and the walk among equal logits;
// beside them a row without ties.
std::vector<std::vector<float>> radix_rows() {
  std::mt19937 rng(5);
  const int n = 5'000;
  std::normal_distribution<float> low(-3.0f, 1.0f);
  std::vector<std::vector<float>> rows(2, std::vector<float>(static_cast<size_t>(n)));
  for (int i = 0; i < n; ++i) rows[0][size_t(i)] = i % 5 < 3 ? 1.0f : low(rng);
  for (auto& v : rows[1]) v = low(rng);
  return rows;
}

TEST_F(CudaKernels, SamplingRadixPathMatchesTheHost) {
  const std::vector<Pick> filters = {{1.0f, 0, 0.5f, 0.0f}, {1.0f, 1250, 1.0f, 0.0f}, {0.9f, 2750, 0.7f, 0.0f}, {1.0f, 0, 1.0f, 0.0f}};
  EXPECT_LE(sampled_picks_differ(radix_rows(), 5'000, filters, {0.0, 0.3, 0.61, 0.999}, "radix path"), 1) << "of 32 picks";
}

// Two of those picks (top-k and top-p ending among ties), for racecheck: the
// cluster's blocks read each other's shared memory at every step.
TEST_F(CudaKernels, SamplingUnderRacecheck) {
  EXPECT_EQ(sampled_picks_differ(radix_rows(), 5'000, {{0.9f, 2750, 0.7f, 0.0f}}, {0.61}, "racecheck rows"), 0);
}

}  // namespace
}  // namespace ember::cuda
