// `ember bench` end to end with the `tiny` preset on the CPU: every scenario
// with --quick against the ember server it starts, interleaved round by round
// with a second ember server started here (--interleave), then --url against
// that second server alone. Checks the JSON's documented fields, the plots
// (well-formed SVG), the Markdown tables, and that S4/S5 report exactly the
// prompt tokens a token-exact prefix cache reuses, computed here from the
// prompts' lengths: the whole document for A + question, all but the last
// token for A sent again, nothing for a new document.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "bench/server_child.h"
#include "xml_check.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Outcome {
  int code = -1;
  std::string out;
};

Outcome run(const std::string& cmd) {
  Outcome r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class BenchEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("ember-bench-e2e-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    model_ = (dir_ / "tiny.gguf").string();
    const Outcome g = run(std::string(EMBER_BIN) + " gen-model --preset tiny -o " + model_);
    ASSERT_EQ(g.code, 0) << g.out;
    peer_ = new ember::bench::ServerChild({"--model", model_, "--ctx", "2304", "--parallel", "4", "--threads", "1"},
                                          (dir_ / "peer.log").string(), EMBER_BIN);
    peer_->wait_ready(120);
  }
  static void TearDownTestSuite() {
    delete peer_;
    fs::remove_all(dir_);
  }

  // The rows and samples of one scenario of one target.
  static const json& scenario(const json& doc, size_t target, const std::string& id) {
    return doc["targets"][target]["scenarios"][id];
  }
  static const json* sample(const json& s, const std::string& label, int round = 1) {
    for (const json& x : s["samples"])
      if (x["label"] == label && x["round"] == round) return &x;
    return nullptr;
  }

  // S4 and S5: the cache reuse the prompts' lengths imply, for every round.
  static void expect_exact_reuse(const json& doc, size_t target) {
    const json& s4 = scenario(doc, target, "S4");
    const json* t1 = sample(s4, "turn 1");
    const json* t2 = sample(s4, "turn 2");
    ASSERT_TRUE(t1 && t2);
    const int64_t a = (*t1)["prompt_tokens"];
    EXPECT_EQ((*t2)["prompt_tokens"].get<int64_t>(), a + 40);
    EXPECT_EQ((*t1)["cached_tokens"].get<int64_t>(), 0);
    EXPECT_EQ((*t2)["cached_tokens"].get<int64_t>(), a);  // the whole document
    EXPECT_EQ(s4["rows"][1]["cached_tokens"].get<int64_t>(), a);
    EXPECT_EQ(s4["rows"][1]["expected_reuse"].get<int64_t>(), a);

    const json& s5 = scenario(doc, target, "S5");
    const std::map<std::string, int64_t> want = {{"A", 0}, {"A again", a - 1}, {"B", 0}, {"back to A", a - 1}};
    for (const auto& [label, cached] : want) {
      const json* x = sample(s5, label);
      ASSERT_TRUE(x) << label;
      EXPECT_EQ((*x)["prompt_tokens"].get<int64_t>(), a) << label;
      EXPECT_EQ((*x)["cached_tokens"].get<int64_t>(), cached) << label;
      EXPECT_EQ((*x)["expected_reuse"].get<int64_t>(), cached) << label;
    }
  }

  static inline fs::path dir_;
  static inline std::string model_;
  static inline ember::bench::ServerChild* peer_ = nullptr;
};

TEST_F(BenchEndToEnd, EveryScenarioAgainstTheServerItStartsInterleavedWithAnother) {
  const fs::path json_path = dir_ / "all.json", plots = dir_ / "plots";
  const Outcome r = run(std::string(EMBER_BIN) + " bench --model " + model_ + " --quick --seed 7 --no-progress --serve-args '--threads 1'" +
                    " --interleave " + peer_->url() + " --interleave-name peer --json " + json_path.string() + " --plot " +
                    plots.string());
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* heading : {"## S1 ", "## S2 ", "## S3 ", "## S4 ", "## S5 ", "## S6 ", "## S7 ", "## S8 "})
    EXPECT_NE(r.out.find(heading), std::string::npos) << heading << "\n" << r.out;
  EXPECT_NE(r.out.find("| server |"), std::string::npos);

  const json doc = json::parse(slurp(json_path));
  for (const char* key : {"ember_bench", "date", "commit", "machine", "model", "roofline", "plan", "targets", "skipped"})
    EXPECT_TRUE(doc.contains(key)) << key;
  EXPECT_GT(doc["model"]["weight_bytes_per_token"].get<double>(), 0);
  EXPECT_GT(doc["model"]["kv_bytes_per_position"].get<double>(), 0);
  EXPECT_GT(doc["roofline"]["bandwidth_gbs"].get<double>(), 0);
  ASSERT_EQ(doc["targets"].size(), 2u);
  EXPECT_EQ(doc["targets"][0]["name"], "ember");
  EXPECT_EQ(doc["targets"][0]["started_by_bench"], true);
  EXPECT_EQ(doc["targets"][1]["name"], "peer");
  for (size_t t = 0; t < 2; ++t) {
    const json& sc = doc["targets"][t]["scenarios"];
    for (const char* id : {"S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"}) {
      ASSERT_TRUE(sc.contains(id)) << id;
      EXPECT_FALSE(sc[id]["rows"].empty()) << id;
      EXPECT_TRUE(sc[id].contains("title")) << id;
    }
    const json& s1 = sc["S1"]["rows"][0];
    for (const char* k : {"decode_tps", "ttft_s", "itl_p50_ms", "roofline_tps", "pct_roofline", "new_tokens"})
      EXPECT_TRUE(s1.contains(k) && s1[k].is_number()) << k;
    EXPECT_GT(s1["decode_tps"].get<double>(), 0);
    const json& smp = sc["S1"]["samples"][0];
    for (const char* k : {"label", "round", "status", "start_s", "ttft_s", "end_s", "decode_tps", "prompt_tokens",
                          "cached_tokens", "completion_tokens", "text_times_s"})
      EXPECT_TRUE(smp.contains(k)) << k;
    EXPECT_EQ(smp["prompt_tokens"].get<int64_t>(), 44);
    ASSERT_EQ(sc["S2"]["rows"].size(), 3u);
    for (const json& row : sc["S2"]["rows"]) {
      EXPECT_GT(row["aggregate_tps"].get<double>(), 0);
      EXPECT_GT(row["slowest_s"].get<double>(), 0);
      EXPECT_TRUE(row["ttft_p99_s"].is_number());
      EXPECT_EQ(row["failed"].get<int>(), 0);
    }
    for (const json& row : sc["S3"]["rows"]) {
      EXPECT_GT(row["prefill_s"].get<double>(), 0);
      EXPECT_EQ(row["cached_tokens"].get<int64_t>(), 0) << "a cold prompt found something in the cache";
    }
    // Both servers run on this machine: /proc gives their CPU time and peak RSS.
    EXPECT_EQ(sc["S6"]["rows"][0]["source"], "/proc");
    EXPECT_GT(sc["S6"]["rows"][0]["cores_busy"].get<double>(), 0);
    for (const json& row : sc["S7"]["rows"]) EXPECT_GT(row["peak_rss_gb"].get<double>(), 0.001);
    for (const json& row : sc["S8"]["rows"]) EXPECT_GT(row["decode_tps"].get<double>(), 0);
    expect_exact_reuse(doc, t);
  }

  for (const char* name : {"s2_aggregate_tps.svg", "s2_slowest.svg", "s3_prefill.svg", "s5_sessions.svg", "s8_decode.svg"}) {
    const std::string svg = slurp(plots / name);
    ASSERT_FALSE(svg.empty()) << name;
    EXPECT_EQ(ember::bench::test::xml_problem(svg), "") << name;
    EXPECT_NE(svg.find(">peer</text>"), std::string::npos) << name << ": no legend entry";
  }
}

TEST_F(BenchEndToEnd, UrlOfAnotherServerWithTheModelsTokenizer) {
  const fs::path json_path = dir_ / "url.json";
  const Outcome r = run(std::string(EMBER_BIN) + " bench --url " + peer_->url() + "/v1 --tokenizer " + model_ +
                    " --quick --seed 11 --no-progress --roofline off --scenarios S4,S5,S6,S7 --json " + json_path.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const json doc = json::parse(slurp(json_path));
  ASSERT_EQ(doc["targets"].size(), 1u);
  EXPECT_EQ(doc["targets"][0]["started_by_bench"], false);
  EXPECT_EQ(doc["targets"][0]["model"], "tiny");
  EXPECT_EQ(doc["targets"][0]["pid"].get<int>(), peer_->pid());  // found by its port
  EXPECT_TRUE(doc["roofline"]["bandwidth_gbs"].is_null());
  expect_exact_reuse(doc, 0);
  EXPECT_NE(r.out.find("## S4 "), std::string::npos);
  EXPECT_EQ(r.out.find("## S3 "), std::string::npos);
}

// S9: the bench starts a second ember with --draft-args; both give the same
// greedy answers, and the second's /metrics report its drafts.
TEST_F(BenchEndToEnd, S9ComparesASecondServerThatDrafts) {
  const fs::path json_path = dir_ / "s9.json";
  const Outcome r = run(std::string(EMBER_BIN) + " bench --model " + model_ + " --quick --seed 3 --no-progress --roofline off" +
                    " --scenarios S9 --serve-args '--threads 1' --draft-args '--draft-tokens 3' --json " + json_path.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const json doc = json::parse(slurp(json_path));
  ASSERT_EQ(doc["targets"].size(), 2u);
  EXPECT_NE(doc["targets"][1]["name"].get<std::string>().find("--draft-tokens 3"), std::string::npos);
  for (size_t t = 0; t < 2; ++t) {
    const json& rows = scenario(doc, t, "S9")["rows"];
    ASSERT_EQ(rows.size(), 2u);
    for (const json& row : rows) {
      EXPECT_EQ(row["same_answers"], "1/1") << t << " " << row["prompt"];
      EXPECT_EQ(row["runs"], 1);
    }
    const json* edit = sample(scenario(doc, t, "S9"), "edit");
    ASSERT_TRUE(edit);
    ASSERT_TRUE(edit->contains("drafted")) << "ember's /metrics report drafts";
    if (t == 0) EXPECT_EQ((*edit)["drafted"], 0);
  }
  EXPECT_NE(r.out.find("## S9 speculative decoding"), std::string::npos) << r.out;
}

TEST_F(BenchEndToEnd, RooflineAndBadFlags) {
  const Outcome roof = run(std::string(EMBER_BIN) + " bench roofline --device cpu --mib 32 --model " + model_);
  ASSERT_EQ(roof.code, 0) << roof.out;
  EXPECT_NE(roof.out.find("| cpu |"), std::string::npos) << roof.out;
  EXPECT_NE(roof.out.find("roofline tok/s"), std::string::npos) << roof.out;
  const Outcome none = run(std::string(EMBER_BIN) + " bench --quick");
  EXPECT_NE(none.code, 0);
  EXPECT_NE(none.out.find("--model FILE"), std::string::npos) << none.out;
  const Outcome bad = run(std::string(EMBER_BIN) + " bench --url " + peer_->url() + " --scenarios S1,S12");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("unknown scenario"), std::string::npos) << bad.out;
  const Outcome clients = run(std::string(EMBER_BIN) + " bench --url " + peer_->url() + " --clients 1,two");
  EXPECT_NE(clients.code, 0);
  EXPECT_NE(clients.out.find("--clients takes counts"), std::string::npos) << clients.out;
  const Outcome down = run(std::string(EMBER_BIN) + " bench --url http://127.0.0.1:1 --quick --roofline off");
  EXPECT_NE(down.code, 0);
  EXPECT_NE(down.out.find("does not answer"), std::string::npos) << down.out;
}

}  // namespace
