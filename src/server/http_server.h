// The HTTP layer: a cpp-httplib server (docs/server.md says why that
// library) with a bounded thread pool, keep-alive, a body size limit, API
// keys, readiness (503 until the model is loaded), one log line per request,
// and the routes of both APIs plus /health and /metrics.
#pragma once
#include <memory>

#include "server/server_context.h"

namespace httplib { class Server; }

namespace ember::server {

class HttpServer {
 public:
  explicit HttpServer(ServerContext& ctx);
  ~HttpServer();
  // Binds the listening socket; throws ember::Error when the address is taken or invalid.
  void bind();
  int port() const { return port_; }
  // Serves until stop(); blocks.
  void run();
  // Stops accepting; run() returns once the open connections have ended.
  void stop();

 private:
  ServerContext& ctx_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket, to widen its accept queue after binding
};

}  // namespace ember::server
