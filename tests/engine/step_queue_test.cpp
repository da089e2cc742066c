// The rules of steps queued on a backend (engine/backend.h, StepQueue).
#include <gtest/gtest.h>

#include "engine/backend.h"
#include "util/error.h"

using namespace ember;

TEST(StepQueue, TwoStepsAtMostOldestFirst) {
  StepQueue q;
  EXPECT_EQ(q.last(), -1);
  EXPECT_EQ(q.last_picked_rows(), 0);
  EXPECT_THROW(q.pop(), Error);
  for (int round = 0; round < 3; ++round) {  // the slots wrap around
    const int a = q.next_slot();
    q.push(a, 0, 5);
    const int b = q.next_slot();
    EXPECT_NE(a, b);
    q.push(b, 0, 3);
    EXPECT_EQ(q.last(), b);
    EXPECT_EQ(q.last_picked_rows(), 3);
    EXPECT_THROW(q.next_slot(), Error) << "a third step";
    EXPECT_EQ(q.pop(), a);
    EXPECT_EQ(q.queued(), 1);
    EXPECT_EQ(q.last(), b) << "the step submitted last, still";
    EXPECT_EQ(q.pop(), b);
    EXPECT_THROW(q.pop(), Error);
    EXPECT_EQ(q.last_picked_rows(), 3) << "picks stay readable after their step was waited for";
  }
}

TEST(StepQueue, NothingQueuesBehindLogitRows) {
  StepQueue q;
  q.push(q.next_slot(), 2, 0);
  EXPECT_THROW(q.next_slot(), Error);
  q.pop();
  q.push(q.next_slot(), 0, 1);  // once waited for, the next may come
  EXPECT_NO_THROW(q.next_slot());
}
