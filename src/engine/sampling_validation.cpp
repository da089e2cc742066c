#include "engine/sampling_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include "util/error.h"
#include "util/limits.h"

namespace ember {

namespace {

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

void check_real(std::string_view name, double v, double lo, double hi, bool lo_open, bool hi_open) {
  if (std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi)) return;
  std::string range;
  if (std::isinf(hi) && !std::isinf(lo)) range = std::string(lo_open ? "> " : ">= ") + num(lo);
  else if (std::isinf(lo) && std::isinf(hi)) range = "a finite number";
  else range = std::string(lo_open ? "(" : "[") + num(lo) + ", " + num(hi) + (hi_open ? ")" : "]");
  throw Error(std::string(name) + " = " + num(v) + " is not allowed: it must be " +
              (range == "a finite number" ? range : "finite and in " + range));
}

void check_integer(std::string_view name, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return;
  throw Error(std::string(name) + " = " + std::to_string(v) + " is not allowed: it must be in " + std::to_string(lo) +
              " .. " + std::to_string(hi));
}

void validate_sampling(const SamplingParams& p) {
  check_real("temperature", p.temperature, 0, INFINITY);
  check_real("top-p", p.top_p, 0, 1, /*lo_open=*/true);
  check_integer("top-k", p.top_k, 0, INT32_MAX);
  check_real("min-p", p.min_p, 0, 1);
  check_real("repetition penalty", p.repetition_penalty, 0, 100, /*lo_open=*/true);
  check_real("presence penalty", p.presence_penalty, -100, 100);
  check_real("frequency penalty", p.frequency_penalty, -100, 100);
  check_integer("penalty window (last n)", p.penalty_last_n, -1, INT32_MAX);
}

int max_threads() {
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(limits::kMaxThreadsFloor, limits::kThreadsPerCore * hw);
}

int validate_threads(int64_t threads) {
  check_integer("threads", threads, 0, max_threads());
  return int(threads);
}

int resolve_context(std::optional<int64_t> requested, int model_max, int fallback) {
  if (!requested) return std::max(1, std::min(model_max, fallback));
  check_integer("context", *requested, 1, model_max);
  return int(*requested);
}

void validate_token_id(int64_t id, int vocab, std::string_view what) {
  check_integer(what, id, 0, int64_t(vocab) - 1);
}

}  // namespace ember
