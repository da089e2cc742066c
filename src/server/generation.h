// The engine side of one HTTP request: its admission slot, its streams (one
// per choice), what they produced so far, and the timings the metrics want.
// Destroying it (reply sent, client gone, an exception) cancels whatever
// still runs and frees the slot, so no path leaks KV blocks or admissions.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "server/completion.h"
#include "server/server_context.h"

namespace ember::server {

class Generation {
 public:
  // Throws ApiError: 429 when the queue is full, 400 when the engine refuses the request.
  // Choice i samples with seed + i, so n > 1 at a temperature gives different answers.
  Generation(ServerContext& ctx, const GenerationRequest& req, int n, int top_logprobs);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  size_t size() const { return streams_.size(); }
  // The next update of choice i, absorbed into result(i). While nothing comes,
  // `still_wanted` is asked every 100 ms; false cancels the request (returns false).
  // Returns false after the final update.
  bool next(size_t i, RequestUpdate& u, const std::function<bool()>& still_wanted);
  // Runs every choice to its end (no streaming); false when cancelled.
  bool run_all(const std::function<bool()>& still_wanted);
  const Completion& result(size_t i) const { return results_[i]; }
  const std::vector<Completion>& results() const { return results_; }
  // Stops every choice now (the client is gone); their KV blocks go back at the engine's next step.
  void cancel();
  // The first error any choice ended with, or "".
  std::string error() const;

 private:
  using Clock = std::chrono::steady_clock;
  ServerContext& ctx_;
  std::vector<std::shared_ptr<RequestStream>> streams_;
  std::vector<Completion> results_;
  std::vector<bool> done_;
  int top_logprobs_;
  int64_t vocab_;
  Clock::time_point start_, last_token_{};
};

}  // namespace ember::server
