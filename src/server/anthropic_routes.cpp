// POST /v1/messages (whole or streamed), POST /v1/messages/count_tokens.
#include <httplib.h>

#include <atomic>

#include "server/anthropic_api.h"
#include "server/generation.h"
#include "server/routes.h"
#include "server/sse.h"
#include "server/stream_writer.h"

namespace ember::server {

namespace {

constexpr std::string_view kPing = "event: ping\ndata: {\"type\":\"ping\"}\n\n";

std::string new_message_id() {
  static std::atomic<uint64_t> counter{0};
  return "msg_ember_" + std::to_string(counter.fetch_add(1));
}

void note_result(const Completion& c) {
  RequestNote& note = request_note();
  note.prompt_tokens = c.prompt_tokens;
  note.cached_tokens = c.cached_tokens;
  note.generated_tokens = int64_t(c.tokens.size());
  note.finish = finish_reason_name(c.reason);
}

bool write_events(StreamWriter& out, const std::vector<AnthropicStream::Event>& events) {
  for (const auto& [name, data] : events)
    if (!out.write(sse_event(name, data))) return false;
  return true;
}

bool stream_message(ServerContext& ctx, const AnthropicCall& call, Generation& gen, StreamWriter& out, const std::string& id) {
  AnthropicStream events(id, ctx.model.id);
  if (!write_events(out, events.start(int64_t(call.gen.prompt.size())))) return false;
  if (!out.write(sse_event("ping", {{"type", "ping"}}))) return false;
  ReasoningSplitter reasoning;
  ToolCallParser tools(call.tool_format, kToolUseIdPrefix);
  RequestUpdate u;
  while (gen.next(0, u, [&] { return out.still_wanted(); })) {
    SplitText piece = reasoning.push(u.text);
    if (u.finished) {
      const SplitText rest = reasoning.finish();
      piece.reasoning += rest.reasoning;
      piece.content += rest.content;
    }
    ToolCallPiece answer = tools.take(piece.content, u.finished);
    piece.content = std::move(answer.text);
    if (!write_events(out, events.text(piece))) return false;
    for (const ToolCall& c : answer.calls)
      if (!write_events(out, events.tool_use(c))) return false;
    if (u.finished && u.reason == FinishReason::Error) {
      out.write(sse_event("error", anthropic_error_body(500, "generation failed: " + u.error)));
      return false;
    }
    if (u.finished) {
      const Completion& c = gen.result(0);
      return write_events(out, events.finish(c, matched_stop(*ctx.model.tok, c, call.gen.stop), tools.called()));
    }
  }
  return false;  // cancelled before the end
}

void handle_messages(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const json body = parse_json_object(req.body);
  const AnthropicCall call = parse_messages(body, ctx.model);
  auto gen = std::make_shared<Generation>(ctx, call.gen, 1, -1);
  const std::string id = new_message_id();
  if (!call.stream) {
    if (!gen->run_all([&] { return !ctx.stopping.load(); })) throw ApiError(503, "the server is shutting down");
    const Completion& c = gen->result(0);
    note_result(c);
    if (const std::string err = gen->error(); !err.empty()) throw ApiError(500, "generation failed: " + err);
    res.set_content(to_text(anthropic_response(c, matched_stop(*ctx.model.tok, c, call.gen.stop), ctx.model, id, call.tool_format)),
                    "application/json");
    return;
  }
  reply_sse(res, ctx, gen, kPing, [&ctx, call, gen, id](StreamWriter& out) { return stream_message(ctx, call, *gen, out, id); },
            [gen] { note_result(gen->result(0)); });
}

}  // namespace

void add_anthropic_routes(httplib::Server& http, ServerContext& ctx) {
  http.Post("/v1/messages", [&ctx](const httplib::Request& req, httplib::Response& res) {
    guarded(res, Api::Anthropic, [&] { handle_messages(ctx, req, res); });
  });
  http.Post("/v1/messages/count_tokens", [&ctx](const httplib::Request& req, httplib::Response& res) {
    guarded(res, Api::Anthropic, [&] {
      const int64_t n = count_message_tokens(parse_json_object(req.body), ctx.model);
      res.set_content(to_text(json{{"input_tokens", n}}), "application/json");
    });
  });
}

}  // namespace ember::server
