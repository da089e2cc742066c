// Long texts are matched in pieces (Regex::find_all's window); the result must
// be exactly that of matching the whole text. Small windows force a piece
// boundary inside nearly every match, on random and adversarial texts: mixed
// scripts, long runs of whitespace, digits and punctuation, texts without
// newlines.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reference_tokenizers.h"
#include "tokenizer/impl.h"
#include "tokenizer/regex.h"

namespace ember {
namespace {

constexpr size_t kWhole = std::numeric_limits<size_t>::max();
using Matches = std::vector<std::pair<size_t, size_t>>;

// Pieces the generator draws from: every script and character class the
// shipped patterns treat differently, and the whitespace the reference's \s has.
const std::vector<std::string> kAtoms = {
    " ", " ", "  ", "\n", "\r\n", "\t", "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\x83",  // spaces
    "a", "Hello", "world", "The", "x", "\xC3\xA9t\xC3\xA9", "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",
    "\xE4\xB8\xAD\xE6\x96\x87", "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7", "\xF0\x9F\x98\x80",  // é, Cyrillic, CJK, Arabic, emoji
    "0", "7", "12345", "\xD9\xA3", "\xC2\xBD",                      // digits, Arabic-Indic 3, ½
    ".", ",", "!", "...", "'s", "'LL", "'", "\"", "-", "->", "(", ")", "{", "}", "#", "@", "\xE2\x80\x94",
};

std::string random_text(std::mt19937& rng, size_t bytes) {
  std::string s;
  std::uniform_int_distribution<size_t> atom(0, kAtoms.size() - 1);
  std::uniform_int_distribution<int> run(0, 9);
  while (s.size() < bytes) {
    const std::string& a = kAtoms[atom(rng)];
    const int r = run(rng);
    // Now and then a long run of one atom: the inputs that made whole-text matching backtrack.
    const size_t repeat = r == 0 ? 200 + rng() % 3000 : r == 1 ? 2 + rng() % 20 : 1;
    for (size_t k = 0; k < repeat && s.size() < bytes; ++k) s += a;
  }
  return s;
}

// Adversarial texts: long single-class runs and their boundaries.
std::vector<std::string> adversarial_texts() {
  std::vector<std::string> t;
  t.push_back(std::string(20000, ' '));
  t.push_back(std::string(20000, ' ') + "x");
  t.push_back("x" + std::string(20000, ' ') + "\n" + std::string(5000, ' ') + "y");
  std::string mixed_ws;
  for (int i = 0; i < 5000; ++i) mixed_ws += i % 7 == 0 ? "\n" : i % 5 == 0 ? "\t" : i % 3 == 0 ? "\xE3\x80\x80" : " ";
  t.push_back(mixed_ws + "end");
  t.push_back(std::string(30001, '7'));
  t.push_back(std::string(20000, '.') + "\n\n\n" + std::string(100, '!'));
  std::string no_newline;
  for (int i = 0; i < 4000; ++i) no_newline += "word" + std::to_string(i) + (i % 2 ? ", " : "   ");
  t.push_back(no_newline);
  std::string cjk;
  for (int i = 0; i < 8000; ++i) cjk += "\xE4\xB8\xAD";
  t.push_back(cjk + "'s'S'll");
  return t;
}

// Patterns with every construct whose result depends on text past a match:
// greedy runs, lookahead at a run's end, lookbehind, \b, $, \z, empty matches.
const char* const kPatterns[] = {
    // Qwen2/3 and Llama 3 (tokenizer.json form; Regex translates \s).
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",  // GPT-2
    "[^0-9]+|[0-9]+", "[^0-9]+|[0-9]", " ",                                          // Digits, Gemma's Split
    R"((?<=\p{L})\p{N}+|(?<!\s)\s{2,})", R"(\b\w+\b)", R"(\p{N}+$|x*)", R"(\s+\z|\S{3})", R"((?=\p{L}{4}))",
};

TEST(RegexPieces, EveryWindowGivesTheWholeTextsMatches) {
  std::mt19937 rng(13);
  std::vector<std::string> texts = adversarial_texts();
  for (int i = 0; i < 6; ++i) texts.push_back(random_text(rng, 3000 + rng() % 6000));
  int naive_differs = 0;
  for (const char* pattern : kPatterns) {
    const Regex re(pattern, "test");
    for (size_t t = 0; t < texts.size(); ++t) {
      const std::string& text = texts[t];
      Matches whole;
      re.find_all(text, whole, kWhole);
      for (size_t window : {size_t(1), size_t(2), size_t(3), size_t(7), size_t(64), size_t(1000)}) {
        Matches pieces;
        re.find_all(text, pieces, window);
        ASSERT_EQ(pieces, whole) << "pattern " << pattern << ", text " << t << ", window " << window;
      }
      // The texts are hard enough: cutting them blindly into 64-byte pieces changes the matches.
      Matches naive;
      for (size_t off = 0; off < text.size();) {
        size_t end = std::min(text.size(), off + 64);
        while (end < text.size() && (uint8_t(text[end]) & 0xC0) == 0x80) ++end;
        Matches m;
        re.find_all(std::string_view(text).substr(off, end - off), m, kWhole);
        for (auto [a, b] : m) naive.emplace_back(off + a, off + b);
        off = end;
      }
      naive_differs += naive != whole;
    }
  }
  EXPECT_GT(naive_differs, 40);
}

class TokenizerPieces : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!test::have_reference_tokenizer(GetParam()))
      GTEST_SKIP() << "reference tokenizer files missing: run `npm ci` in tools/oracle";
  }
};

std::vector<int32_t> encode(const Tokenizer& tok, const std::string& text, size_t window) {
  std::vector<int32_t> ids;
  tok.impl().encode(text, /*add_special=*/false, /*parse_special=*/true, ids, {}, window);
  return ids;
}

TEST_P(TokenizerPieces, SmallPiecesEncodeLikeTheWholeText) {
  const Tokenizer& tok = test::json_tokenizer(GetParam());
  std::mt19937 rng(7);
  std::vector<std::string> texts = adversarial_texts();
  for (int i = 0; i < 6; ++i) texts.push_back(random_text(rng, 20000 + rng() % 20000));
  for (size_t t = 0; t < texts.size(); ++t) {
    const std::vector<int32_t> whole = encode(tok, texts[t], kWhole);
    ASSERT_FALSE(whole.empty());
    EXPECT_EQ(whole, tok.encode(texts[t], false)) << "text " << t;  // the default window
    for (size_t window : {size_t(1), size_t(5), size_t(128), size_t(4096)})
      ASSERT_EQ(encode(tok, texts[t], window), whole) << "text " << t << ", window " << window;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TokenizerPieces, ::testing::Values("qwen3", "llama3", "gemma3"));

}  // namespace
}  // namespace ember
