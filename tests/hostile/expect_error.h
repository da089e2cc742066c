// EXPECT_CLEAR_ERROR(statement, {"part", ...}): the statement throws
// ember::Error whose message is one short line holding every part.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error.h"

namespace ember::hostile {

inline ::testing::AssertionResult clear_error(const std::string& what, const std::vector<std::string>& parts) {
  if (what.find('\n') != std::string::npos) return ::testing::AssertionFailure() << "message spans lines: " << what;
  if (what.size() > 400) return ::testing::AssertionFailure() << "message is " << what.size() << " bytes long";
  for (const auto& p : parts)
    if (what.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks '" << p << "': " << what;
  return ::testing::AssertionSuccess();
}

}  // namespace ember::hostile

#define EXPECT_CLEAR_ERROR(statement, ...)                                                  \
  do {                                                                                      \
    try {                                                                                   \
      statement;                                                                            \
      ADD_FAILURE() << "no error from: " #statement;                                        \
    } catch (const ::ember::Error& e) {                                                     \
      EXPECT_TRUE(::ember::hostile::clear_error(e.what(), std::vector<std::string> __VA_ARGS__)); \
    }                                                                                       \
  } while (0)
