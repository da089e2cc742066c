#include "bench/report.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "bench/nvml.h"
#include "bench/proc_stats.h"
#include "util/error.h"

namespace ember::bench {

using json = nlohmann::json;

namespace {

std::string ember_commit() {
  if (const char* c = std::getenv("EMBER_COMMIT"); c && *c) return c;
  const std::string cmd = std::string("git -C '") + EMBER_SOURCE_DIR + "' rev-parse --short HEAD 2>/dev/null";
  std::string s;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof(buf), p)) s = buf;
    pclose(p);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

RunInfo collect_run_info() {
  RunInfo info;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
  info.date = date;
  info.commit = ember_commit();
  info.cpu = cpu_model();
  info.cores = cpu_count();
  info.memory_gb = double(memory_bytes()) / 1e9;
  info.gpus = Nvml::get().gpu_names();
  return info;
}

namespace {

json sample_json(const Sample& s) {
  const StreamResult& r = s.r;
  json j = {{"label", s.label}, {"round", s.round}};
  if (s.clients) j["clients"] = s.clients;
  if (s.context) j["context"] = s.context;
  if (s.expected_reuse >= 0) j["expected_reuse"] = s.expected_reuse;
  j["status"] = r.status;
  if (!r.ok()) j["error"] = r.error;
  j["start_s"] = r.start;
  j["ttft_s"] = r.ttft() >= 0 ? json(r.ttft()) : json(nullptr);
  j["end_s"] = r.end;
  j["decode_tps"] = r.decode_tps() > 0 ? json(r.decode_tps()) : json(nullptr);
  j["prompt_tokens"] = r.prompt_tokens >= 0 ? json(r.prompt_tokens) : json(nullptr);
  j["cached_tokens"] = r.cached_tokens >= 0 ? json(r.cached_tokens) : json(nullptr);
  j["completion_tokens"] = r.completion_tokens >= 0 ? json(r.completion_tokens) : json(nullptr);
  j["finish_reason"] = r.finish_reason;
  j["text_times_s"] = r.text_times;
  if (s.cpu_s >= 0) {
    j["cpu_s"] = s.cpu_s;
    j["cpu_wall_s"] = s.cpu_wall_s;
  }
  if (s.drafted >= 0) {
    j["drafted"] = s.drafted;
    j["kept"] = s.kept;
  }
  return j;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", digits, v);
  return b;
}

}  // namespace

json to_json(const Suite& suite, const RunInfo& info) {
  const Plan& p = suite.plan();
  json j;
  j["ember_bench"] = 1;
  j["date"] = info.date;
  j["commit"] = info.commit;
  j["command"] = info.command;
  j["machine"] = {{"cpu", info.cpu}, {"cores", info.cores}, {"memory_gb", info.memory_gb}, {"gpus", info.gpus}};
  const ModelFacts& f = suite.facts();
  j["model"] = {{"name", f.name},
                {"file", f.file},
                {"summary", f.summary},
                {"weight_bytes_per_token", f.weight_bytes_per_token ? json(f.weight_bytes_per_token) : json(nullptr)},
                {"kv_bytes_per_position", f.kv_bytes_per_position > 0 ? json(f.kv_bytes_per_position) : json(nullptr)}};
  const auto& bw = suite.bandwidth();
  j["roofline"] = {{"device", bw ? json(bw->device) : json(nullptr)},
                   {"bandwidth_gbs", bw && bw->gbs > 0 ? json(bw->gbs) : json(nullptr)},
                   {"note", bw ? bw->note : std::string("not measured")},
                   {"bf16_tflops", info.bf16_tflops ? json(*info.bf16_tflops) : json(nullptr)},
                   {"bf16_note", info.bf16_note}};
  j["plan"] = {{"scenarios", p.scenarios}, {"rounds", p.rounds},           {"context", p.context},
               {"short_prompt", p.short_prompt}, {"decode_tokens", p.decode_tokens}, {"clients", p.clients},
               {"s2_tokens", p.s2_tokens}, {"s3_lengths", p.s3_lengths},       {"doc_tokens", p.doc_tokens},
               {"question_tokens", p.question_tokens}, {"session_tokens", p.session_tokens}, {"s8_contexts", p.s8_contexts},
               {"s8_tokens", p.s8_tokens}, {"notes", p.notes},                 {"prompts", info.prompts}};
  j["skipped"] = suite.skipped();
  j["targets"] = json::array();
  for (const TargetResult& tr : suite.results()) {
    json t = {{"name", tr.target.name},
              {"url", tr.target.ep.url},
              {"model", tr.target.ep.model},
              {"pid", tr.target.pid > 0 ? json(tr.target.pid) : json(nullptr)},
              {"started_by_bench", tr.target.started},
              {"backend", tr.target.backend},
              {"context", tr.target.context},
              {"cpu_source", tr.cpu_source.empty() ? json(nullptr) : json(tr.cpu_source)}};
    json scenarios = json::object();
    for (const auto& [id, sr] : tr.scenarios) {
      json s = {{"title", sr.title}, {"rows", sr.rows}, {"notes", sr.notes}};
      s["samples"] = json::array();
      for (const Sample& smp : sr.samples) s["samples"].push_back(sample_json(smp));
      scenarios[id] = s;
    }
    t["scenarios"] = scenarios;
    j["targets"].push_back(t);
  }
  return j;
}

std::string cell(const json& v, int digits) {
  if (v.is_null()) return "n/a";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) return fixed(v.get<double>(), digits < 0 ? 3 : digits);
  return v.dump();
}

std::string to_markdown(const Suite& suite, const RunInfo& info) {
  const ModelFacts& f = suite.facts();
  const auto& results = suite.results();
  std::string md = "# ember bench" + (f.name.empty() ? std::string() : ": " + f.name) + "\n\n";
  md += "- date " + info.date + ", ember commit " + (info.commit.empty() ? "unknown" : info.commit) + "\n";
  md += "- machine: " + info.cpu + ", " + std::to_string(info.cores) + " threads, " + fixed(info.memory_gb, 0) + " GB" +
        (info.gpus.empty() ? std::string() : "; GPU: " + join(info.gpus, ", ")) + "\n";
  if (!f.file.empty()) md += "- model: " + f.file + (f.summary.empty() ? "" : " (" + f.summary + ")") + "\n";
  if (f.weight_bytes_per_token)
    md += "- bytes per decoded token: " + fixed(double(f.weight_bytes_per_token) / 1e9, 3) + " GB of weights + " +
          fixed(f.kv_bytes_per_position / 1e3, 1) + " KB of KV cache per position of context\n";
  if (const auto& bw = suite.bandwidth(); bw && bw->gbs > 0)
    md += "- roofline: " + fixed(bw->gbs, 1) + " GB/s on " + bw->device + " (" + bw->note + ")\n";
  else
    md += "- roofline: not measured\n";
  if (info.bf16_tflops) md += "- bf16 matrix rate (the prefill roofline): " + info.bf16_note + "\n";
  for (const TargetResult& tr : results)
    md += "- server: " + tr.target.name + " at " + tr.target.ep.url + (tr.target.started ? ", started by the bench" : "") +
          (tr.target.backend.empty() ? "" : ", backend " + tr.target.backend) + ", context " +
          std::to_string(tr.target.context) + "\n";
  const Plan& p = suite.plan();
  md += "- " + std::to_string(p.rounds) + " round" + (p.rounds == 1 ? "" : "s") + " (medians)" +
        (results.size() > 1 ? ", servers interleaved round by round" : "") + "; prompts: " + info.prompts + "\n";
  for (const std::string& n : p.notes) md += "- " + n + "\n";
  for (const std::string& s : suite.skipped()) md += "- skipped (time limit): " + s + "\n";

  for (const std::string& id : p.scenarios) {
    const ScenarioResult* first = nullptr;
    for (const TargetResult& tr : results)
      if (auto it = tr.scenarios.find(id); it != tr.scenarios.end() && !it->second.columns.empty()) first = &it->second;
    if (!first) continue;
    md += "\n## " + first->title + "\n\n";
    const bool many = results.size() > 1;
    std::string head = "|", rule = "|";
    if (many) head += " server |", rule += "---|";
    for (const Column& c : first->columns) head += " " + c.header + " |", rule += "---|";
    md += head + "\n" + rule + "\n";
    for (const TargetResult& tr : results) {
      auto it = tr.scenarios.find(id);
      if (it == tr.scenarios.end()) continue;
      for (const json& row : it->second.rows) {
        std::string line = "|";
        if (many) line += " " + tr.target.name + " |";
        for (const Column& c : it->second.columns) {
          line += ' ';
          line += cell(row.contains(c.key) ? row[c.key] : json(nullptr), c.digits);
          line += " |";
        }
        md += line + "\n";
      }
    }
    for (const std::string& n : first->notes) md += "\n" + n + "\n";
  }
  return md;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("bench: cannot write " + path);
    f << text;
    if (!f.flush()) throw Error("bench: cannot write " + path);
  }
  std::filesystem::rename(tmp, target);
}

}  // namespace ember::bench
