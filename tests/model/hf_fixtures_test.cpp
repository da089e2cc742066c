// ember against Hugging Face transformers: tiny random models of every
// supported architecture (tests/data/hf, made by tools/fixtures/make_hf_fixtures.py)
// loaded from their safetensors folders and after `convert` to GGUF F32 / F16.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/convert.h"
#include "model/model_test_util.h"
#include "util/npy.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

struct Fixture {
  std::string name;
  fs::path dir;
  std::vector<int32_t> ids, greedy;
  std::vector<float> logits;
};

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  const fs::path root = fs::path(EMBER_SOURCE_DIR) / "tests/data/hf";
  if (!fs::exists(root)) return names;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "expected.json")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

Fixture load_fixture(const std::string& name) {
  Fixture f;
  f.name = name;
  f.dir = fs::path(EMBER_SOURCE_DIR) / "tests/data/hf" / name;
  std::ifstream in(f.dir / "expected.json");
  const auto j = nlohmann::json::parse(in);
  f.ids = j.at("ids").get<std::vector<int32_t>>();
  f.greedy = j.at("greedy").get<std::vector<int32_t>>();
  fs::path logits = f.dir / "logits.npy";
  f.logits = read_npy_f32(logits.string()).data;
  return f;
}

class HfFixture : public ::testing::TestWithParam<std::string> {};

void check(const Model& m, const Fixture& f, double tol, const std::string& what) {
  const auto logits = test::all_logits(m, f.ids);
  ASSERT_EQ(logits.size(), f.logits.size()) << what;
  const double err = test::max_rel_error(logits, f.logits);
  EXPECT_LE(err, tol) << what << ": max |logit - ref| / max |ref|";
  // The continuation starts after the whole id sequence.
  EXPECT_EQ(test::greedy(m, f.ids, int(f.greedy.size())), f.greedy) << what << ": greedy tokens";
}

TEST_P(HfFixture, SafetensorsMatchesTransformers) {
  const Fixture f = load_fixture(GetParam());
  auto m = Model::load(f.dir.string());
  check(*m, f, 1e-3, f.name + " (safetensors)");
}

TEST_P(HfFixture, ConvertedGgufMatchesTransformers) {
  const Fixture f = load_fixture(GetParam());
  ThreadPool pool(2);
  for (const auto& [mix, tol] : std::vector<std::pair<std::string, double>>{{"F32", 1e-3}, {"F16", 1e-2}}) {
    const fs::path out = fs::temp_directory_path() / ("ember-fixture-" + f.name + "-" + mix + ".gguf");
    convert_hf_to_gguf(f.dir.string(), out.string(), mix, pool, false);
    auto m = Model::load(out.string());
    check(*m, f, tol, f.name + " (GGUF " + mix + ")");
    fs::remove(out);
  }
}

// Whole model with 8-bit weights (and 8-bit activations in the integer dot
// products). Each Q8_0 weight is off by up to half a step of 1/127 of its
// block's largest magnitude (~0.4% of it; F16 is ~40x finer). The fixtures use
// weights of std 0.2 on 64-wide layers, so that F16 rounding cannot flip their
// greedy tokens; that scale amplifies per-weight error strongly through 2-4
// layers (and can move a MoE route), so measured errors reach 0.06-0.24 of the
// largest logit. Bounds per fixture (kQ8Measured): 1.5x the measured error, and
// argmax agreement down by at most one of the 32 positions from the measured
// one, so a broken kernel fails. Exactness of the Q8_0 path itself is checked
// against the peer engine's Q8_0 file (peer_gguf_test).
struct Q8Measured { double max_rel_error, argmax_agreement; };
const std::map<std::string, Q8Measured> kQ8Measured = {
    {"flint", {0.0558, 0.969}},  {"gemma2", {0.0569, 0.969}}, {"gemma3", {0.0195, 1.000}},
    {"llama", {0.0801, 0.969}},  {"llama_sharded", {0.0801, 0.969}}, {"mistral", {0.0561, 0.875}},
    {"qwen2", {0.2054, 0.938}},  {"qwen3", {0.0625, 0.906}}, {"qwen3moe", {0.2409, 0.906}},
    {"qwen3moe_nonorm", {0.0424, 0.969}}};
// The same, measured on the CUDA backend (H200), which keeps activations in
// float where the CPU quantises them to 8 bits: different rounding, so its own
// measurements.
const std::map<std::string, Q8Measured> kQ8MeasuredCuda = {
    {"flint", {0.0390, 1.000}},  {"gemma2", {0.0393, 0.969}}, {"gemma3", {0.0167, 1.000}},
    {"llama", {0.0421, 0.969}},  {"llama_sharded", {0.0421, 0.969}}, {"mistral", {0.0519, 0.906}},
    {"qwen2", {0.1318, 0.969}},  {"qwen3", {0.0466, 0.906}}, {"qwen3moe", {0.2458, 0.906}},
    {"qwen3moe_nonorm", {0.0429, 0.906}}};

TEST_P(HfFixture, ConvertedQ8_0StaysCloseToTransformers) {
  const Fixture f = load_fixture(GetParam());
  ThreadPool pool(2);
  const fs::path out = fs::temp_directory_path() / ("ember-fixture-" + f.name + "-Q8_0.gguf");
  convert_hf_to_gguf(f.dir.string(), out.string(), "Q8_0", pool, false);
  auto m = Model::load(out.string());
  const auto logits = test::all_logits(*m, f.ids);
  const double err = test::max_rel_error(logits, f.logits);
  const double agree = test::argmax_agreement(logits, f.logits, m->desc().vocab);
  std::printf("%-16s Q8_0 max relative logit error %.4f, argmax agreement %.3f\n", f.name.c_str(), err, agree);
  const auto& table = test::test_backend_kind() == "cuda" ? kQ8MeasuredCuda : kQ8Measured;
  const auto measured = table.find(f.name);
  ASSERT_NE(measured, table.end()) << f.name << ": measure its Q8_0 error and add it to kQ8Measured";
  EXPECT_LE(err, 1.5 * measured->second.max_rel_error) << f.name << " (GGUF Q8_0)";
  EXPECT_GE(agree, measured->second.argmax_agreement - 1.0 / 32 - 1e-9) << f.name << " (GGUF Q8_0)";
  fs::remove(out);
}

INSTANTIATE_TEST_SUITE_P(All, HfFixture, ::testing::ValuesIn(fixture_names()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HfFixture);

TEST(HfFixtures, EveryArchitectureHasAFixture) {
  const auto names = fixture_names();
  for (const char* required : {"llama", "mistral", "qwen2", "qwen3", "qwen3moe", "flint", "gemma2", "gemma3"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << "missing fixture " << required;
}

}  // namespace
