#include "bench/scenarios.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <latch>
#include <optional>
#include <thread>

#include "bench_util.h"
#include "util/error.h"

namespace ember::bench {

using json = nlohmann::json;

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = size_t(std::ceil(q * double(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

int64_t shared_prefix(const std::vector<std::vector<int32_t>>& earlier, const std::vector<int32_t>& p) {
  size_t best = 0;
  for (const auto& e : earlier) {
    size_t n = 0;
    while (n < e.size() && n < p.size() && e[n] == p[n]) ++n;
    best = std::max(best, n);
  }
  return int64_t(std::min(best, p.empty() ? 0 : p.size() - 1));
}

namespace {

// Seconds to the first output: the first text, or the end of a stream that
// carried none (one generated token whose text is empty or held back).
double first_output(const StreamResult& r) { return r.ttft() >= 0 ? r.ttft() : r.end; }

json num_or_null(double v, bool ok) { return ok ? json(v) : json(nullptr); }

std::string fmt(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", digits, v);
  return b;
}

template <class F>
std::vector<double> collect(const std::vector<const Sample*>& ss, F f) {
  std::vector<double> v;
  for (const Sample* s : ss) v.push_back(f(*s));
  return v;
}

}  // namespace

Suite::Suite(Plan plan, std::vector<Target> targets, ModelFacts facts, std::optional<Bandwidth> bandwidth, PromptMaker& prompts,
             Progress& progress, double deadline_s)
    : plan_(std::move(plan)), facts_(std::move(facts)), bandwidth_(std::move(bandwidth)), prompts_(prompts), progress_(progress),
      deadline_s_(deadline_s) {
  for (Target& t : targets) {
    probes_.push_back(std::make_unique<ServerProbe>(t.ep, t.pid));
    TargetResult tr;
    tr.target = std::move(t);
    tr.cpu_source = probes_.back()->cpu_source();
    results_.push_back(std::move(tr));
  }
}

Suite::~Suite() = default;

bool Suite::out_of_time(const std::string& what) {
  if (deadline_s_ <= 0 || now_s() < deadline_s_) return false;
  skipped_.push_back(what);
  progress_.line("time limit reached: " + what + " skipped");
  return true;
}

StreamResult Suite::request(size_t t, const std::vector<int32_t>& prompt, int max_tokens, const std::function<void()>& on_first) {
  StreamResult r = stream_completion(results_[t].target.ep, {prompt, max_tokens}, on_first);
  if (!r.ok()) progress_.line(current_ + " on " + results_[t].target.name + ": request failed: " + r.error);
  return r;
}

void Suite::warm_up(size_t t) {
  const StreamResult r = stream_completion(results_[t].target.ep, {prompts_.document(16), 4});
  if (!r.ok()) throw Error("bench: the warm-up request to " + results_[t].target.ep.url + " failed: " + r.error);
}

void Suite::run(const std::function<void()>& checkpoint) {
  for (const std::string& id : plan_.run) {
    current_ = id;
    if (out_of_time(id)) continue;
    for (auto& p : probes_) p->begin();
    for (size_t t = 0; t < results_.size(); ++t) warm_up(t);
    for (int round = 1; round <= plan_.rounds; ++round) {
      if (round > 1 && out_of_time(id + " round " + std::to_string(round))) break;
      if (id == "S1") s1(round);
      if (id == "S2") s2(round);
      if (id == "S3") s3(round);
      if (id == "S4") s4(round);
      if (id == "S5") s5(round);
      if (id == "S8") s8(round);
      if (id == "S9") s9(round);
    }
    for (size_t t = 0; t < results_.size(); ++t) results_[t].memory[id] = probes_[t]->end();
    summarize(id);
    if (id == "S1" && plan_.has("S6")) summarize("S6");
    if (plan_.has("S7")) summarize("S7");
    if (checkpoint) checkpoint();
  }
}

static std::string round_text(const Plan& p, int round) { return "round " + std::to_string(round) + "/" + std::to_string(p.rounds); }

void Suite::s1(int round) {
  const std::vector<int32_t> prompt = prompts_.document(plan_.short_prompt);
  for (size_t t = 0; t < results_.size(); ++t) {
    progress_.status("S1 " + round_text(plan_, round) + " on " + results_[t].target.name + ": " +
                     std::to_string(plan_.decode_tokens) + " tokens");
    ServerProbe& probe = *probes_[t];
    double cpu0 = -1, t0 = 0;
    if (probe.cpu_source() == "/metrics") {
      cpu0 = probe.cpu_seconds().value_or(-1);
      t0 = now_s();
    }
    Sample s;
    s.label = "S1";
    s.round = round;
    s.r = request(t, prompt, plan_.decode_tokens, [&] {
      if (probe.cpu_source() == "/proc") {
        cpu0 = probe.cpu_seconds().value_or(-1);
        t0 = now_s();
      }
    });
    const double t1 = now_s();
    const auto cpu1 = probe.cpu_seconds();
    if (cpu0 >= 0 && cpu1 && t1 > t0) {
      s.cpu_s = *cpu1 - cpu0;
      s.cpu_wall_s = t1 - t0;
    }
    if (s.r.ok())
      progress_.status("S1 " + round_text(plan_, round) + " on " + results_[t].target.name + ": " +
                       fmt(s.r.decode_tps(), 1) + " tok/s");
    results_[t].scenarios["S1"].samples.push_back(std::move(s));
  }
}

void Suite::s2(int round) {
  for (int clients : plan_.clients) {
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < clients; ++i) prompts.push_back(prompts_.document(plan_.short_prompt));
    for (size_t t = 0; t < results_.size(); ++t) {
      if (out_of_time("S2 " + std::to_string(clients) + " clients, " + round_text(plan_, round))) return;
      progress_.status("S2 " + round_text(plan_, round) + " on " + results_[t].target.name + ": " + std::to_string(clients) +
                       " clients x " + std::to_string(plan_.s2_tokens) + " tokens");
      std::vector<StreamResult> rs(static_cast<size_t>(clients));
      std::latch go(clients);
      std::vector<std::thread> threads;
      for (int i = 0; i < clients; ++i)
        threads.emplace_back([&, i] {
          go.arrive_and_wait();
          rs[size_t(i)] = stream_completion(results_[t].target.ep, {prompts[size_t(i)], plan_.s2_tokens});
        });
      for (auto& th : threads) th.join();
      int failed = 0;
      for (auto& r : rs) {
        if (!r.ok() && failed++ == 0) progress_.line("S2 on " + results_[t].target.name + ": request failed: " + r.error);
        Sample s;
        s.label = "clients=" + std::to_string(clients);
        s.round = round;
        s.clients = clients;
        s.r = std::move(r);
        results_[t].scenarios["S2"].samples.push_back(std::move(s));
      }
    }
  }
}

void Suite::s3(int round) {
  for (int64_t len : plan_.s3_lengths) {
    const std::vector<int32_t> prompt = prompts_.document(len);
    for (size_t t = 0; t < results_.size(); ++t) {
      if (out_of_time("S3 " + std::to_string(len) + " tokens, " + round_text(plan_, round))) return;
      progress_.status("S3 " + round_text(plan_, round) + " on " + results_[t].target.name + ": cold prefill of " +
                       std::to_string(len) + " tokens");
      Sample s;
      s.label = std::to_string(len) + " tokens";
      s.round = round;
      s.context = len;
      s.r = request(t, prompt, 1);
      results_[t].scenarios["S3"].samples.push_back(std::move(s));
    }
  }
}

void Suite::session(const std::string& id, int round, const std::vector<std::pair<const std::vector<int32_t>*, std::string>>& order) {
  for (size_t t = 0; t < results_.size(); ++t) {
    std::vector<std::vector<int32_t>> earlier;  // this server's prompts so far in the session
    for (const auto& [p, name] : order) {
      progress_.status(id + " " + round_text(plan_, round) + " on " + results_[t].target.name + ": " + name + ", " +
                       std::to_string(p->size()) + " tokens");
      Sample s;
      s.label = name;
      s.round = round;
      s.expected_reuse = shared_prefix(earlier, *p);
      s.r = request(t, *p, plan_.session_tokens);
      earlier.push_back(*p);
      results_[t].scenarios[id].samples.push_back(std::move(s));
    }
  }
}

void Suite::s4(int round) {
  const std::vector<int32_t> a = prompts_.document(plan_.doc_tokens);
  std::vector<int32_t> aq = a;
  const std::vector<int32_t> q = prompts_.text(plan_.question_tokens);
  aq.insert(aq.end(), q.begin(), q.end());
  session("S4", round, {{&a, "turn 1"}, {&aq, "turn 2"}});
}

void Suite::s5(int round) {
  const std::vector<int32_t> a = prompts_.document(plan_.doc_tokens);
  const std::vector<int32_t> b = prompts_.document(plan_.doc_tokens);
  session("S5", round, {{&a, "A"}, {&a, "A again"}, {&b, "B"}, {&a, "back to A"}});
}

void Suite::s8(int round) {
  if (s8_prompts_.empty())
    for (int64_t ctx : plan_.s8_contexts) s8_prompts_.push_back(prompts_.document(ctx));
  for (size_t i = 0; i < plan_.s8_contexts.size(); ++i) {
    const int64_t ctx = plan_.s8_contexts[i];
    for (size_t t = 0; t < results_.size(); ++t) {
      if (out_of_time("S8 context " + std::to_string(ctx) + ", " + round_text(plan_, round))) return;
      progress_.status("S8 " + round_text(plan_, round) + " on " + results_[t].target.name + ": decode after " +
                       std::to_string(ctx) + " tokens" + (round == 1 ? " (prefill first)" : ""));
      Sample s;
      s.label = "context " + std::to_string(ctx);
      s.round = round;
      s.context = ctx;
      s.r = request(t, s8_prompts_[i], plan_.s8_tokens);
      results_[t].scenarios["S8"].samples.push_back(std::move(s));
    }
  }
}

namespace {

// A server's speculative decoding counters (ember's /metrics), when it reports them.
std::optional<std::pair<int64_t, int64_t>> draft_counters(const Endpoint& ep) {
  const auto text = http_get(ep, "/metrics");
  if (!text) return std::nullopt;
  auto value = [&](const std::string& name) -> std::optional<int64_t> {
    const size_t at = text->find("\n" + name + " ");
    if (at == std::string::npos) return std::nullopt;
    return int64_t(std::strtod(text->c_str() + at + name.size() + 2, nullptr));
  };
  const auto d = value("ember_draft_tokens_total"), k = value("ember_draft_tokens_accepted_total");
  if (!d || !k) return std::nullopt;
  return std::pair{*d, *k};
}

}  // namespace

// S9: the same two greedy requests on every server, one after another (a
// code-editing prompt whose answer repeats most of it, and S1's free-form
// prompt): decode speed, the drafts each server made and kept, and whether
// its answers are those of the first server.
void Suite::s9(int round) {
  if (s9_prompts_.empty()) s9_prompts_ = {prompts_.edit(plan_.s9_file_tokens), prompts_.document(plan_.short_prompt)};
  const char* labels[] = {"edit", "free"};
  for (size_t k = 0; k < s9_prompts_.size(); ++k)
    for (size_t t = 0; t < results_.size(); ++t) {
      if (out_of_time("S9 " + std::string(labels[k]) + ", " + round_text(plan_, round))) return;
      progress_.status("S9 " + round_text(plan_, round) + " on " + results_[t].target.name + ": " + labels[k] + " prompt");
      const auto before = draft_counters(results_[t].target.ep);
      Sample s;
      s.label = labels[k];
      s.round = round;
      s.r = request(t, s9_prompts_[k], plan_.decode_tokens);
      const auto after = draft_counters(results_[t].target.ep);
      if (before && after) {
        s.drafted = after->first - before->first;
        s.kept = after->second - before->second;
      }
      results_[t].scenarios["S9"].samples.push_back(std::move(s));
    }
}

double Suite::roofline_at(double context) const {
  if (!bandwidth_ || bandwidth_->gbs <= 0 || facts_.weight_bytes_per_token == 0) return 0;
  return roofline_tps(bandwidth_->gbs, double(facts_.weight_bytes_per_token) + facts_.kv_bytes_per_position * context);
}

void Suite::summarize(const std::string& id) {
  for (TargetResult& tr : results_) {
    ScenarioResult& sr = tr.scenarios[id];
    sr.id = id;
    sr.rows.clear();
    // The samples of one label that succeeded, in round order.
    auto ok_with = [&](const std::string& label) {
      std::vector<const Sample*> v;
      for (const Sample& s : sr.samples)
        if (s.label == label && s.r.ok()) v.push_back(&s);
      return v;
    };
    auto failed_with = [&](const std::string& label) {
      int n = 0;
      for (const Sample& s : sr.samples) n += s.label == label && !s.r.ok();
      return n;
    };
    auto pct = [&](double tps, double roof) { return num_or_null(100.0 * tps / roof, roof > 0 && tps > 0); };

    if (id == "S1") {
      sr.title = "S1 single stream: " + std::to_string(plan_.short_prompt) + "-token prompt, " +
                 std::to_string(plan_.decode_tokens) + " new tokens, greedy";
      sr.columns = {{"prompt_tokens", "prompt"},       {"new_tokens", "new tokens"},  {"ttft_s", "TTFT s", 3},
                    {"decode_tps", "decode tok/s", 1}, {"decode_tps_min", "min", 1},  {"decode_tps_max", "max", 1},
                    {"itl_p50_ms", "ITL p50 ms", 2},    {"itl_p99_ms", "ITL p99 ms", 2}, {"roofline_tps", "roofline tok/s", 0},
                    {"pct_roofline", "% of roofline", 1}, {"runs", "runs"}};
      const auto ss = ok_with("S1");
      json row;
      const auto tps = collect(ss, [](const Sample& s) { return s.r.decode_tps(); });
      std::vector<double> itl;
      for (const Sample* s : ss)
        for (double g : s->r.inter_token()) itl.push_back(g * 1e3);
      const double med = ss.empty() ? 0 : median(tps);
      const double roof = roofline_at(double(plan_.short_prompt) + plan_.decode_tokens / 2.0);
      row["prompt_tokens"] = plan_.short_prompt;
      row["new_tokens"] = ss.empty() ? json(nullptr) : json(int64_t(median(collect(ss, [](const Sample& s) { return double(s.r.generated()); }))));
      row["ttft_s"] = num_or_null(ss.empty() ? 0 : median(collect(ss, [](const Sample& s) { return s.r.ttft(); })), !ss.empty());
      row["decode_tps"] = num_or_null(med, med > 0);
      row["decode_tps_min"] = num_or_null(tps.empty() ? 0 : *std::min_element(tps.begin(), tps.end()), !tps.empty());
      row["decode_tps_max"] = num_or_null(tps.empty() ? 0 : *std::max_element(tps.begin(), tps.end()), !tps.empty());
      row["itl_p50_ms"] = num_or_null(percentile(itl, 0.5), !itl.empty());
      row["itl_p99_ms"] = num_or_null(percentile(itl, 0.99), !itl.empty());
      row["roofline_tps"] = num_or_null(roof, roof > 0);
      row["pct_roofline"] = pct(med, roof);
      row["runs"] = ss.size();
      row["failed"] = failed_with("S1");
      sr.rows.push_back(row);
    } else if (id == "S6") {
      sr.title = "S6 CPU cost of decoding: the server's CPU seconds / wall seconds during S1";
      sr.columns = {{"cpu_seconds", "server CPU s", 3}, {"wall_seconds", "wall s", 3}, {"cores_busy", "CPU cores busy", 2},
                    {"source", "from"}};
      double cpu = 0, wall = 0;
      for (const Sample& s : tr.scenarios["S1"].samples)
        if (s.r.ok() && s.cpu_s >= 0) {
          cpu += s.cpu_s;
          wall += s.cpu_wall_s;
        }
      json row;
      const bool have = wall > 0 && !tr.cpu_source.empty();
      row["cpu_seconds"] = num_or_null(cpu, have);
      row["wall_seconds"] = num_or_null(wall, have);
      row["cores_busy"] = num_or_null(cpu / std::max(wall, 1e-9), have);
      row["source"] = tr.cpu_source.empty() ? "n/a (no PID on this machine, no process_cpu_seconds_total in /metrics)"
                                            : tr.cpu_source;
      sr.rows.push_back(row);
      sr.notes = {"/proc counts CPU time in clock ticks (" + std::string("1/100 s on most systems") +
                  "): short decodes give coarse figures"};
    } else if (id == "S2") {
      sr.title = "S2 concurrency: clients at once, each its own " + std::to_string(plan_.short_prompt) + "-token prompt, " +
                 std::to_string(plan_.s2_tokens) + " new tokens each";
      sr.columns = {{"clients", "clients"},          {"aggregate_tps", "aggregate tok/s", 1}, {"slowest_s", "slowest request s", 2},
                    {"ttft_p50_s", "TTFT p50 s", 3}, {"ttft_p99_s", "TTFT p99 s", 3},        {"stream_tps", "tok/s per stream", 1},
                    {"failed", "failed"}};
      for (int c : plan_.clients) {
        const std::string label = "clients=" + std::to_string(c);
        std::vector<double> agg, slowest;
        for (int round = 1; round <= plan_.rounds; ++round) {
          double t_first = 1e300, t_last = 0, tokens = 0, slow = 0;
          int n = 0;
          for (const Sample& s : sr.samples)
            if (s.label == label && s.round == round && s.r.ok()) {
              t_first = std::min(t_first, s.r.start);
              t_last = std::max(t_last, s.r.start + s.r.end);
              tokens += double(s.r.generated());
              slow = std::max(slow, s.r.end);
              ++n;
            }
          if (n == c && t_last > t_first) {  // a round counts only when every client got its answer
            agg.push_back(tokens / (t_last - t_first));
            slowest.push_back(slow);
          }
        }
        const auto ss = ok_with(label);
        const auto ttft = collect(ss, [](const Sample& s) { return s.r.ttft(); });
        json row;
        row["clients"] = c;
        row["aggregate_tps"] = num_or_null(agg.empty() ? 0 : median(agg), !agg.empty());
        row["slowest_s"] = num_or_null(slowest.empty() ? 0 : median(slowest), !slowest.empty());
        row["ttft_p50_s"] = num_or_null(percentile(ttft, 0.5), !ttft.empty());
        row["ttft_p99_s"] = num_or_null(percentile(ttft, 0.99), !ttft.empty());
        row["stream_tps"] = num_or_null(ss.empty() ? 0 : median(collect(ss, [](const Sample& s) { return s.r.decode_tps(); })), !ss.empty());
        row["failed"] = failed_with(label);
        row["rounds"] = agg.size();
        sr.rows.push_back(row);
      }
    } else if (id == "S3") {
      sr.title = "S3 cold prefill: unique prompts, one token generated (prefill = time to first token)";
      sr.columns = {{"prompt_tokens", "prompt tokens"}, {"prefill_s", "prefill s", 3}, {"prefill_tps", "prefill tok/s", 0},
                    {"cached_tokens", "cached"}, {"runs", "runs"}};
      for (int64_t len : plan_.s3_lengths) {
        const auto ss = ok_with(std::to_string(len) + " tokens");
        json row;
        row["prompt_tokens"] = len;
        const double p = ss.empty() ? 0 : median(collect(ss, [](const Sample& s) { return first_output(s.r); }));
        row["prefill_s"] = num_or_null(p, !ss.empty());
        row["prefill_tps"] = num_or_null(double(len) / p, p > 0);
        int64_t cached = 0;
        for (const Sample* s : ss) cached = std::max(cached, s->r.cached_tokens);
        row["cached_tokens"] = ss.empty() ? json(nullptr) : json(cached);
        row["runs"] = ss.size();
        sr.rows.push_back(row);
      }
    } else if (id == "S4" || id == "S5") {
      const bool s4 = id == "S4";
      sr.title = s4 ? "S4 one session: a " + std::to_string(plan_.doc_tokens) + "-token document A, then A + a " +
                          std::to_string(plan_.question_tokens) + "-token question"
                    : "S5 alternating sessions: A -> A -> B -> A, documents of " + std::to_string(plan_.doc_tokens) + " tokens";
      sr.columns = {{"request", s4 ? "turn" : "request"}, {"prompt_tokens", "prompt"},   {"expected_reuse", "shared prefix"},
                    {"cached_tokens", "reused (cached)"}, {"prefill_s", "prefill s", 3}, {"prefill_tps", "tok/s of the rest", 0},
                    {"runs", "runs"}};
      const std::vector<std::string> labels =
          s4 ? std::vector<std::string>{"turn 1", "turn 2"} : std::vector<std::string>{"A", "A again", "B", "back to A"};
      for (const std::string& label : labels) {
        const auto ss = ok_with(label);
        json row;
        row["request"] = label;
        json cached_rounds = json::array(), prefill_rounds = json::array(), expected_rounds = json::array();
        for (const Sample* s : ss) {
          cached_rounds.push_back(s->r.cached_tokens);
          prefill_rounds.push_back(first_output(s->r));
          expected_rounds.push_back(s->expected_reuse);
        }
        const double p = ss.empty() ? 0 : median(collect(ss, [](const Sample& s) { return first_output(s.r); }));
        const double cached = ss.empty() ? 0 : median(collect(ss, [](const Sample& s) { return double(s.r.cached_tokens); }));
        const double prompt = ss.empty() ? 0 : median(collect(ss, [](const Sample& s) { return double(s.r.prompt_tokens); }));
        row["prompt_tokens"] = ss.empty() ? json(nullptr) : json(int64_t(prompt));
        row["expected_reuse"] = ss.empty() ? json(nullptr) : json(ss.front()->expected_reuse);
        row["cached_tokens"] = ss.empty() ? json(nullptr) : json(int64_t(cached));
        row["prefill_s"] = num_or_null(p, !ss.empty());
        row["prefill_tps"] = num_or_null((prompt - cached) / p, p > 0 && prompt > cached);
        row["runs"] = ss.size();
        row["cached_tokens_rounds"] = cached_rounds;
        row["expected_reuse_rounds"] = expected_rounds;
        row["prefill_s_rounds"] = prefill_rounds;
        sr.rows.push_back(row);
      }
    } else if (id == "S7") {
      sr.title = "S7 memory: the server's peak host RSS and GPU memory during each scenario";
      sr.columns = {{"scenario", "scenario"}, {"peak_rss_gb", "peak RSS GB", 3}, {"rss_source", "from"},
                    {"peak_gpu_gb", "peak GPU GB", 3}, {"gpu_source", "from"}};
      for (const auto& [scenario, m] : tr.memory) {
        json row;
        row["scenario"] = scenario;
        row["peak_rss_gb"] = num_or_null(m.rss ? double(*m.rss) / 1e9 : 0, m.rss.has_value());
        row["rss_source"] = m.rss ? m.rss_source : "n/a";
        row["peak_gpu_gb"] = num_or_null(m.gpu ? double(*m.gpu) / 1e9 : 0, m.gpu.has_value());
        row["gpu_source"] = m.gpu ? m.gpu_source : "n/a";
        sr.rows.push_back(row);
      }
    } else if (id == "S8") {
      sr.title = "S8 long context: decode tok/s after a long prompt, " + std::to_string(plan_.s8_tokens) +
                 " new tokens (roofline with KV bytes)";
      sr.columns = {{"context", "context"},          {"decode_tps", "decode tok/s", 1},     {"prefill_s", "first prefill s", 3},
                    {"roofline_tps", "roofline tok/s", 0}, {"pct_roofline", "% of roofline", 1}, {"kv_gb", "KV GB read", 3},
                    {"runs", "runs"}};
      for (int64_t ctx : plan_.s8_contexts) {
        const auto ss = ok_with("context " + std::to_string(ctx));
        const double pos = double(ctx) + plan_.s8_tokens / 2.0;
        const double tps = ss.empty() ? 0 : median(collect(ss, [](const Sample& s) { return s.r.decode_tps(); }));
        const double roof = roofline_at(pos);
        json row;
        row["context"] = ctx;
        row["decode_tps"] = num_or_null(tps, tps > 0);
        row["prefill_s"] = num_or_null(ss.empty() ? 0 : first_output(ss.front()->r), !ss.empty() && ss.front()->round == 1);
        row["roofline_tps"] = num_or_null(roof, roof > 0);
        row["pct_roofline"] = pct(tps, roof);
        row["kv_gb"] = num_or_null(facts_.kv_bytes_per_position * pos / 1e9, facts_.kv_bytes_per_position > 0);
        row["runs"] = ss.size();
        sr.rows.push_back(row);
      }
    } else if (id == "S9") {
      const std::string first = results_[0].target.name;
      sr.title = "S9 speculative decoding: a code-editing prompt (a " + std::to_string(plan_.s9_file_tokens) +
                 "-token file to repeat with a change) and a free-form one, " + std::to_string(plan_.decode_tokens) +
                 " new tokens, greedy";
      sr.columns = {{"prompt", "prompt"},         {"prompt_tokens", "prompt tokens"},        {"decode_tps", "decode tok/s", 1},
                    {"vs_first", "vs " + first, 2}, {"drafted_per_token", "drafted per token", 2}, {"kept_pct", "drafts kept %", 1},
                    {"same_answers", "answers as " + first}, {"runs", "runs"}};
      const ScenarioResult& base = results_[0].scenarios["S9"];
      for (const char* label : {"edit", "free"}) {
        const auto ss = ok_with(label);
        std::vector<const Sample*> bs;
        for (const Sample& b : base.samples)
          if (b.label == label && b.r.ok()) bs.push_back(&b);
        const double tps = ss.empty() ? 0 : median(collect(ss, [](const Sample& s) { return s.r.decode_tps(); }));
        const double base_tps = bs.empty() ? 0 : median(collect(bs, [](const Sample& s) { return s.r.decode_tps(); }));
        int64_t drafted = 0, kept = 0, generated = 0;
        bool reported = !ss.empty();
        int same = 0, compared = 0;
        for (const Sample* x : ss) {
          reported = reported && x->drafted >= 0;
          drafted += std::max<int64_t>(x->drafted, 0);
          kept += std::max<int64_t>(x->kept, 0);
          generated += x->r.generated();
          for (const Sample* b : bs)
            if (b->round == x->round) {
              ++compared;
              same += b->r.text == x->r.text;
            }
        }
        json row;
        row["prompt"] = label;
        row["prompt_tokens"] = s9_prompts_.empty() ? json(nullptr) : json(s9_prompts_[std::string(label) == "edit" ? 0 : 1].size());
        row["decode_tps"] = num_or_null(tps, tps > 0);
        row["vs_first"] = num_or_null(tps / base_tps, tps > 0 && base_tps > 0);
        row["drafted_per_token"] = num_or_null(double(drafted) / double(std::max<int64_t>(generated, 1)), reported);
        row["kept_pct"] = num_or_null(100.0 * double(kept) / double(std::max<int64_t>(drafted, 1)), reported && drafted > 0);
        row["same_answers"] = std::to_string(same) + "/" + std::to_string(compared);
        row["runs"] = ss.size();
        row["failed"] = failed_with(label);
        sr.rows.push_back(row);
      }
      sr.notes = {"a server that drafts must give the same greedy answers as one that does not (ember: the same bits on the CPU; "
                  "on CUDA with EMBER_CUDA_BATCH_INVARIANT=1); drafts per token and kept share from the server's /metrics"};
    }
  }
}

}  // namespace ember::bench
