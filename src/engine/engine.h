// The serving engine: many requests at once over one backend, continuous
// batching, a token-exact prefix cache. The API the server, `ember run` and
// `ember batch` use; every method is safe to call from any thread.
//
//   Engine engine(backend, &tokenizer, options);
//   auto stream = engine.submit(request);   // returns at once
//   RequestUpdate u;
//   while (stream->next(u)) print(u.text);  // blocks until tokens arrive; u.finished on the last
//
// One thread runs the steps (engine_core.h). It sleeps on a condition
// variable whenever no request is live, so an idle engine uses no CPU.
#pragma once
#include <time.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "engine/engine_core.h"
#include "engine/request.h"

namespace ember {

class Engine {
 public:
  Engine(Backend& backend, const Tokenizer* tok, const EngineOptions& opt);
  ~Engine();  // cancels what is still running
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request; throws ember::Error at once when it can never run (empty
  // prompt, ids outside the vocabulary, prompt longer than the context).
  std::shared_ptr<RequestStream> submit(GenerationRequest req);

  // The latest step's figures, and the step thread's CPU time so far.
  EngineStats stats() const;
  // Blocks until no request is live (all finished or cancelled).
  void wait_idle();
  // Waits until idle, then checks the KV block accounting (throws on a mismatch).
  void check_accounting();

 private:
  struct Shared {  // what streams reach to wake the engine, alive as long as any stream
    std::mutex mu;
    std::condition_variable cv;
    bool wake = false;
  };
  void loop();

  EngineCore core_;
  std::shared_ptr<Shared> shared_;
  std::condition_variable idle_cv_;
  std::vector<std::pair<GenerationRequest, std::shared_ptr<RequestStream>>> incoming_;
  bool stop_ = false, idle_ = true, check_pending_ = false;
  std::string check_error_;
  EngineStats stats_;
  uint64_t next_stream_id_ = 0;
  std::thread thread_;
  std::optional<clockid_t> thread_clock_;  // the step thread's CPU-time clock
};

}  // namespace ember
