// What `GET /metrics` reports, in the Prometheus text format: requests by
// route and status, token counts, time to first token and between tokens,
// and the engine's own state (running and waiting requests, KV blocks).
// Safe to update from every connection thread at once.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/engine_core.h"

namespace ember::server {

class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  void observe(double seconds);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::array<uint64_t, kBounds.size() + 1> counts_{};  // the last one: above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  void count_request(const std::string& route, int status);
  void count_tokens(int64_t prompt, int64_t cached, int64_t generated);
  void observe_first_token(double seconds);
  void observe_between_tokens(double seconds);
  std::string render(const EngineStats& engine) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  int64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
  Histogram ttft_, itl_;
};

}  // namespace ember::server
