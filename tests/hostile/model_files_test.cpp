// Hostile model files, one test per family of the hardening issue: each must
// give a clear one-line error naming the key, value or limit (or load
// correctly when valid), quickly and without allocating in proportion to a
// number written in the file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "gguf/gguf_bytes.h"
#include "hostile_util.h"
#include "model/loaders.h"
#include "model/model.h"
#include "model/vocab_check.h"
#include "tokenizer/tokenizer.h"
#include "util/limits.h"

using namespace ember;
using namespace ember::hostile;
using gguf::Value;

namespace {

class HostileGguf : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name = "m.gguf") const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(HostileGguf, TheUnmutatedTinyModelLoads) {
  write_tiny_gguf(path());
  const auto m = Model::load(path());
  EXPECT_EQ(m->desc().vocab, 256);
  EXPECT_EQ(m->desc().n_layers, 2);
}

TEST_F(HostileGguf, HeadSizeAboveTheRotaryLimit) {
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.attention.key_length", Value::u32(2048)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"qwen3.attention.key_length", "2048", "1024"});
}

TEST_F(HostileGguf, HeadsTimesHeadSizeBeyondIntIsRefused) {
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) {
    w.set("qwen3.attention.head_count", Value::u32(1024));
    w.set("qwen3.attention.head_count_kv", Value::u32(1024));
    w.set("qwen3.attention.key_length", Value::u32(1024));
  });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"query width", "1048576"});
}

TEST_F(HostileGguf, SixtyFourBitValuesAreNotTruncated) {
  // 2^32 + 2 would become 2 layers if narrowed to 32 bits.
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.block_count", Value::u64((uint64_t(1) << 32) + 2)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"qwen3.block_count", "4294967298", "1024"});
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.context_length", Value::u64(uint64_t(1) << 33)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"qwen3.context_length", "8589934592"});
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.embedding_length", Value::u64((uint64_t(1) << 32) + 64)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"qwen3.embedding_length"});
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.block_count", Value::u64(~uint64_t(0))); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"qwen3.block_count"});
}

TEST_F(HostileGguf, NonFiniteOrNegativeFloatsAreRefused) {
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.attention.layer_norm_rms_epsilon", Value::f32(-1e-6f)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"layer_norm_rms_epsilon"});
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.attention.layer_norm_rms_epsilon", Value::f32(NAN)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"layer_norm_rms_epsilon", "nan"});
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.rope.freq_base", Value::f32(NAN)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"rope.freq_base"});
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.rope.freq_base", Value::f64(INFINITY)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"rope.freq_base"});
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.final_logit_softcapping", Value::f32(-3)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"final_logit_softcapping"});
}

TEST_F(HostileGguf, SlidingWindowPeriodZeroIsRefused) {
  write_tiny_gguf(path(), [](gguf::Writer& w, auto&) { w.set("qwen3.attention.sliding_window_pattern", Value::u32(0)); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"sliding_window_pattern", "0"});
}

TEST_F(HostileGguf, ExpertDimensionOfTwoToTheFortyAllocatesNothing) {
  // Zero bytes of data ([0, 1, 2^40] has no elements) but 2^40 experts.
  write_tiny_gguf(path(), [](gguf::Writer&, std::vector<TensorDecl>& t) {
    t.push_back({"blk.0.ffn_gate_exps.weight", {0, 1, int64_t(1) << 40}});
  });
  const double before = peak_rss_mb();
  EXPECT_CLEAR_ERROR(Model::load(path()), {"blk.0.ffn_gate_exps.weight", "1099511627776", "1024"});
  EXPECT_LT(peak_rss_mb() - before, 200.0);
}

TEST_F(HostileGguf, HugeMetadataArrayIsRefusedBeforeExpanding) {
  // 8 M one-byte elements (8 MB of file) would expand to ~800 MB of parsed values.
  const uint64_t n = limits::kMaxGgufMetadataValues + 1;
  gguf::test::Bytes b;
  b.header(3, 0, 1).key("junk", gguf::test::ARRAY).u32(gguf::test::U8).u64(n).zeros(size_t(n));
  write_file(path(), std::string(b.b.begin(), b.b.end()));
  const double before = peak_rss_mb();
  double secs = seconds([&] { EXPECT_CLEAR_ERROR(gguf::Reader::open(path()), {"junk", "limit", "metadata values"}); });
  EXPECT_LT(secs, 5.0);
  EXPECT_LT(peak_rss_mb() - before, 100.0);
}

TEST_F(HostileGguf, MetadataJustUnderTheValueLimitIsBoundedByTheFilesSize) {
  // One value short of the count limit: 4 MB of file used to become ~400 MB of
  // parsed values (each ~100 bytes). The allowance now grows with the file's
  // size, so this file is refused and a smaller array within it costs < 100 MB.
  const uint64_t n = limits::kMaxGgufMetadataValues - 1;
  gguf::test::Bytes b;
  b.header(3, 0, 1).key("junk", gguf::test::ARRAY).u32(gguf::test::U8).u64(n).zeros(size_t(n));
  write_file(path(), std::string(b.b.begin(), b.b.end()));
  double before = peak_rss_mb();
  EXPECT_CLEAR_ERROR(gguf::Reader::open(path()), {"junk", "limit", "metadata values"});
  EXPECT_LT(peak_rss_mb() - before, 50.0);

  const uint64_t fits = 300'000;  // within the fixed allowance: parsed, ~30 MB
  gguf::test::Bytes small;
  small.header(3, 0, 1).key("bytes", gguf::test::ARRAY).u32(gguf::test::U8).u64(fits).zeros(size_t(fits));
  write_file(path(), std::string(small.b.begin(), small.b.end()));
  before = peak_rss_mb();
  const gguf::Reader r = gguf::Reader::open(path());
  ASSERT_NE(r.find("bytes"), nullptr);
  EXPECT_EQ(r.find("bytes")->array.size(), fits);
  EXPECT_LT(peak_rss_mb() - before, 100.0);
}

TEST_F(HostileGguf, TensorRowsDisagreeingWithTheVocabulary) {
  write_tiny_gguf(path(), [](gguf::Writer&, std::vector<TensorDecl>& t) { t[0].ne = {64, 300}; t.push_back({"output.weight", {64, 256}}); });
  EXPECT_CLEAR_ERROR(Model::load(path()), {"output.weight", "[64, 256]", "[64, 300]"});
}

TEST_F(HostileGguf, AFifoAsModelPathFailsAtOnce) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  const double secs = seconds([&] { EXPECT_CLEAR_ERROR(Model::load(path("fifo")), {"not a regular file"}); });
  EXPECT_LT(secs, 2.0);
}

// ---- Hugging Face config.json and safetensors ---------------------------------

nlohmann::json tiny_config() {
  return nlohmann::json{{"architectures", {"Qwen3ForCausalLM"}},
                        {"num_hidden_layers", 2},
                        {"hidden_size", 64},
                        {"num_attention_heads", 4},
                        {"num_key_value_heads", 2},
                        {"head_dim", 16},
                        {"intermediate_size", 128},
                        {"vocab_size", 256},
                        {"max_position_embeddings", 512},
                        {"rms_norm_eps", 1e-6}};
}

TEST(HostileConfig, ValidTinyConfigParses) {
  const ModelDesc d = desc_from_hf_config(tiny_config(), nullptr);
  EXPECT_EQ(d.n_layers, 2);
}

TEST(HostileConfig, FractionalAndHugeCountsAreRefusedNotTruncated) {
  auto c = tiny_config();
  c["num_hidden_layers"] = 2.5;
  EXPECT_CLEAR_ERROR(desc_from_hf_config(c, nullptr), {"num_hidden_layers", "2.5", "not an integer"});
  c = tiny_config();
  c["vocab_size"] = int64_t(1) << 40;
  EXPECT_CLEAR_ERROR(desc_from_hf_config(c, nullptr), {"vocab_size", "1099511627776"});
  c = tiny_config();
  c["num_hidden_layers"] = 400000000;
  const double before = peak_rss_mb();
  EXPECT_CLEAR_ERROR(desc_from_hf_config(c, nullptr), {"num_hidden_layers", "400000000", "1024"});
  EXPECT_LT(peak_rss_mb() - before, 100.0);
  c = tiny_config();
  c["rms_norm_eps"] = -1e-6;
  EXPECT_CLEAR_ERROR(desc_from_hf_config(c, nullptr), {"rms_norm_eps"});
  c = tiny_config();
  c["rope_theta"] = "big";
  EXPECT_CLEAR_ERROR(desc_from_hf_config(c, nullptr), {"rope_theta", "not a number"});
}

TEST(HostileConfig, Gemma3SlidingWindowPatternZeroIsRefused) {
  auto c = tiny_config();
  c["architectures"] = {"Gemma3ForCausalLM"};
  c["sliding_window"] = 16;
  c["sliding_window_pattern"] = 0;
  EXPECT_CLEAR_ERROR(desc_from_hf_config(c, nullptr), {"sliding_window_pattern", "0"});
}

class HostileFolder : public HostileGguf {};

// A safetensors file from a header object (offsets computed here) with zeroed data.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& [name, shape] : tensors) {
    uint64_t n = 4;
    for (int64_t x : shape) n *= uint64_t(x);
    h[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  const std::string text = h.dump();
  std::string bytes(8, '\0');
  const uint64_t len = text.size();
  std::memcpy(bytes.data(), &len, 8);
  bytes += text;
  bytes.append(size_t(off), '\0');
  write_file(path, bytes);
}

TEST_F(HostileFolder, OneDimensionalExpertTensorIsRefused) {
  auto c = tiny_config();
  c["architectures"] = {"Qwen3MoeForCausalLM"};
  c["num_experts"] = 2;
  c["num_experts_per_tok"] = 1;
  c["moe_intermediate_size"] = 32;
  write_file(dir_ + "/config.json", c.dump());
  write_safetensors(dir_ + "/model.safetensors",
                    {{"model.embed_tokens.weight", {256, 64}}, {"model.layers.0.mlp.experts.0.gate_proj.weight", {32}}});
  EXPECT_CLEAR_ERROR(Model::load(dir_), {"experts.0.gate_proj.weight", "1 dimensions, expected 2"});
}

TEST_F(HostileFolder, ConfigDisagreeingWithTensorsIsRefusedBeforeConvert) {
  auto c = tiny_config();
  c["hidden_size"] = 32;  // the tensors are 64 wide
  c["head_dim"] = 8;
  write_file(dir_ + "/config.json", c.dump());
  write_safetensors(dir_ + "/model.safetensors", {{"model.embed_tokens.weight", {256, 64}}});
  EXPECT_CLEAR_ERROR(load_hf_folder(dir_), {"token_embd.weight", "[64, 256]"});
}

TEST_F(HostileFolder, DeeplyNestedJsonIsRefusedWithoutExhaustingTheStack) {
  write_file(dir_ + "/config.json", "{\"a\": " + nested_json(100000) + "}");
  EXPECT_CLEAR_ERROR(Model::load(dir_), {"config.json", "nested deeper than 128"});

  write_file(dir_ + "/config.json", tiny_config().dump());
  write_file(dir_ + "/model.safetensors.index.json", "{\"weight_map\": " + nested_json(100000, "{\"a\":", "}") + "}");
  EXPECT_CLEAR_ERROR(Model::load(dir_), {"model.safetensors.index.json", "nested deeper"});
  std::filesystem::remove(dir_ + "/model.safetensors.index.json");

  const std::string header = "{\"x\": " + nested_json(100000) + "}";
  std::string bytes(8, '\0');
  const uint64_t len = header.size();
  std::memcpy(bytes.data(), &len, 8);
  write_file(dir_ + "/model.safetensors", bytes + header);
  EXPECT_CLEAR_ERROR(Model::load(dir_), {"model.safetensors", "nested deeper"});
}

TEST_F(HostileFolder, ErrorsQuoteOnlyAnExcerptOfLongInput) {
  write_file(dir_ + "/config.json", "{\"architectures\": [\"" + std::string(1 << 20, 'A') + "\"");
  EXPECT_CLEAR_ERROR(Model::load(dir_), {"config.json"});
}

}  // namespace

namespace {

TEST(HostileVocabulary, TokenizerLargerThanTheEmbeddingIsRefusedSmallerIsMasked) {
  const std::string tj = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})";
  const Tokenizer tok = Tokenizer::from_hf(tj, "");
  ModelDesc d = tiny_desc();
  d.vocab = 2;
  EXPECT_CLEAR_ERROR(sampling_vocab(d, tok), {"3 tokens", "2 rows"});
  d.vocab = 256;  // padding rows beyond the tokenizer: masked in sampling
  EXPECT_EQ(sampling_vocab(d, tok), 3);
}

}  // namespace
