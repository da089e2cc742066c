// Malformed tokenizer files give a clear ember::Error, never a crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/gguf.h"
#include "tokenizer/cli_commands.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember {
namespace {

// A tiny byte-level vocabulary: a, b, ab, and a merge a+b.
const char* kTiny = R"({
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3}, "merges": ["a b"]},
  "added_tokens": [{"id": 4, "content": "<s>", "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel"}
})";

std::string error_of(const std::string& tj, const std::string& cfg = "") {
  try {
    Tokenizer::from_hf(tj, cfg);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string with(std::string s, const std::string& from, const std::string& to) {
  auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  return s.replace(p, from.size(), to);
}

TEST(TokenizerBadInput, TinyTokenizerWorks) {
  Tokenizer t = Tokenizer::from_hf(kTiny, "");
  EXPECT_EQ(t.encode("abc<s>ba"), (std::vector<int32_t>{2, 3, 4, 1, 0}));
  EXPECT_EQ(t.decode({2, 3, 4, 1, 0}), "abc<s>ba");
  EXPECT_EQ(t.decode({2, 4, 0}, true), "aba");
}

TEST(TokenizerBadInput, NotJson) {
  EXPECT_NE(error_of("{\"model\": ").find("tokenizer.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(kTiny, "[1,").find("tokenizer_config.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("expected a JSON object"), std::string::npos);
}

TEST(TokenizerBadInput, MissingOrWrongModel) {
  EXPECT_NE(error_of("{}").find("model: missing"), std::string::npos);
  EXPECT_NE(error_of(with(kTiny, "\"BPE\"", "\"Unigram\"")).find("'Unigram' is not supported"), std::string::npos);
  EXPECT_NE(error_of(with(kTiny, "\"vocab\": {", "\"vocab\": {\"x\": \"1\", ")).find("model.vocab[\"x\"]"),
            std::string::npos);
}

TEST(TokenizerBadInput, MergesNamingUnknownTokens) {
  std::string e = error_of(with(kTiny, "[\"a b\"]", "[\"a b\", \"a zz\"]"));
  EXPECT_NE(e.find("merges: entry 1"), std::string::npos) << e;
  EXPECT_NE(e.find("'zz'"), std::string::npos) << e;
  e = error_of(with(kTiny, "[\"a b\"]", "[\"b a\"]"));
  EXPECT_NE(e.find("produces 'ba'"), std::string::npos) << e;
  e = error_of(with(kTiny, "[\"a b\"]", "[\"ab\"]"));
  EXPECT_NE(e.find("model.merges[0]"), std::string::npos) << e;
  e = error_of(with(kTiny, "[\"a b\"]", "[[\"a\"]]"));
  EXPECT_NE(e.find("model.merges[0]"), std::string::npos) << e;
}

TEST(TokenizerBadInput, UnsupportedComponentsAndBadRegex) {
  EXPECT_NE(error_of(with(kTiny, "\"normalizer\": null", "\"normalizer\": {\"type\": \"BertNormalizer\"}"))
                .find("normalizer type 'BertNormalizer' is not supported"),
            std::string::npos);
  std::string bad_split = R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})";
  std::string e = error_of(with(kTiny, R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})", bad_split));
  EXPECT_NE(e.find("pre_tokenizer Split pattern"), std::string::npos) << e;
  e = error_of(with(kTiny, "\"id\": 4", "\"id\": -4"));
  EXPECT_NE(e.find("added_tokens[0].id"), std::string::npos) << e;
}

TEST(TokenizerBadInput, DecodeRejectsUnknownIds) {
  Tokenizer t = Tokenizer::from_hf(kTiny, "");
  EXPECT_THROW(t.decode({0, 99}), Error);
  EXPECT_THROW(t.decode({-1}), Error);
  StreamDecoder sd(t);
  EXPECT_THROW(sd.feed(1000), Error);
}

TEST(TokenizerBadInput, GgufWithoutTokenizer) {
  auto path = std::filesystem::temp_directory_path() / "ember_tok_bad.gguf";
  {
    gguf::Writer w;
    w.set("tokenizer.ggml.model", gguf::Value::str("bert"));
    w.set("tokenizer.ggml.tokens", gguf::Value::str_array({"a"}));
    w.begin(path.string());
    w.finish();
  }
  try {
    Tokenizer::from_gguf(gguf::Reader::open(path.string()));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bert' is not supported"), std::string::npos) << e.what();
  }
  {
    gguf::Writer w;
    w.set("tokenizer.ggml.model", gguf::Value::str("gpt2"));
    w.set("tokenizer.ggml.pre", gguf::Value::str("qwen2"));
    w.set("tokenizer.ggml.tokens", gguf::Value::str_array({"a", "b"}));
    w.set("tokenizer.ggml.merges", gguf::Value::str_array({"a c"}));
    w.begin(path.string());
    w.finish();
  }
  try {
    Tokenizer::from_gguf(gguf::Reader::open(path.string()));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not in the vocabulary"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(TokenizerCli, IdListParsing) {
  EXPECT_EQ(parse_id_list("[1, 2,3]"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_id_list("4 5\n6"), (std::vector<int32_t>{4, 5, 6}));
  EXPECT_THROW(parse_id_list("[1, x]"), Error);
  EXPECT_THROW(parse_id_list("99999999999"), Error);
}

TEST(TokenizerCli, TokenizeAndDetokenize) {
  auto dir = std::filesystem::temp_directory_path() / "ember_tok_cli";
  std::filesystem::create_directories(dir);
  { FILE* f = std::fopen((dir / "tokenizer.json").c_str(), "wb"); std::fputs(kTiny, f); std::fclose(f); }
  std::istringstream in("ab");
  std::ostringstream out, err;
  TokenizeOptions opt;
  opt.source.tokenizer_path = dir.string();
  opt.text = "-";
  EXPECT_EQ(tokenize_command(opt, in, out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "[2]\n");
  DetokenizeOptions dopt;
  dopt.source.tokenizer_path = (dir / "tokenizer.json").string();
  dopt.ids = "[2,3,4]";
  std::ostringstream dout;
  EXPECT_EQ(detokenize_command(dopt, in, dout, err), 0) << err.str();
  EXPECT_EQ(dout.str(), "abc<s>\n");
  TokenizeOptions none;
  std::ostringstream err2;
  EXPECT_EQ(tokenize_command(none, in, out, err2), 1);
  EXPECT_NE(err2.str().find("no tokenizer given"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember
