// The HTTP routes of each API, registered on the server by http_server.cpp,
// and the reply helpers they share. Translation to and from JSON lives in
// openai_api / anthropic_api; these files only move bytes and call the engine.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/generation.h"
#include "server/server_context.h"
#include "server/stream_writer.h"

namespace httplib { class Server; struct Request; struct Response; }

namespace ember::server {

enum class Api { OpenAi, Anthropic, None };
// Which API's error shape a path answers with.
Api api_of_path(const std::string& path);

void add_openai_routes(httplib::Server& http, ServerContext& ctx);
void add_anthropic_routes(httplib::Server& http, ServerContext& ctx);

// An error reply in the shape of `api` (with Retry-After on 429).
void reply_error(httplib::Response& res, Api api, int status, const std::string& message, const std::string& param = {});
// Runs `handle`, turning ApiError and any other exception into an error reply: nothing a request sends escapes.
template <class F>
void guarded(httplib::Response& res, Api api, F&& handle);

// Replies with an SSE stream: `write_events` writes the whole stream and returns
// false when it could not finish (client gone, server stopping), which cancels
// the generation at once; `after` runs either way (the log note).
void reply_sse(httplib::Response& res, ServerContext& ctx, std::shared_ptr<Generation> gen, std::string_view keep_alive,
               std::function<bool(StreamWriter&)> write_events, std::function<void()> after);

// A note the request log line carries (tokens in and out), kept per connection thread.
struct RequestNote {
  int64_t prompt_tokens = -1, cached_tokens = -1, generated_tokens = -1;
  std::string finish;
};
RequestNote& request_note();

}  // namespace ember::server

#include "server/routes_guard.h"
