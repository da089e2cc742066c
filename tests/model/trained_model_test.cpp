// The shipped trained model (models/ember-doc-base-*.gguf, made by tools/train/)
// against the PyTorch reference its training script wrote (tests/data/trained),
// and `ember perplexity` / its KL report on it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/perplexity.h"
#include "gguf/gguf.h"
#include "model/convert.h"
#include "model/model_test_util.h"
#include "util/npy.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

const fs::path kRoot = fs::path(EMBER_SOURCE_DIR);
const fs::path kData = kRoot / "tests/data/trained";
const fs::path kF16 = kRoot / "models/ember-doc-base-F16.gguf";

nlohmann::json expected() {
  std::ifstream in(kData / "expected.json");
  return nlohmann::json::parse(in);
}

// A file in the temporary folder, removed when the test ends.
struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& name) : path(fs::temp_directory_path() / ("ember-trained-" + name)) {}
  ~TempFile() { fs::remove(path); }
};

void check_against_pytorch(const std::string& path, const std::string& what) {
  const auto j = expected();
  const auto ids = j.at("ids").get<std::vector<int32_t>>();
  const auto ref = read_npy_f32((kData / "logits.npy").string()).data;
  auto m = Model::load(path);
  const auto logits = test::all_logits(*m, ids);
  ASSERT_EQ(logits.size(), ref.size());
  EXPECT_LE(test::max_rel_error(logits, ref), 1e-3) << what << ": max |logit - PyTorch| / max |PyTorch|";
  const auto greedy = j.at("greedy").get<std::vector<int32_t>>();
  EXPECT_EQ(test::greedy(*m, ids, int(greedy.size())), greedy) << what << ": greedy continuation";
}

}  // namespace

// The training script rounded the weights to float16 before computing its
// reference, so the F16 file holds exactly the weights PyTorch ran.
TEST(TrainedModel, F16MatchesPyTorch) { check_against_pytorch(kF16.string(), "F16"); }

// Requantising the F16 file to F32 (GGUF in, GGUF out) changes nothing.
TEST(TrainedModel, RequantisedF32MatchesPyTorch) {
  TempFile f32("F32.gguf");
  ThreadPool pool(2);
  convert_gguf_to_gguf(kF16.string(), f32.path.string(), "F32", pool, false);
  check_against_pytorch(f32.path.string(), "F32 (from the F16 file)");
}

// `ember perplexity --ctx 512` on the validation sample gives the perplexity the
// training script computed with PyTorch (same windows, same scored tokens).
TEST(TrainedModel, PerplexityMatchesTrainingScript) {
  const auto j = expected();
  cli::PerplexityOptions o;
  o.model = kF16.string();
  o.text = (kData / "val-sample.txt").string();
  o.ctx = j.at("ctx").get<int>();
  o.threads = 2;
  const auto r = cli::measure_perplexity(o);
  EXPECT_EQ(r.tokens, j.at("val_sample_tokens").get<int64_t>());
  const double want = j.at("val_sample_ppl").get<double>();
  EXPECT_NEAR(r.perplexity, want, 0.01 * want);
}

// KL of a model to itself is 0, and it grows as the weights lose bits.
TEST(TrainedModel, KlGrowsAsBitsShrink) {
  cli::PerplexityOptions o;
  o.text = (kData / "val-sample.txt").string();
  o.ctx = 256;
  o.limit = 512;
  o.threads = 2;
  o.kl_base = kF16.string();
  o.model = kF16.string();
  const auto self = cli::measure_perplexity(o);
  EXPECT_EQ(self.kl_mean, 0.0);
  EXPECT_EQ(self.kl_p99, 0.0);
  EXPECT_EQ(self.top1_agreement, 1.0);
  EXPECT_EQ(self.perplexity, self.base_perplexity);

  ThreadPool pool(2);
  double last_kl = 0;
  for (const std::string mix : {"Q8_0", "Q4_K", "Q3_K"}) {
    TempFile q(mix + ".gguf");
    convert_gguf_to_gguf(kF16.string(), q.path.string(), mix, pool, false);
    // The tied embedding is the output head: the K mixes keep it at Q6_K.
    for (const auto& t : gguf::Reader::open(q.path.string()).tensors())
      if (t.name == "token_embd.weight") EXPECT_EQ(t.type, mix == "Q8_0" ? GgmlType::Q8_0 : GgmlType::Q6_K) << mix;
    o.model = q.path.string();
    const auto r = cli::measure_perplexity(o);
    EXPECT_GT(r.kl_mean, last_kl) << mix;
    EXPECT_GE(r.kl_p99, r.kl_mean) << mix;
    EXPECT_LT(r.top1_agreement, 1.0) << mix;
    EXPECT_GT(r.top1_agreement, 0.6) << mix;
    last_kl = r.kl_mean;
  }
  EXPECT_LT(last_kl, 0.5);
}
