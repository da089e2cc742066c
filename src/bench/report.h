// The bench's outputs: a Markdown table per scenario (stdout) and one JSON
// document with the plan, the machine, the roofline, every summary row and
// every raw sample (--json FILE; the fields are listed in docs/bench.md).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/scenarios.h"

namespace ember::bench {

struct RunInfo {
  std::string date;    // UTC, ISO 8601
  std::string commit;  // ember's, when known
  std::string cpu;
  int cores = 0;
  double memory_gb = 0;
  std::vector<std::string> gpus;
  std::string prompts;  // how prompts were made (tokenizer or plain ids)
  std::optional<double> bf16_tflops;  // the GPU's bf16 matrix rate, where measured
  std::string bf16_note;
  std::vector<std::string> command;  // the command line
};

// Date, machine and ember's commit ($EMBER_COMMIT, else `git rev-parse` in the source tree it was built from).
RunInfo collect_run_info();

nlohmann::json to_json(const Suite& suite, const RunInfo& info);
std::string to_markdown(const Suite& suite, const RunInfo& info);

// One value as a table cell: null as "n/a", numbers with `digits` decimals.
std::string cell(const nlohmann::json& v, int digits);

// Writes text to path (via a temporary file, renamed: a reader never sees half of it).
void write_text_file(const std::string& path, const std::string& text);

}  // namespace ember::bench
