#include "server/metrics.h"

#include <unistd.h>

#include <cstdio>

#include "util/process_cpu.h"

namespace ember::server {

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

void metric(std::string& out, const std::string& name, const char* type, const std::string& help, double value) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + number(value) + "\n";
}

}  // namespace

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard lk(mu_);
  ++requests_[{route, status}];
}

void Metrics::count_tokens(int64_t prompt, int64_t cached, int64_t generated) {
  std::lock_guard lk(mu_);
  prompt_tokens_ += prompt;
  cached_tokens_ += cached;
  generated_tokens_ += generated;
}

void Metrics::observe_first_token(double seconds) {
  std::lock_guard lk(mu_);
  ttft_.observe(seconds);
}

void Metrics::observe_between_tokens(double seconds) {
  std::lock_guard lk(mu_);
  itl_.observe(seconds);
}

std::string Metrics::render(const EngineStats& e) const {
  std::lock_guard lk(mu_);
  std::string out;
  out += "# HELP ember_requests_total HTTP requests by route and status\n# TYPE ember_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out += "ember_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  metric(out, "ember_prompt_tokens_total", "counter", "Prompt tokens of finished requests", double(prompt_tokens_));
  metric(out, "ember_cached_prompt_tokens_total", "counter", "Prompt tokens served from the prefix cache (hits)",
         double(cached_tokens_));
  metric(out, "ember_generated_tokens_total", "counter", "Tokens generated", double(generated_tokens_));
  ttft_.render(out, "ember_time_to_first_token_seconds", "Time from a request's arrival to its first token");
  itl_.render(out, "ember_inter_token_latency_seconds", "Time between consecutive tokens of a stream");
  metric(out, "ember_requests_running", "gauge", "Requests the engine is running", e.running);
  metric(out, "ember_requests_waiting", "gauge", "Requests waiting for a slot or KV blocks", e.waiting);
  metric(out, "ember_kv_blocks_total", "gauge", "KV cache blocks", e.blocks_total);
  metric(out, "ember_kv_blocks_free", "gauge", "KV cache blocks neither in use nor cached", e.blocks_free);
  metric(out, "ember_kv_blocks_used", "gauge", "KV cache blocks held by requests or the prefix cache",
         e.blocks_total - e.blocks_free);
  // Present only while no request is live (EngineStats::blocks_cached): then
  // used == cached unless a block leaked.
  if (e.blocks_cached >= 0)
    metric(out, "ember_kv_blocks_cached", "gauge", "KV cache blocks held by the prefix cache (reported while idle)",
           e.blocks_cached);
  metric(out, "ember_prefix_cache_tokens", "gauge", "Tokens held by the prefix cache", double(e.cached_tokens));
  metric(out, "ember_preemptions_total", "counter", "Sequences preempted for memory", double(e.preemptions));
  metric(out, "ember_draft_tokens_total", "counter", "Speculative decoding: tokens drafted (--draft-tokens)",
         double(e.draft_tokens));
  metric(out, "ember_draft_tokens_accepted_total", "counter", "Speculative decoding: drafted tokens the model's own picks kept",
         double(e.accepted_tokens));
  if (e.step_thread_cpu_seconds >= 0)
    metric(out, "ember_engine_thread_cpu_seconds_total", "counter",
           "CPU time of the engine's step thread (scheduling, the backend's submissions and waits, delivery)",
           e.step_thread_cpu_seconds);
  // The process figures Prometheus clients conventionally export, so a remote
  // benchmark can read the server's CPU time and memory.
  metric(out, "process_cpu_seconds_total", "counter", "User and system CPU time of the server process",
         own_process_cpu_seconds());
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  metric(out, "process_resident_memory_bytes", "gauge", "Resident memory of the server process",
         double(resident) * double(sysconf(_SC_PAGESIZE)));
  return out;
}

}  // namespace ember::server
