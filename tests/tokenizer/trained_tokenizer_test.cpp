// The tokenizer of ember's trained models (tools/train/train.py, Hugging Face
// `tokenizers`) against that library: the ids it gave for the validation sample
// (tests/data/trained/val-sample-ids.json), read from tokenizer.json and from the
// tokenizer the shipped GGUF file carries.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

const fs::path kData = fs::path(EMBER_SOURCE_DIR) / "tests/data/trained";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check(const Tokenizer& tok, const std::string& what) {
  const std::string text = read_all(kData / "val-sample.txt");
  const auto want = nlohmann::json::parse(read_all(kData / "val-sample-ids.json")).get<std::vector<int32_t>>();
  const auto ids = tok.encode(text, false, false);
  ASSERT_EQ(ids.size(), want.size()) << what;
  size_t first_diff = 0;
  while (first_diff < ids.size() && ids[first_diff] == want[first_diff]) ++first_diff;
  EXPECT_EQ(first_diff, ids.size()) << what << ": first differing id at token " << first_diff;
  EXPECT_EQ(tok.decode(ids), text) << what << ": decode(encode(text))";
  EXPECT_EQ(tok.eos_id(), 0) << what;
  EXPECT_EQ(tok.bos_id(), -1) << what;
}

}  // namespace

TEST(TrainedTokenizer, TokenizerJsonMatchesLibrary) { check(Tokenizer::from_hf_path(kData.string()), "tokenizer.json"); }

TEST(TrainedTokenizer, ShippedGgufMatchesLibrary) {
  const auto r = gguf::Reader::open((fs::path(EMBER_SOURCE_DIR) / "models/ember-doc-base-Q8_0.gguf").string());
  check(Tokenizer::from_gguf(r), "models/ember-doc-base-Q8_0.gguf");
}
