// A model's own default sampling: read from GGUF general.sampling.* keys and
// from generation_config.json, checked like request fields, and applied by
// both APIs to exactly the fields a request leaves out.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "gguf/gguf.h"
#include "model/sampling_defaults.h"
#include "server/anthropic_api.h"
#include "server/json_fields.h"
#include "server/openai_api.h"
#include "server_test_util.h"
#include "util/error.h"

using namespace ember;
using namespace ember::server;

namespace {

// A GGUF file with only metadata, read back.
gguf::Reader gguf_with(const std::vector<std::pair<std::string, gguf::Value>>& kv) {
  const std::string path = (std::filesystem::temp_directory_path() / "ember_sampling_keys.gguf").string();
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::str("llama"));
  for (const auto& [k, v] : kv) w.set(k, v);
  w.begin(path);
  w.finish();
  gguf::Reader r = gguf::Reader::open(path);
  std::filesystem::remove(path);
  return r;
}

// The Qwen3 test model with default sampling temperature 0.7, top_k 20, top_p 0.8, min_p 0.05.
ServedModel model_with_defaults() {
  ServedModel m = test::qwen3_model();
  m.sampling_defaults = sampling_defaults_from_generation_config(
      R"({"do_sample": true, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "min_p": 0.05})");
  m.sampling = model_sampling(m.sampling_defaults);
  return m;
}

}  // namespace

TEST(ModelSampling, ReadsGgufSamplingKeys) {
  const gguf::Reader r = gguf_with({{"general.sampling.temp", gguf::Value::f32(0.6f)},
                                    {"general.sampling.top_k", gguf::Value::u32(40)},
                                    {"general.sampling.top_p", gguf::Value::f32(0.95f)},
                                    {"general.sampling.min_p", gguf::Value::f64(0.0)},
                                    {"general.sampling.penalty_repeat", gguf::Value::f32(1.1f)}});
  const SamplingDefaults d = sampling_defaults_from_gguf(r);
  EXPECT_NEAR(*d.temperature, 0.6, 1e-6);
  EXPECT_EQ(*d.top_k, 40);
  EXPECT_NEAR(*d.top_p, 0.95, 1e-6);
  ASSERT_TRUE(d.min_p.has_value());  // a stated zero is a choice, kept
  EXPECT_EQ(*d.min_p, 0.0);
  EXPECT_NEAR(*d.repetition_penalty, 1.1, 1e-6);
  EXPECT_EQ(d.describe(), "temperature 0.6, top_k 40, top_p 0.95, min_p 0, repetition_penalty 1.1 (from general.sampling.*)");
  EXPECT_TRUE(sampling_defaults_from_gguf(gguf_with({})).empty());
  EXPECT_THROW(sampling_defaults_from_gguf(gguf_with({{"general.sampling.temp", gguf::Value::str("hot")}})), Error);
}

TEST(ModelSampling, WrittenKeysReadBack) {
  SamplingDefaults d;
  d.temperature = 0.25;
  d.top_k = 7;
  const std::string path = (std::filesystem::temp_directory_path() / "ember_sampling_written.gguf").string();
  gguf::Writer w;
  write_sampling_defaults(w, d);
  w.begin(path);
  w.finish();
  const SamplingDefaults back = sampling_defaults_from_gguf(gguf::Reader::open(path));
  std::filesystem::remove(path);
  EXPECT_NEAR(*back.temperature, 0.25, 1e-6);
  EXPECT_EQ(*back.top_k, 7);
  EXPECT_FALSE(back.top_p || back.min_p || back.repetition_penalty);
}

TEST(ModelSampling, ReadsGenerationConfig) {
  const SamplingDefaults d = sampling_defaults_from_generation_config(
      R"({"bos_token_id": 1, "do_sample": true, "temperature": 0.6, "top_p": 0.9, "top_k": 20, "repetition_penalty": 1.05})");
  EXPECT_EQ(*d.temperature, 0.6);
  EXPECT_EQ(*d.top_p, 0.9);
  EXPECT_EQ(*d.top_k, 20);
  EXPECT_EQ(*d.repetition_penalty, 1.05);
  EXPECT_FALSE(d.min_p.has_value());
  // do_sample: false is greedy, whatever temperature says; no sampling fields at all is nothing.
  EXPECT_EQ(*sampling_defaults_from_generation_config(R"({"do_sample": false, "temperature": 0.6})").temperature, 0.0);
  EXPECT_TRUE(sampling_defaults_from_generation_config(R"({"bos_token_id": 1, "use_cache": true})").empty());
  EXPECT_THROW(sampling_defaults_from_generation_config(R"({"temperature": "0.6"})"), Error);
  EXPECT_THROW(sampling_defaults_from_generation_config(R"({"top_k": 2.5})"), Error);
  EXPECT_THROW(sampling_defaults_from_generation_config(R"({"do_sample": 1})"), Error);
  EXPECT_THROW(sampling_defaults_from_generation_config("[1, 2]"), Error);
  EXPECT_THROW(sampling_defaults_from_generation_config("{"), Error);
  // Past int64's range: refused before any conversion (which would be undefined).
  EXPECT_THROW(sampling_defaults_from_generation_config(R"({"top_k": 1e30})"), Error);
  EXPECT_THROW(sampling_defaults_from_generation_config(R"({"top_k": -1e300})"), Error);
}

TEST(ModelSampling, OutOfRangeDefaultsAreRefusedNamingTheSource) {
  SamplingDefaults d;
  d.source = "general.sampling.*";
  d.temperature = -1;
  try {
    model_sampling(d);
    FAIL() << "a negative temperature was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("general.sampling.*"), std::string::npos) << e.what();
  }
  d.temperature.reset();
  d.top_p = 0;
  EXPECT_THROW(model_sampling(d), Error);
  d.top_p.reset();
  d.top_k = -3;
  EXPECT_THROW(model_sampling(d), Error);
}

TEST(ModelSampling, RequestsTakeTheModelsDefaultsForFieldsTheyOmit) {
  const ServedModel m = model_with_defaults();
  const json msgs = json::array({{{"role", "user"}, {"content", "hi"}}});
  // Nothing set: all the model's.
  SamplingParams sp = parse_chat_completion(json{{"model", "tiny"}, {"messages", msgs}}, m).gen.sampling;
  EXPECT_FLOAT_EQ(sp.temperature, 0.7f);
  EXPECT_EQ(sp.top_k, 20);
  EXPECT_FLOAT_EQ(sp.top_p, 0.8f);
  EXPECT_FLOAT_EQ(sp.min_p, 0.05f);
  // The request's own values win, field by field (temperature 0 is greedy, not "unset").
  sp = parse_chat_completion(json{{"model", "tiny"}, {"messages", msgs}, {"temperature", 0}, {"top_k", 3}}, m).gen.sampling;
  EXPECT_EQ(sp.temperature, 0.0f);
  EXPECT_EQ(sp.top_k, 3);
  EXPECT_FLOAT_EQ(sp.top_p, 0.8f);
  sp = parse_completion(json{{"model", "tiny"}, {"prompt", "x"}, {"top_p", 0.5}}, m).gen.sampling;
  EXPECT_FLOAT_EQ(sp.temperature, 0.7f);
  EXPECT_FLOAT_EQ(sp.top_p, 0.5f);
  sp = parse_messages(json{{"model", "tiny"}, {"messages", msgs}, {"max_tokens", 4}}, m).gen.sampling;
  EXPECT_FLOAT_EQ(sp.temperature, 0.7f);
  EXPECT_EQ(sp.top_k, 20);
  sp = parse_messages(json{{"model", "tiny"}, {"messages", msgs}, {"max_tokens", 4}, {"temperature", 0.1}}, m).gen.sampling;
  EXPECT_FLOAT_EQ(sp.temperature, 0.1f);
  // A model without defaults stays greedy.
  EXPECT_EQ(parse_chat_completion(json{{"model", "tiny"}, {"messages", msgs}}, test::qwen3_model()).gen.sampling.temperature, 0.0f);
}

TEST(ModelSampling, ModelsListShowsTheDefaults) {
  const json list = openai_models(model_with_defaults());
  const json& s = list["data"][0]["sampling_defaults"];
  EXPECT_EQ(s["temperature"], 0.7);
  EXPECT_EQ(s["top_k"], 20);
  EXPECT_EQ(s["source"], "generation_config.json");
  EXPECT_FALSE(openai_models(test::qwen3_model())["data"][0].contains("sampling_defaults"));
}
