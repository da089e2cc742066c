#include "engine/block_allocator.h"

#include <gtest/gtest.h>

#include "util/error.h"

using namespace ember;

TEST(BlockAllocator, AllocatesSharesAndFrees) {
  BlockAllocator a(3);
  EXPECT_EQ(a.free_blocks(), 3);
  const int x = a.allocate(), y = a.allocate();
  EXPECT_NE(x, y);
  EXPECT_EQ(a.ref_count(x), 1);
  a.retain(x);  // a second owner
  a.release(x);
  EXPECT_EQ(a.free_blocks(), 1);
  EXPECT_EQ(a.ref_count(x), 1);
  a.release(x);
  EXPECT_EQ(a.free_blocks(), 2);
  EXPECT_GE(a.allocate(), 0);
  EXPECT_GE(a.allocate(), 0);
  EXPECT_EQ(a.allocate(), -1);  // full
  EXPECT_EQ(a.used_blocks(), 3);
}

TEST(BlockAllocator, CatchesDoubleReleaseAndBadIds) {
  BlockAllocator a(2);
  const int x = a.allocate();
  a.release(x);
  EXPECT_THROW(a.release(x), Error);  // released twice
  EXPECT_THROW(a.retain(x), Error);   // retaining a free block
  EXPECT_THROW(a.release(5), Error);
  EXPECT_THROW(a.release(-1), Error);
  EXPECT_EQ(a.free_blocks(), 2);  // the failed calls changed nothing
  EXPECT_THROW(BlockAllocator(0), Error);
}
