// Hostile tokenizer files and inputs: GGUF tokenizer metadata, tokenizer.json.
#include <gtest/gtest.h>

#include "expect_error.h"
#include "hostile_util.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"
#include "util/json_bounded.h"

using namespace ember;
using namespace ember::hostile;
using gguf::Value;

namespace {

// A byte-level GGUF tokenizer: the 256 byte tokens (GPT-2 spelling), "ab" and
// a merge "a b", plus whatever `mutate` adds.
std::string gguf_tokenizer(const std::string& dir, const std::function<void(gguf::Writer&, std::vector<std::string>&)>& mutate) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = byte_to_codepoint(uint8_t(b));
    std::string s;
    if (cp < 0x80) s += char(cp);
    else { s += char(0xC0 | (cp >> 6)); s += char(0x80 | (cp & 0x3F)); }
    tokens.push_back(s);
  }
  tokens.push_back("ab");
  gguf::Writer w;
  w.set("tokenizer.ggml.model", Value::str("gpt2"));
  w.set("tokenizer.ggml.merges", Value::str_array({"a b"}));
  if (mutate) mutate(w, tokens);
  w.set("tokenizer.ggml.tokens", Value::str_array(tokens));
  const std::string path = dir + "/tok.gguf";
  w.begin(path);
  w.finish();
  return path;
}

TEST(HostileTokenizer, ValidGgufTokenizerEncodes) {
  const std::string dir = temp_dir("tok-valid");
  const auto r = gguf::Reader::open(gguf_tokenizer(dir, {}));
  const Tokenizer t = Tokenizer::from_gguf(r);
  EXPECT_EQ(t.encode("ab", false), std::vector<int32_t>{256});
}

TEST(HostileTokenizer, SixtyFourBitEosIdIsRefusedNotTruncated) {
  const std::string dir = temp_dir("tok-eos");
  // 2^32 + 256 would truncate to 256, a valid id.
  const auto r = gguf::Reader::open(gguf_tokenizer(dir, [](gguf::Writer& w, auto&) {
    w.set("tokenizer.ggml.eos_token_id", Value::u64((uint64_t(1) << 32) + 256));
  }));
  EXPECT_CLEAR_ERROR(Tokenizer::from_gguf(r), {"tokenizer.ggml.eos_token_id", "4294967552"});
}

TEST(HostileTokenizer, LongMergeOfSpacesParsesInLinearTime) {
  const std::string dir = temp_dir("tok-merge");
  const auto r = gguf::Reader::open(gguf_tokenizer(dir, [](gguf::Writer& w, auto& tokens) {
    tokens.push_back(std::string(60000, ' '));  // a long token makes every split point a candidate
    w.set("tokenizer.ggml.merges", Value::str_array({"a b", std::string(120001, ' ')}));
  }));
  const double secs = seconds([&] { EXPECT_CLEAR_ERROR(Tokenizer::from_gguf(r), {"merges"}); });
  EXPECT_LT(secs, 5.0);
}

std::string tokenizer_json(const std::string& normalizer, const std::string& extra_vocab = "") {
  return R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2)" + extra_vocab +
         R"(}, "merges": ["a b"]}, "normalizer": )" + normalizer +
         R"(, "pre_tokenizer": null, "decoder": null})";
}

TEST(HostileTokenizer, DeeplyNestedSequenceNormalizersAreRefused) {
  // Built in linear time: prepending 20,000 times copies gigabytes, which takes minutes under ASan.
  constexpr int kDepth = 20000;
  std::string n;
  for (int i = 0; i < kDepth; ++i) n += R"({"type": "Sequence", "normalizers": [)";
  n += R"({"type": "NFC"})";
  for (int i = 0; i < kDepth; ++i) n += "]}";
  const double before = peak_rss_mb();
  const double secs = seconds([&] { EXPECT_CLEAR_ERROR(Tokenizer::from_hf(tokenizer_json(n), ""), {"tokenizer.json", "nested deeper"}); });
  EXPECT_LT(secs, 5.0);
  EXPECT_LT(peak_rss_mb() - before, 200.0);
}

TEST(HostileTokenizer, VocabularyIdOfTwoToTheTwentySixIsRefused) {
  const double before = peak_rss_mb();
  EXPECT_CLEAR_ERROR(Tokenizer::from_hf(tokenizer_json("null", R"(, "x": 67108864)"), ""), {"model.vocab", "2097151"});
  EXPECT_LT(peak_rss_mb() - before, 100.0);
}

// A byte-level tokenizer with Qwen's split pattern: the 256 byte tokens and "ĠĠ".
Tokenizer qwen_style_tokenizer() {
  std::string vocab = R"("ĠĠ": 256)";
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = byte_to_codepoint(uint8_t(b));
    std::string s;
    if (cp == '"' || cp == '\\') s = std::string("\\") + char(cp);
    else if (cp < 0x80) s += char(cp);
    else { s += char(0xC0 | (cp >> 6)); s += char(0x80 | (cp & 0x3F)); }
    vocab += ", \"" + s + "\": " + std::to_string(b);
  }
  return Tokenizer::from_hf(R"({"model": {"type": "BPE", "vocab": {)" + vocab + R"(}, "merges": ["Ġ Ġ"]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
    "decoder": {"type": "ByteLevel"}})", "");
}

TEST(HostileTokenizer, TenMegabytesOfWhitespaceTokenize) {
  // The Qwen-style split pattern backtracks over a whole whitespace run; with
  // PCRE2's default limit this failed with error -47. No piece boundary inside
  // the run is safe, so the regex sees the whole run.
  const Tokenizer t = qwen_style_tokenizer();
  const std::string text(10'000'000, ' ');
  std::vector<int32_t> ids;
  const double secs = seconds([&] { ids = t.encode(text, false); });
  ASSERT_EQ(ids.size(), 5'000'000u);  // pairs of spaces
  EXPECT_LT(secs, 30.0);
  EXPECT_TRUE(t.decode(ids) == text);
}

TEST(HostileTokenizer, MegabytesOfMixedRunsTokenizeInLinearTime) {
  // Long runs of each character class the pattern treats differently, and a
  // stretch where every few bytes change class: the regex sees a window of the
  // text per match, so the time grows with the text's length only.
  const Tokenizer t = qwen_style_tokenizer();
  std::string text = std::string(1'000'000, ' ') + "x" + std::string(1'000'000, '7') + std::string(1'000'000, '!') +
                     std::string(500'000, '\n') + " \t";
  while (text.size() < 6'000'000) text += "ab 12.. \n\n  \xE4\xB8\xAD'S  ";  // no " ." (decode clean-up)
  std::vector<int32_t> ids;
  const double secs = seconds([&] { ids = t.encode(text, false); });
  EXPECT_LT(secs, 30.0);
  EXPECT_TRUE(t.decode(ids) == text);  // (not EXPECT_EQ: it would print megabytes)
}

}  // namespace

namespace {

TEST(HostileTokenizer, OverlongAddedTokenIsRefused) {
  const std::string tj = R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
    "added_tokens": [{"id": 1, "content": ")" + std::string(100000, 'a') + R"(b", "special": true}]})";
  EXPECT_CLEAR_ERROR(Tokenizer::from_hf(tj, ""), {"added token 1", "100001 bytes", "256"});
}

}  // namespace

namespace {

TEST(HostileTokenizer, ManyAddedTokensSharingLongPrefixesMatchInLinearTime) {
  // 2,400 added tokens: a^k followed by one of 16 bytes, k up to 250, listed so
  // that the byte a text of a's needs comes last at every branch. Trying every
  // position walks 250 bytes deep there; the automaton reads each byte once.
  std::string added;
  int32_t id = 1;
  for (int k = 100; k < 250; ++k)
    for (const char c : std::string("bcdefghijklmnopq")) {
      added += std::string(added.empty() ? "" : ",") + R"({"id": )" + std::to_string(id++) + R"(, "content": ")" +
               std::string(size_t(k), 'a') + c + R"(", "special": true})";
    }
  const Tokenizer t = Tokenizer::from_hf(
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [)" + added + "]}", "");
  std::string text(4'000'000, 'a');
  text += std::string(200, 'a') + "q";
  std::vector<int32_t> ids;
  const double secs = seconds([&] { ids = t.encode(text, false); });
  EXPECT_LT(secs, 20.0);
  // Leftmost-longest: a^249 q (id 2,400), the longest spelling, starts 249 a's before the q.
  ASSERT_EQ(ids.size(), 4'000'200u - 249 + 1);
  EXPECT_EQ(ids.back(), 2400);
}

}  // namespace

