// ember reads GGUF files written by another engine's quantiser and matches that
// engine's logits (../shared/testdata/peer-gguf-qwen3: files, logits and tolerances).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model_test_util.h"
#include "util/npy.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

const fs::path kDir = fs::path(EMBER_SHARED_DIR) / "testdata/peer-gguf-qwen3";

class PeerGguf : public ::testing::TestWithParam<std::string> {};

TEST_P(PeerGguf, MatchesPeerLogits) {
  const std::string type = GetParam();
  std::ifstream in(kDir / "meta.json");
  ASSERT_TRUE(in) << "missing " << (kDir / "meta.json");
  const auto meta = nlohmann::json::parse(in);
  const auto ids = meta.at("ids").get<std::vector<int32_t>>();
  const double tol = meta.at("tolerance").at(type).get<double>();
  auto m = Model::load((kDir / ("qwen3-tiny-" + type + ".gguf")).string());
  const auto ref = read_npy_f32((kDir / ("logits-" + type + ".npy")).string()).data;
  const auto got = test::all_logits(*m, ids);
  ASSERT_EQ(got.size(), ref.size());
  EXPECT_LE(test::max_rel_error(got, ref), tol) << type;
  const bool is_float = type == "F32" || type == "F16";
  if (is_float) {
    EXPECT_EQ(test::argmax_agreement(got, ref, m->desc().vocab), 1.0) << type << ": argmax agreement";
  } else {
    // On the quantised files the peer rounds activations to 8 bits and ember does
    // not, so positions whose top two logits are within 1% of the largest logit
    // are near-ties either engine may break differently; the others must agree.
    EXPECT_GE(test::decisive_argmax_agreement(got, ref, m->desc().vocab, 0.01), 0.9) << type << ": argmax agreement";
  }
}

INSTANTIATE_TEST_SUITE_P(All, PeerGguf,
                         ::testing::Values("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q5_1", "Q3_K_M", "Q4_K_M", "Q5_K_M",
                                           "Q6_K", "IQ4_XS"));

}  // namespace
