#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>

#include "server/api_error.h"
#include "server/auth.h"
#include "server/routes.h"
#include "server/sse.h"

namespace ember::server {

namespace {

using Clock = std::chrono::steady_clock;
thread_local Clock::time_point t_request_start;

// The route label of /metrics: known paths by name, everything else as one label.
std::string route_label(const std::string& path) {
  for (const char* known : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/messages",
                            "/v1/messages/count_tokens", "/health", "/metrics"})
    if (path == known) return path;
  return "other";
}

// One JSON line per request on standard error: what an operator greps.
void log_request(const httplib::Request& req, const httplib::Response& res) {
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t_request_start).count();
  json line = {{"method", req.method}, {"path", req.path.substr(0, 200)}, {"status", res.status},
               {"ms", std::round(ms * 10) / 10}, {"remote", req.remote_addr}};
  RequestNote& note = request_note();
  if (note.prompt_tokens >= 0) {
    line["prompt_tokens"] = note.prompt_tokens;
    line["cached_tokens"] = note.cached_tokens;
    line["generated_tokens"] = note.generated_tokens;
    line["finish"] = note.finish;
  }
  const std::string s = to_text(line) + "\n";
  std::fwrite(s.data(), 1, s.size(), stderr);
}

}  // namespace

Api api_of_path(const std::string& path) {
  if (path.starts_with("/v1/messages")) return Api::Anthropic;
  if (path.starts_with("/v1/")) return Api::OpenAi;
  return Api::None;
}

RequestNote& request_note() {
  thread_local RequestNote note;
  return note;
}

void reply_error(httplib::Response& res, Api api, int status, const std::string& message, const std::string& param) {
  res.status = status;
  const json body = api == Api::Anthropic ? json(anthropic_error_body(status, message))
                                          : json(openai_error_body(status, message, param));
  res.set_content(to_text(body), "application/json");
  if (status == 429) res.set_header("Retry-After", "1");
}

void reply_sse(httplib::Response& res, ServerContext& ctx, std::shared_ptr<Generation> gen, std::string_view keep_alive,
               std::function<bool(StreamWriter&)> write_events, std::function<void()> after) {
  res.set_header("Cache-Control", "no-cache");
  // The provider runs after the handler returns, on the same connection thread; it owns the generation.
  res.set_chunked_content_provider("text/event-stream", [&ctx, gen, keep_alive, write_events, after](size_t, httplib::DataSink& sink) {
    StreamWriter out([&](std::string_view s) { return sink.write(s.data(), s.size()); }, keep_alive, ctx.stopping);
    bool ok = false;
    try {
      ok = write_events(out);
    } catch (const std::exception& e) {  // nothing a stream meets may take the server down
      std::fprintf(stderr, "ember serve: stream ended by an error: %s\n", e.what());
    }
    after();
    if (!ok) {
      gen->cancel();  // the client left or the server stops: free the engine at once
      return false;
    }
    sink.done();
    return true;
  });
}

HttpServer::HttpServer(ServerContext& ctx) : ctx_(ctx), http_(std::make_unique<httplib::Server>()) {
  httplib::Server& http = *http_;
  const int threads = ctx.opt.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  http.set_payload_max_length(ctx.opt.max_body);
  http.set_keep_alive_timeout(5);
  http.set_read_timeout(30);
  // A client that stops reading for this long is dropped, freeing its thread; its generation is cancelled.
  http.set_write_timeout(10);
  // The listening socket's options: SO_REUSEADDR (a restart binds while old
  // connections linger) but not the library's default SO_REUSEPORT, with which a
  // second server binds a port already in use without an error. The descriptor
  // is kept for bind().
  http.set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = int(sock);
  });

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_request_start = Clock::now();
    request_note() = {};
    const Api api = api_of_path(req.path);
    if (api != Api::None && !ctx_.opt.api_key.empty() &&
        !key_accepted(ctx_.opt.api_key, req.get_header_value("Authorization"), req.get_header_value("x-api-key"))) {
      reply_error(res, api, 401,
                  api == Api::Anthropic ? "invalid x-api-key" : "Incorrect API key provided: give it as Authorization: Bearer KEY");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (api != Api::None && !ctx_.ready.load()) {
      reply_error(res, api, 503, ctx_.stopping ? "the server is shutting down" : "the model is still loading");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Errors the library produces itself (unknown path, body too large, bad HTTP) get each API's shape.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // a route's own error reply
    const Api api = api_of_path(req.path) == Api::None ? Api::OpenAi : api_of_path(req.path);
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 404) message = "no route for " + req.method + " " + req.path.substr(0, 200);
    if (res.status == 413) message = "the request body is larger than the server's limit (--max-body)";
    reply_error(res, api, res.status, message);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
    reply_error(res, api_of_path(req.path), 500, "internal error");
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    ctx_.metrics.count_request(route_label(req.path), res.status);
    log_request(req, res);
  });

  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const bool ok = ctx_.ready.load();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? R"({"status":"ok"})" : R"({"status":"loading"})", "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const EngineStats stats = ctx_.ready.load() ? ctx_.engine->stats() : EngineStats{};
    res.set_content(ctx_.metrics.render(stats), "text/plain; version=0.0.4");
  });
  add_openai_routes(http, ctx_);
  add_anthropic_routes(http, ctx_);
}

HttpServer::~HttpServer() = default;

void HttpServer::bind() {
  port_ = ctx_.opt.port;
  const bool ok = port_ == 0 ? (port_ = http_->bind_to_any_port(ctx_.opt.host)) > 0
                             : http_->bind_to_port(ctx_.opt.host, port_);
  if (!ok) throw Error("cannot listen on " + ctx_.opt.host + ":" + std::to_string(ctx_.opt.port) + " (address in use or invalid)");
  // The library listens with a queue of 5 connections not yet accepted: a burst
  // of clients connecting at once (a benchmark, an agent's parallel calls)
  // overflows it. listen() on a listening socket only resizes that queue.
  if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
}

void HttpServer::run() { http_->listen_after_bind(); }

void HttpServer::stop() { http_->stop(); }

}  // namespace ember::server
