// The attention kernels against a float64 reference over the same paged KV
// blocks: a prefix already cached plus a long chunk, a short prompt, and
// decoding tokens at 200, 300-301, 1,100 and 9,000 positions in one step; blocks in
// a shuffled order, outputs poisoned, grouped-query heads, head dims that are
// and are not multiples of the tiles, a sliding window and soft-capping. Keys
// and values are random 16-bit numbers; the reference reads exactly those.
// attention() sends contexts of up to kClusterContext positions to the
// cluster kernel where the head layout fits it (cluster_attention_fits) and
// the rest to the split kernel.
//
// Bounds, ||out - ref|| / ||ref||:
// - attention() (cluster and split kernels): 1e-5, float sums over the same numbers in another order;
// - flash kernel: 4e-3 with F16, 2.5e-2 with BF16. It rounds the queries and the
//   probabilities to the KV type (2^-11 and 2^-8 relative per element), the
//   rest is float.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/int8_acts.h"
#include "cuda_test_buffers.h"

namespace ember::cuda {
namespace {

using test::download;
using test::upload;

// A 16-bit element of the KV type and its value as a float.
uint16_t to_bits(KvType t, float x, float& value) {
  uint16_t bits;
  if (t == KvType::F16) {
    const __half h = __float2half_rn(x);
    std::memcpy(&bits, &h, 2);
    value = __half2float(h);
  } else {
    const __nv_bfloat16 b = __float2bfloat16_rn(x);
    std::memcpy(&bits, &b, 2);
    value = __bfloat162float(b);
  }
  return bits;
}

struct Seq {
  int cached, n_new;  // positions already in the cache, tokens in this step
};

struct Case {
  KvType type;
  int head_dim, n_heads, n_kv_heads;
  int window = 0;
  float softcap = 0.f;
  std::string name() const {
    return std::string(type == KvType::F16 ? "F16" : "BF16") + " head_dim " + std::to_string(head_dim) + " heads " +
           std::to_string(n_heads) + "/" + std::to_string(n_kv_heads) + (window ? " window " + std::to_string(window) : "") +
           (softcap > 0 ? " softcap" : "");
  }
};

constexpr int kBlock = 16;
// Sequence 2 decodes a token at position 200 (the cluster kernel's, in 8
// slices, where the layout fits), sequence 4 two at 300 and 301 (16 slices),
// sequence 5 one at 1,100 (past kClusterContext: the split kernel's, splits
// of 24 positions), sequence 6 one at 9,000 (splits of 144 positions: several
// chunks of the split kernel's staging, the last one partial).
const std::vector<Seq> kSeqs = {{37, 150}, {0, 70}, {200, 1}, {5, 64}, {300, 2}, {1100, 1}, {9000, 1}};

// One step of several sequences over a shuffled KV pool, with the reference.
struct Step {
  Case c;
  int kv_dim, n_tok = 0;
  std::vector<int32_t> pos, seq, table_off, tables, flash_tiles, seq_start;
  std::vector<float> q, kval, vval;  // kval/vval: per sequence, per position, kv_dim values as stored
  std::vector<int> seq_kv_off;       // where each sequence's positions start in kval/vval
  DeviceBuffer d_pos, d_seq, d_off, d_tab, d_start, d_tiles, d_q, d_kv, d_out, d_part;
  KvLayer kv;
  StepIndex ix;
  int n_splits = 0, longest = 0;

  Step(const Case& cs, std::mt19937& rng) : c(cs), kv_dim(cs.n_kv_heads * cs.head_dim) {
    std::normal_distribution<float> nd(0.f, 1.f);
    int n_blocks = 0;
    for (const Seq& s : kSeqs) n_blocks += (s.cached + s.n_new + kBlock - 1) / kBlock;
    std::vector<int32_t> perm(size_t(n_blocks) + 3);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const size_t half = size_t(kBlock) * size_t(kv_dim);
    std::vector<uint16_t> pool(perm.size() * 2 * half);
    for (uint16_t& b : pool) b = 0x7FFF;  // NaN in both types: a read of an unwritten element shows
    int next = 0;
    for (size_t si = 0; si < kSeqs.size(); ++si) {
      const Seq& s = kSeqs[si];
      const int len = s.cached + s.n_new, nb = (len + kBlock - 1) / kBlock;
      table_off.push_back(int32_t(tables.size()));
      seq_start.push_back(s.cached);
      for (int b = 0; b < nb; ++b) tables.push_back(perm[size_t(next++)]);
      seq_kv_off.push_back(int(kval.size() / size_t(kv_dim)));
      for (int p = 0; p < len; ++p)
        for (int kvsel = 0; kvsel < 2; ++kvsel)
          for (int i = 0; i < kv_dim; ++i) {
            float v;
            const uint16_t bits = to_bits(c.type, nd(rng), v);
            const int32_t block = tables[size_t(table_off.back() + p / kBlock)];
            pool[(size_t(block) * 2 + size_t(kvsel)) * half + size_t(p % kBlock) * size_t(kv_dim) + size_t(i)] = bits;
            (kvsel ? vval : kval).push_back(v);
          }
      for (int i = 0; i < s.n_new; i += kFlashRows) {
        flash_tiles.push_back(n_tok + i);
        flash_tiles.push_back(std::min(kFlashRows, s.n_new - i));
      }
      for (int i = 0; i < s.n_new; ++i, ++n_tok) {
        pos.push_back(s.cached + i);
        seq.push_back(int32_t(si));
        n_splits = std::max(n_splits, attention_splits(s.cached + i + 1));
        longest = std::max(longest, s.cached + i + 1);
      }
    }
    q.resize(size_t(n_tok) * size_t(c.n_heads * c.head_dim));
    for (float& x : q) x = nd(rng);
    d_pos = upload(pos); d_seq = upload(seq); d_off = upload(table_off); d_tab = upload(tables); d_start = upload(seq_start);
    d_tiles = upload(flash_tiles); d_q = upload(q); d_kv = upload(pool);
    d_out = DeviceBuffer(q.size() * sizeof(float));
    d_part = DeviceBuffer(size_t(kAttentionTokens) * size_t(c.n_heads) * size_t(n_splits) * size_t(c.head_dim + 2) * 4);
    kv = {d_kv.get(), c.type, kBlock, kv_dim, int64_t(half)};
    ix = {d_pos.get<int32_t>(), d_seq.get<int32_t>(), d_off.get<int32_t>(), d_tab.get<int32_t>(), d_start.get<int32_t>()};
  }

  AttnArgs args() const {
    AttnArgs a;
    a.q = d_q.get<float>();
    a.out = d_out.get<float>();
    a.partial = d_part.get<float>();
    a.n_heads = c.n_heads; a.n_kv_heads = c.n_kv_heads; a.head_dim = c.head_dim;
    a.scale = 1.f / std::sqrt(float(c.head_dim));
    a.softcap = c.softcap;
    a.sliding_window = c.window;
    a.n_splits = n_splits;
    a.context_class = attention_context_class(longest);
    return a;
  }

  // Runs one kernel over every token (flash: the tiles given) and returns the output.
  std::vector<float> run(bool flash, const std::vector<int32_t>& tiles = {}) {
    EMBER_CUDA_CHECK(cudaMemset(d_out.get(), 0xFF, d_out.bytes()));
    if (flash) {
      DeviceBuffer dt = upload(tiles);
      flash_attention(args(), ix, kv, dt.get<int32_t>(), int(tiles.size() / 2), nullptr);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    } else {
      attention(args(), ix, kv, n_tok, nullptr);
      EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    }
    std::vector<float> out(q.size());
    EMBER_CUDA_CHECK(cudaMemcpy(out.data(), d_out.get(), d_out.bytes(), cudaMemcpyDeviceToHost));
    return out;
  }

  std::vector<double> reference() const {
    const int hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
    std::vector<double> ref(q.size());
    for (int t = 0; t < n_tok; ++t) {
      const int last = pos[size_t(t)], first = c.window > 0 ? std::max(0, last - c.window + 1) : 0;
      const size_t base = size_t(seq_kv_off[size_t(seq[size_t(t)])]);
      for (int h = 0; h < c.n_heads; ++h) {
        const float* qr = q.data() + (size_t(t) * size_t(c.n_heads) + size_t(h)) * size_t(hd);
        const size_t off = size_t(h / group * hd);
        std::vector<double> sc;
        double mx = -INFINITY;
        for (int p = first; p <= last; ++p) {
          double s = 0;
          for (int d = 0; d < hd; ++d) s += double(qr[d]) * kval[(base + size_t(p)) * size_t(kv_dim) + off + size_t(d)];
          s /= std::sqrt(double(hd));
          if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
          sc.push_back(s);
          mx = std::max(mx, s);
        }
        double den = 0;
        for (double& s : sc) den += (s = std::exp(s - mx));
        for (int d = 0; d < hd; ++d) {
          double o = 0;
          for (int p = first; p <= last; ++p)
            o += sc[size_t(p - first)] * vval[(base + size_t(p)) * size_t(kv_dim) + off + size_t(d)];
          ref[(size_t(t) * size_t(c.n_heads) + size_t(h)) * size_t(hd) + size_t(d)] = o / den;
        }
      }
    }
    return ref;
  }

  // Error over the tokens that took a kernel (flash: those in `tiles`); the others must stay poisoned.
  double rel_error(const std::vector<float>& out, const std::vector<double>& ref, const std::vector<int32_t>* tiles) const {
    std::vector<bool> covered(size_t(n_tok), tiles == nullptr);
    if (tiles)
      for (size_t i = 0; i < tiles->size(); i += 2)
        for (int r = 0; r < (*tiles)[i + 1]; ++r) covered[size_t((*tiles)[i] + r)] = true;
    const size_t row = size_t(c.n_heads * c.head_dim);
    double num = 0, den = 0;
    for (int t = 0; t < n_tok; ++t)
      for (size_t i = size_t(t) * row; i < size_t(t + 1) * row; ++i) {
        if (!covered[size_t(t)]) {
          if (!std::isnan(out[i])) return INFINITY;  // wrote a token outside its tiles
          continue;
        }
        if (!std::isfinite(out[i])) return INFINITY;
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
      }
    return std::sqrt(num / den);
  }
};

std::vector<Case> cases() {
  std::vector<Case> v;
  for (KvType t : {KvType::F16, KvType::BF16}) {
    v.push_back({t, 128, 8, 2});
    v.push_back({t, 64, 4, 4});
    v.push_back({t, 80, 6, 2});  // head_dim padded to the 128 kernel
    v.push_back({t, 256, 4, 1});
    v.push_back({t, 16, 8, 2});  // many heads per merge block
    v.push_back({t, 64, 16, 4});   // the cluster kernel: one int8 block per group
    v.push_back({t, 128, 32, 4});  // eight query heads per key/value head
    v.push_back({t, 128, 32, 1});  // 32: eight warps of four heads each; 16 int8 blocks per group
    v.push_back({t, 128, 8, 2, 50, 0.f});
    v.push_back({t, 128, 8, 2, 0, 20.f});
  }
  return v;
}

class CudaAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CudaAttention, BothKernelsMatchTheReference) {
  std::mt19937 rng(41);
  for (const Case& c : cases()) {
    Step st(c, rng);
    const std::vector<double> ref = st.reference();
    const double split_err = st.rel_error(st.run(false), ref, nullptr);
    // The flash kernel takes the sequences with more than kFlashRows tokens, as the backend gives it.
    std::vector<int32_t> tiles;
    for (size_t i = 0; i < st.flash_tiles.size(); i += 2)
      if (kSeqs[size_t(st.seq[size_t(st.flash_tiles[i])])].n_new > kFlashRows)
        tiles.insert(tiles.end(), {st.flash_tiles[i], st.flash_tiles[i + 1]});
    const double flash_err = st.rel_error(st.run(true, tiles), ref, &tiles);
    const double flash_bound = c.type == KvType::F16 ? 4e-3 : 2.5e-2;
    std::printf("%-40s %s %.2e  flash %.2e (bound %.1e)\n", c.name().c_str(),
                cluster_attention_fits(c.n_heads, c.n_kv_heads, c.head_dim) ? "cluster+split" : "split", split_err,
                flash_err, flash_bound);
    EXPECT_LE(split_err, 1e-5) << c.name();
    EXPECT_LE(flash_err, flash_bound) << c.name();
  }
}

// A row's result is the same bits whichever tile holds it: tiles cut at other
// places (one row, 17 rows, 64 rows) give each row exactly the same output, so
// how the engine chunks a prompt never changes what it computes.
TEST_F(CudaAttention, FlashRowsDoNotDependOnTheirTile) {
  std::mt19937 rng(42);
  for (const Case& c : {Case{KvType::BF16, 128, 8, 2}, Case{KvType::F16, 64, 4, 4, 50, 0.f}}) {
    Step st(c, rng);
    const std::vector<float> a = st.run(true, st.flash_tiles);
    std::vector<int32_t> other;
    int t = 0;
    for (const Seq& s : kSeqs) {
      for (int i = 0, k = 0; i < s.n_new; ++k) {
        const int n = std::min({k % 3 == 0 ? 1 : k % 3 == 1 ? 17 : 64, s.n_new - i});
        other.insert(other.end(), {t + i, n});
        i += n;
      }
      t += s.n_new;
    }
    const std::vector<float> b = st.run(true, other);
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << c.name();
    for (float x : a) ASSERT_TRUE(std::isfinite(x)) << c.name();
  }
}

// A token's result is the same bits alone or in a batch, and whatever the
// step's split grid, context class and blocks a cluster: the cluster kernel
// cuts its slices from the token's own context (the kernel of 16 gives a
// short context the same 8 slices as the kernel of 8) and sums each alone
// whichever block takes it, the split kernel sizes its splits so, and the
// grid's blocks past them count for nothing. The last layout has 32 query
// heads to a key/value head: each warp takes four, each over several slices. A short context (position
// 200), a longer one (301: 16 slices) where the layout fits the cluster
// kernel, and two past it (1,100 and 9,000: split, the latter's splits
// staged in several chunks); also in a sliding window of 50 (the split kernel
// then splits the window alone).
TEST_F(CudaAttention, ResultOfATokenDoesNotDependOnTheBatch) {
  std::mt19937 rng(43);
  for (const Case& c : {Case{KvType::F16, 128, 8, 2}, Case{KvType::BF16, 64, 4, 4}, Case{KvType::F16, 128, 8, 2, 50, 0.f},
                        Case{KvType::BF16, 128, 32, 1}}) {
    Step st(c, rng);
    const std::vector<float> all = st.run(false);
    const size_t row = size_t(st.c.n_heads * st.c.head_dim);
    const int short_t = kSeqs[0].n_new + kSeqs[1].n_new, mid_t = short_t + kSeqs[2].n_new + kSeqs[3].n_new + 1;
    const int long_t = mid_t + 1, longer_t = long_t + 1;
    ASSERT_EQ(st.pos[size_t(short_t)], 200);
    ASSERT_EQ(st.pos[size_t(mid_t)], 301);
    ASSERT_EQ(st.pos[size_t(long_t)], 1100);
    ASSERT_EQ(st.pos[size_t(longer_t)], 9000);
    ASSERT_EQ(st.args().context_class, attention_context_class(kClusterContext + 1));
    DeviceBuffer d_part(size_t(st.c.n_heads) * size_t(kAttentionMaxSplits) * size_t(st.c.head_dim + 2) * 4);
    for (const int t : {short_t, mid_t, long_t, longer_t}) {
      const int own = attention_splits(st.pos[size_t(t)] + 1);
      std::vector<int32_t> one = {t};
      DeviceBuffer d_one = upload(one);
      // Alone: its own class, and a short context also in the kernel of 16 slices.
      const int own_class = attention_context_class(st.pos[size_t(t)] + 1);
      std::vector<int> classes = {own_class};
      if (own_class == kClusterShort) classes.push_back(kClusterContext);
      for (const int klass : classes) {
        const int slices = klass <= kClusterShort ? kClusterShortSlices : kClusterSlices;
        for (const int grid : {own, attention_split_grid(own), kAttentionMaxSplits})
          for (int blocks = slices; blocks >= slices / kClusterMaxSlicesPerBlock; blocks /= 2) {
            AttnArgs a = st.args();
            a.tokens = d_one.get<int32_t>();
            a.partial = d_part.get<float>();
            a.n_splits = grid;
            a.context_class = klass;
            a.cluster_blocks = blocks;
            EMBER_CUDA_CHECK(cudaMemset(d_part.get(), 0xFF, d_part.bytes()));  // NaNs wherever a split is not written
            EMBER_CUDA_CHECK(cudaMemset(st.d_out.get(), 0xFF, st.d_out.bytes()));
            attention(a, st.ix, st.kv, 1, nullptr);
            EMBER_CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<float> solo(row);
            EMBER_CUDA_CHECK(
                cudaMemcpy(solo.data(), st.d_out.get<float>() + size_t(t) * row, row * 4, cudaMemcpyDeviceToHost));
            ASSERT_EQ(std::memcmp(solo.data(), all.data() + size_t(t) * row, row * 4), 0)
                << c.name() << " position " << st.pos[size_t(t)] << " class " << klass << " split grid " << grid << ", "
                << blocks << " blocks a cluster";
          }
      }
    }
  }
}

// With int8 rows to fill, the merge kernel and the cluster kernel round their
// 256-element blocks: the rows' codes, scales and sums are the bits the
// rounding kernel makes of the same output, and the float output is
// unchanged. Heads of 80 elements straddle the 256-element blocks (split
// kernel only); the first three layouts take the cluster kernel for their
// short contexts.
TEST_F(CudaAttention, RoundedOutputIsTheRoundingKernelsBits) {
  std::mt19937 rng(45);
  for (const Case& c : {Case{KvType::F16, 128, 8, 2}, Case{KvType::BF16, 64, 16, 4}, Case{KvType::F16, 256, 4, 4},
                        Case{KvType::BF16, 80, 16, 8}, Case{KvType::F16, 16, 32, 8}}) {
    Step st(c, rng);
    const std::vector<float> plain = st.run(false);
    const int64_t k = int64_t(c.n_heads) * c.head_dim;
    const size_t bytes = int8_acts_bytes(st.n_tok, k);
    DeviceBuffer fused(bytes), separate(bytes);
    EMBER_CUDA_CHECK(cudaMemset(fused.get(), 0x5A, bytes));
    EMBER_CUDA_CHECK(cudaMemset(separate.get(), 0x5A, bytes));
    AttnArgs a = st.args();
    a.round = int8_acts_view(st.n_tok, k, fused.get());
    EMBER_CUDA_CHECK(cudaMemset(st.d_out.get(), 0xFF, st.d_out.bytes()));
    attention(a, st.ix, st.kv, st.n_tok, nullptr);
    quantize_int8_acts(st.d_out.get<float>(), k, st.n_tok, k, separate.get(), nullptr);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const auto out = download<float>(st.d_out, plain.size());
    EXPECT_EQ(0, std::memcmp(out.data(), plain.data(), plain.size() * sizeof(float))) << c.name();
    const auto f = download<uint8_t>(fused, bytes), sep = download<uint8_t>(separate, bytes);
    EXPECT_EQ(f, sep) << c.name();
  }
}

TEST(AttentionSplits, CoverEveryContextWithinTheLimit) {
  for (int n = 1; n <= 1 << 20; n += 1 + n / 7) {
    const int split = attention_split(n), k = attention_splits(n);
    ASSERT_GE(split, 16) << n;
    ASSERT_EQ(split % 8, 0) << n;
    ASSERT_LE(k, kAttentionMaxSplits) << n;
    ASSERT_GE(int64_t(k) * split, n) << n;
    ASSERT_LT(int64_t(k - 1) * split, n) << n;
    const int grid = attention_split_grid(k);
    ASSERT_GE(grid, k) << n;
    ASSERT_LT(grid, 2 * k) << n;
    ASSERT_LE(grid, kAttentionMaxSplits) << n;
    ASSERT_EQ(grid & (grid - 1), 0) << n;
  }
}

}  // namespace
}  // namespace ember::cuda
