// Added-token matching: the automaton finds at every position the longest
// spelling that starts there, as trying every spelling at every position does,
// and the tokenizer splits leftmost-longest on it.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/impl.h"
#include "tokenizer/tokenizer.h"

namespace ember {
namespace {

struct Found { size_t pos, len; int32_t index; bool operator==(const Found&) const = default; };

// Every position, every spelling: the longest wins, a later index on equal spellings.
std::vector<Found> brute_force(const std::string& text, const std::vector<std::string>& spellings) {
  std::vector<Found> out;
  for (size_t j = 0; j < text.size(); ++j) {
    Found best{j, 0, -1};
    for (size_t k = 0; k < spellings.size(); ++k)
      if (spellings[k].size() >= best.len && text.compare(j, spellings[k].size(), spellings[k]) == 0)
        best = {j, spellings[k].size(), int32_t(k)};
    if (best.len > 0) out.push_back(best);
  }
  return out;
}

std::vector<Found> with_matcher(const std::string& text, const AddedTokenMatcher& m, size_t block) {
  std::vector<Found> out;
  std::vector<AddedTokenMatcher::Start> found;
  for (size_t b = 0; b < text.size(); b += block) {
    m.starts(text, b, std::min(text.size(), b + block), found);
    for (const auto& s : found) out.push_back({s.pos, s.len, s.index});
  }
  return out;
}

TEST(AddedTokenMatcher, LongestAtEveryPositionAsBruteForce) {
  std::mt19937 rng(5);
  for (int round = 0; round < 30; ++round) {
    // Many spellings over a small alphabet, sharing long prefixes and suffixes, some repeated.
    const std::string alphabet = round % 2 ? "ab" : "ab<|>\xE4\xB8\xAD";
    std::vector<std::string> spellings;
    const int count = 5 + int(rng() % 200);
    for (int k = 0; k < count; ++k) {
      std::string s;
      const size_t len = 1 + rng() % (round % 3 == 0 ? 40 : 8);
      for (size_t c = 0; c < len; ++c) s += alphabet[rng() % alphabet.size()];
      spellings.push_back(rng() % 10 == 0 && !spellings.empty() ? spellings[rng() % spellings.size()] : s);
    }
    AddedTokenMatcher m;
    for (size_t k = 0; k < spellings.size(); ++k) m.add(spellings[k], int32_t(k));
    m.build();
    std::string text;
    for (size_t c = 0, n = 200 + rng() % 3000; c < n; ++c) text += alphabet[rng() % alphabet.size()];
    const auto want = brute_force(text, spellings);
    ASSERT_FALSE(want.empty());
    for (size_t block : {size_t(1), size_t(7), size_t(1000), text.size()})
      ASSERT_EQ(with_matcher(text, m, block), want) << "round " << round << ", block " << block;
  }
}

// Leftmost-longest through the tokenizer: overlapping added tokens.
TEST(AddedTokenMatcher, TokenizerSplitsLeftmostLongest) {
  const Tokenizer t = Tokenizer::from_hf(R"({
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2}, "merges": []},
    "added_tokens": [{"id": 3, "content": "ab", "special": true}, {"id": 4, "content": "abc", "special": true},
                     {"id": 5, "content": "bcc", "special": true}, {"id": 6, "content": "ca", "special": false}]})", "");
  EXPECT_EQ(t.encode("abcc", false), (std::vector<int32_t>{4, 2}));        // abc wins over ab, bcc starts later
  EXPECT_EQ(t.encode("aabcca", false), (std::vector<int32_t>{0, 4, 6}));   // then c|a: "ca"
  EXPECT_EQ(t.encode("bcca", false), (std::vector<int32_t>{5, 0}));
  EXPECT_EQ(t.encode("abca", false, false), (std::vector<int32_t>{0, 1, 6}));  // special off: only "ca"
}

}  // namespace
}  // namespace ember
