// Admission: --parallel running plus --max-waiting queued, then 429 until one leaves.
#include <gtest/gtest.h>

#include "server/server_context.h"

using ember::server::ServerContext;

TEST(Admission, RefusesBeyondParallelPlusWaitingUntilOneLeaves) {
  ServerContext ctx;
  ctx.parallel = 2;
  ctx.opt.max_waiting = 1;
  EXPECT_TRUE(ctx.admit());
  EXPECT_TRUE(ctx.admit());
  EXPECT_TRUE(ctx.admit());
  EXPECT_FALSE(ctx.admit());
  ctx.leave();
  EXPECT_TRUE(ctx.admit());
  EXPECT_FALSE(ctx.admit());
}
