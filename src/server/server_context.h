// What every route shares: the options, the model, the engine once loaded,
// the metrics, and admission (how many requests may be in at once).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/metrics.h"
#include "server/served_model.h"

namespace ember::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;                     // empty: no key needed
  size_t max_body = size_t(8) << 20;       // bytes of a request body
  int max_waiting = 64;                    // requests queued beyond --parallel before 429
  int http_threads = 128;                  // connections served at once (each open stream holds one)
};

class ServerContext {
 public:
  ServerOptions opt;
  ServedModel model;
  Engine* engine = nullptr;  // set once loaded, then `ready`
  int parallel = 1;
  Metrics metrics;
  std::atomic<bool> ready{false}, stopping{false};

  // A slot for one request, or false when parallel + max_waiting are already in (429).
  bool admit();
  void leave();
  // Streams the shutdown cancels.
  void track(const std::shared_ptr<RequestStream>& s);
  void cancel_all();

 private:
  std::atomic<int> live_{0};
  std::mutex mu_;
  std::vector<std::weak_ptr<RequestStream>> streams_;
};

}  // namespace ember::server
