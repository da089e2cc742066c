#include "engine/kv_pool.h"

#include <gtest/gtest.h>

#include "util/error.h"

using namespace ember;

TEST(KvPool, AllocatesReleasesAndShares) {
  ModelDesc d;
  d.n_layers = 2;
  d.n_kv_heads = 2;
  d.head_dim = 4;
  KvPool kv(d, 3, 16);
  EXPECT_EQ(kv.free_blocks(), 3);
  const int a = kv.allocate(), b = kv.allocate();
  EXPECT_NE(a, b);
  kv.retain(a);  // shared by a second sequence
  kv.release(a);
  EXPECT_EQ(kv.free_blocks(), 1);
  kv.release(a);
  EXPECT_EQ(kv.free_blocks(), 2);
  // Blocks of different layers never overlap.
  kv.keys(0, b)[0] = 1.0f;
  kv.keys(1, b)[0] = 2.0f;
  kv.values(0, b)[0] = 3.0f;
  EXPECT_EQ(kv.keys(0, b)[0], 1.0f);
  EXPECT_EQ(kv.keys(1, b)[0], 2.0f);
}

TEST(KvPool, ReserveFailsClearlyWhenFull) {
  ModelDesc d;
  d.n_layers = 1;
  d.n_kv_heads = 1;
  d.head_dim = 2;
  KvPool kv(d, 2, 16);
  std::vector<int32_t> table;
  kv.reserve(table, 32);
  EXPECT_EQ(table.size(), 2u);
  std::vector<int32_t> other;
  EXPECT_THROW(kv.reserve(other, 1), Error);
}
