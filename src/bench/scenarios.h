// The scenario runner: S1..S9 of ../shared/bench.md against one or two
// servers (--interleave: round r of a scenario runs on the first server, then
// the second, then round r + 1), every request timed from the stream, each
// scenario summed up in a table of rows once its rounds are done.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/plan.h"
#include "bench/prompts.h"
#include "bench/progress.h"
#include "bench/roofline.h"
#include "bench/sampler.h"
#include "bench/sse_client.h"

namespace ember::bench {

// The served model as far as the bench knows it (from the file, when it has one).
struct ModelFacts {
  std::string name;                   // GGUF general.name, else the file's stem; "" unknown
  std::string file;                   // "" when the bench has no file
  std::string summary;                // "qwen3, 2 layers, ..." and the weight types
  uint64_t weight_bytes_per_token = 0;  // 0: unknown (no roofline percentages)
  double kv_bytes_per_position = 0;     // KV cache bytes one position adds (all layers, K and V)
};

struct Target {
  std::string name;   // "ember" (started by the bench) or the URL
  Endpoint ep;
  pid_t pid = -1;     // on this machine, when known
  bool started = false;
  int64_t context = 0;
  std::string backend;  // as asked of the server ember started; "" otherwise
};

// One request as the client saw it.
struct Sample {
  std::string label;  // "S1", "clients=4", "8022 tokens", "turn 2", "A again", ...
  int round = 0;
  int clients = 0;        // S2
  int64_t context = 0;    // S8: the prompt's length before decoding
  int64_t expected_reuse = -1;  // S4, S5: the longest prefix shared with an earlier prompt (capped at its length - 1)
  StreamResult r;
  double cpu_s = -1, cpu_wall_s = -1;  // S1: the server's CPU seconds over wall seconds of decoding
  int64_t drafted = -1, kept = -1;     // S9: the server's draft tokens over the request (its /metrics; -1: not reported)
};

struct Column {
  std::string key, header;
  int digits = -1;  // decimals of a number; -1: as it is
};

struct ScenarioResult {
  std::string id, title;
  std::vector<Column> columns;
  std::vector<nlohmann::json> rows;  // objects with the columns' keys (and more)
  std::vector<Sample> samples;
  std::vector<std::string> notes;
};

struct TargetResult {
  Target target;
  std::string cpu_source;  // how S6 reads the server's CPU time; "" n/a
  std::map<std::string, ScenarioResult> scenarios;
  std::map<std::string, MemoryPeak> memory;  // S7, per scenario run
};

class Suite {
 public:
  Suite(Plan plan, std::vector<Target> targets, ModelFacts facts, std::optional<Bandwidth> bandwidth, PromptMaker& prompts,
        Progress& progress, double deadline_s = 0);
  ~Suite();
  // Runs the plan; `checkpoint` after each scenario (results so far, e.g. to rewrite the JSON).
  void run(const std::function<void()>& checkpoint = {});

  const Plan& plan() const { return plan_; }
  const ModelFacts& facts() const { return facts_; }
  const std::optional<Bandwidth>& bandwidth() const { return bandwidth_; }
  const std::vector<TargetResult>& results() const { return results_; }
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  bool out_of_time(const std::string& what);
  StreamResult request(size_t t, const std::vector<int32_t>& prompt, int max_tokens, const std::function<void()>& on_first = {});
  void warm_up(size_t t);
  void s1(int round);
  void s2(int round);
  void s3(int round);
  void s4(int round);
  void s5(int round);
  // Requests one after another on each server, each expecting the longest prefix it shares with the earlier ones.
  void session(const std::string& id, int round,
               const std::vector<std::pair<const std::vector<int32_t>*, std::string>>& order);
  void s8(int round);
  void s9(int round);
  void summarize(const std::string& id);
  double roofline_at(double context) const;  // tok/s; 0 unknown

  Plan plan_;
  ModelFacts facts_;
  std::optional<Bandwidth> bandwidth_;
  PromptMaker& prompts_;
  Progress& progress_;
  double deadline_s_;
  std::vector<TargetResult> results_;
  std::vector<std::unique_ptr<ServerProbe>> probes_;
  std::vector<std::vector<int32_t>> s8_prompts_;  // one per context, made once: rounds after the first find it cached
  std::vector<std::vector<int32_t>> s9_prompts_;  // the code-editing prompt and the free-form one, made once
  std::vector<std::string> skipped_;
  std::string current_;  // the scenario running
};

// The longest prefix `p` shares with any of `earlier`, at most |p| - 1 (a
// server computes at least the last prompt token).
int64_t shared_prefix(const std::vector<std::vector<int32_t>>& earlier, const std::vector<int32_t>& p);

// Nearest-rank percentile (q in [0, 1]) of v; 0 when empty.
double percentile(std::vector<double> v, double q);

}  // namespace ember::bench
