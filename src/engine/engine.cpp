#include "engine/engine.h"

#include <pthread.h>

#include <cstdio>
#include <string>

#include "model/model.h"
#include "util/error.h"

namespace ember {

Engine::Engine(Backend& backend, const Tokenizer* tok, const EngineOptions& opt)
    : core_(backend, tok, opt), shared_(std::make_shared<Shared>()) {
  stats_ = core_.stats();
  thread_ = std::thread([this] { loop(); });
  clockid_t c{};
  if (pthread_getcpuclockid(thread_.native_handle(), &c) == 0) thread_clock_ = c;
}

Engine::~Engine() {
  {
    std::lock_guard lk(shared_->mu);
    stop_ = true;
  }
  shared_->cv.notify_all();
  thread_.join();
  // core_'s destructor ends the streams still live as cancelled.
}

std::shared_ptr<RequestStream> Engine::submit(GenerationRequest req) {
  core_.validate(req);
  std::weak_ptr<Shared> weak = shared_;
  auto wake = [weak] {
    if (auto s = weak.lock()) {
      {
        std::lock_guard lk(s->mu);
        s->wake = true;
      }
      s->cv.notify_all();
    }
  };
  std::shared_ptr<RequestStream> stream;
  {
    std::lock_guard lk(shared_->mu);
    stream = std::make_shared<RequestStream>(next_stream_id_++, wake);
    incoming_.emplace_back(std::move(req), stream);
    idle_ = false;
  }
  shared_->cv.notify_all();
  return stream;
}

void Engine::loop() {
  std::vector<std::pair<GenerationRequest, std::shared_ptr<RequestStream>>> arrived;
  bool busy = false;
  for (;;) {
    bool check = false;
    {
      std::unique_lock lk(shared_->mu);
      shared_->cv.wait(lk, [&] { return stop_ || busy || shared_->wake || !incoming_.empty() || check_pending_; });
      if (stop_) return;
      shared_->wake = false;
      arrived.swap(incoming_);
      check = check_pending_;
    }
    for (auto& [req, stream] : arrived) {
      try {
        core_.add(std::move(req), stream);
      } catch (const std::exception& e) {
        stream->finish(FinishReason::Error, e.what());
      }
    }
    arrived.clear();
    try {
      busy = core_.step();
    } catch (const std::exception& e) {
      // A failed step (a backend error) fails every live request; the engine stays up for new ones.
      std::fprintf(stderr, "ember: engine step failed: %s\n", e.what());
      core_.cancel_all(e.what());
      busy = false;
    }
    std::string check_error;
    if (check && core_.idle()) {
      try {
        core_.check_accounting();
      } catch (const std::exception& e) {
        check_error = e.what();
      }
    }
    {
      std::lock_guard lk(shared_->mu);
      stats_ = core_.stats();
      idle_ = core_.idle() && incoming_.empty();
      if (check && core_.idle()) {
        check_pending_ = false;
        check_error_ = check_error;
      }
    }
    if (!busy) idle_cv_.notify_all();
  }
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard lk(shared_->mu);
    s = stats_;
  }
  timespec ts{};
  if (thread_clock_ && clock_gettime(*thread_clock_, &ts) == 0)
    s.step_thread_cpu_seconds = double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  return s;
}

void Engine::wait_idle() {
  std::unique_lock lk(shared_->mu);
  idle_cv_.wait(lk, [&] { return idle_; });
}

void Engine::check_accounting() {
  wait_idle();
  std::unique_lock lk(shared_->mu);
  check_pending_ = true;
  shared_->cv.notify_all();
  idle_cv_.wait(lk, [&] { return !check_pending_; });
  if (!check_error_.empty()) throw Error(check_error_);
}

}  // namespace ember
