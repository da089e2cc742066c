#include "engine/stop_strings.h"

#include <gtest/gtest.h>

using ember::StopStringFilter;

TEST(StopStrings, HoldsBackPossibleStartsAndCutsAtTheStop) {
  StopStringFilter f({"END", "</s>"});
  bool stopped = false;
  std::string shown = f.push("Hello wor", stopped);
  shown += f.push("ld E", stopped);
  EXPECT_EQ(shown, "Hello world ");  // "E" may begin "END": held back
  EXPECT_FALSE(stopped);
  shown += f.push("ND and more", stopped);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(shown, "Hello world ");
}

TEST(StopStrings, ReleasesTextThatTurnsOutHarmless) {
  StopStringFilter f({"END"});
  bool stopped = false;
  std::string shown = f.push("an E", stopped);
  shown += f.push("gg", stopped);
  shown += f.flush();
  EXPECT_FALSE(stopped);
  EXPECT_EQ(shown, "an Egg");
}
