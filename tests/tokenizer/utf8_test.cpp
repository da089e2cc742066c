#include <gtest/gtest.h>

#include "tokenizer/impl.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace ember {
namespace {

const std::string R = "\xEF\xBF\xBD";  // U+FFFD

// Expected values follow the WHATWG decoding rules (one U+FFFD per maximal
// invalid subsequence).
TEST(Utf8, SanitizeFollowsWhatwg) {
  EXPECT_EQ(utf8::sanitize("abc"), "abc");
  EXPECT_EQ(utf8::sanitize("\xff"), R);
  EXPECT_EQ(utf8::sanitize("\xe2\x82("), R + "(");
  EXPECT_EQ(utf8::sanitize("\xf0\x9f\x98"), R);
  EXPECT_EQ(utf8::sanitize("\xed\xa0\x80"), R + R + R);  // surrogate: E0..9F rule
  EXPECT_EQ(utf8::sanitize("\xc0\xaf"), R + R);
  EXPECT_EQ(utf8::sanitize("\xf4\x90\x80\x80"), R + R + R + R);
  EXPECT_FALSE(utf8::is_valid("\xed\xa0\x80"));
  EXPECT_TRUE(utf8::is_valid("\xf0\x9f\x98\x80"));
}

TEST(Utf8, IncrementalEqualsWhole) {
  std::string bytes = "a\xf0\x9f\x98\x80\xe2\x82\xff\xce\xb1";
  std::string whole = utf8::sanitize(bytes), parts;
  utf8::Decoder d;
  for (char c : bytes) d.feed(std::string_view(&c, 1), parts);
  d.finish(parts);
  EXPECT_EQ(parts, whole);
}

TEST(Utf8, JsTrim) {
  EXPECT_EQ(utf8::trim_js_start(" \t\xe3\x80\x80x "), "x ");
  EXPECT_EQ(utf8::trim_js_end(" x\xc2\xa0\n"), " x");
}

TEST(CleanUp, RulesApplyInOrder) {
  EXPECT_EQ(clean_up_tokenization("a . b , c ! d ? e"), "a. b, c! d? e");
  EXPECT_EQ(clean_up_tokenization("do n't I 'm it 's we 've you 're"), "don't I'm it's we've you're");
  EXPECT_EQ(clean_up_tokenization(" ' ."), " '.");  // " ." first, then " ' " no longer matches
}

TEST(RegexTranslation, AsciiOnlyCaseFolding) {
  Regex r("(?i:'s|'t)", "test");
  std::vector<std::pair<size_t, size_t>> m;
  r.find_all("'S 's '\xC5\xBF 'T", m);  // U+017F LATIN SMALL LETTER LONG S must not fold to s
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[2].first, 10u);
}

}  // namespace
}  // namespace ember
