// POST /v1/chat/completions, POST /v1/completions, GET /v1/models.
#include <httplib.h>

#include <chrono>
#include <ctime>

#include "server/generation.h"
#include "server/openai_api.h"
#include "server/reasoning_split.h"
#include "server/routes.h"
#include "server/sse.h"
#include "server/stream_writer.h"

namespace ember::server {

namespace {

std::string new_id(const char* prefix) {  // unique within this process, readable in logs
  static std::atomic<uint64_t> counter{0};
  return std::string(prefix) + std::to_string(std::time(nullptr)) + "-" + std::to_string(counter.fetch_add(1));
}

void note_result(const Generation& gen) {
  RequestNote& note = request_note();
  const Completion& c = gen.result(0);
  note.prompt_tokens = c.prompt_tokens;
  note.cached_tokens = c.cached_tokens;
  note.generated_tokens = 0;
  for (const Completion& r : gen.results()) note.generated_tokens += int64_t(r.tokens.size());
  note.finish = finish_reason_name(c.reason);
}

// Streams every choice in turn (they run in the engine together), then usage and [DONE].
bool stream_choices(ServerContext& ctx, const OpenAiCall& call, Generation& gen, StreamWriter& out, const std::string& id,
                    int64_t created) {
  const ServedModel& m = ctx.model;
  for (size_t i = 0; i < gen.size(); ++i) {
    const int index = int(i);
    const json first = call.chat ? json{{"role", "assistant"}, {"content", ""}} : json{{"text", ""}};
    if (!out.write(sse_data(openai_chunk(call, m, id, created, index, first, nullptr)))) return false;
    ReasoningSplitter reasoning;
    ToolCallParser tools(call.tool_format);
    RequestUpdate u;
    size_t logprobs_sent = 0, calls_sent = 0;
    while (gen.next(i, u, [&] { return out.still_wanted(); })) {
      SplitText piece = call.chat ? reasoning.push(u.text) : SplitText{{}, u.text};
      if (u.finished && call.chat) {
        const SplitText rest = reasoning.finish();
        piece.reasoning += rest.reasoning;
        piece.content += rest.content;
      }
      // The answer's text, with tool calls taken out of it as they complete.
      ToolCallPiece answer = tools.take(piece.content, u.finished);
      piece.content = std::move(answer.text);
      json lp = nullptr;
      const auto& lps = gen.result(i).logprobs;
      if (call.top_logprobs >= 0 && lps.size() > logprobs_sent) {
        lp = openai_logprobs(call, *m.tok, std::vector<TokenLogprob>(lps.begin() + long(logprobs_sent), lps.end()));
        logprobs_sent = lps.size();
      }
      if (!piece.reasoning.empty() &&
          !out.write(sse_data(openai_chunk(call, m, id, created, index, {{"reasoning_content", piece.reasoning}}, nullptr))))
        return false;
      if (!piece.content.empty() || !lp.is_null()) {
        const json delta = call.chat ? json{{"content", piece.content}} : json{{"text", piece.content}};
        if (!out.write(sse_data(openai_chunk(call, m, id, created, index, delta, nullptr, lp)))) return false;
      }
      if (!answer.calls.empty()) {
        const json delta = {{"tool_calls", openai_tool_calls(answer.calls, /*delta=*/true, calls_sent)}};
        if (!out.write(sse_data(openai_chunk(call, m, id, created, index, delta, nullptr)))) return false;
        calls_sent += answer.calls.size();
      }
      if (u.finished && u.reason == FinishReason::Error) {
        out.write(sse_data(openai_error_body(500, "generation failed: " + u.error)));
        return false;
      }
      if (u.finished) {
        const json delta = call.chat ? json::object() : json{{"text", ""}};
        if (!out.write(sse_data(openai_chunk(call, m, id, created, index, delta, openai_finish_reason(u.reason, tools.called())))))
          return false;
      }
    }
    if (gen.result(i).reason == FinishReason::None || gen.result(i).reason == FinishReason::Cancelled) return false;
  }
  if (call.include_usage && !out.write(sse_data(openai_usage_chunk(call, m, id, created, gen.results())))) return false;
  return out.write(kSseDone);
}

void handle_generation(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat) {
  const json body = parse_json_object(req.body);
  OpenAiCall call = chat ? parse_chat_completion(body, ctx.model) : parse_completion(body, ctx.model);
  auto gen = std::make_shared<Generation>(ctx, call.gen, call.n, call.top_logprobs);
  const std::string id = new_id(chat ? "chatcmpl-" : "cmpl-");
  const int64_t created = int64_t(std::time(nullptr));
  if (!call.stream) {
    if (!gen->run_all([&] { return !ctx.stopping.load(); }))
      throw ApiError(503, "the server is shutting down");
    note_result(*gen);
    if (const std::string err = gen->error(); !err.empty()) throw ApiError(500, "generation failed: " + err);
    res.set_content(to_text(openai_response(call, gen->results(), ctx.model, id, created)), "application/json");
    return;
  }
  reply_sse(res, ctx, gen, kSseKeepAlive,
            [&ctx, call, gen, id, created](StreamWriter& out) { return stream_choices(ctx, call, *gen, out, id, created); },
            [gen] { note_result(*gen); });
}

}  // namespace

void add_openai_routes(httplib::Server& http, ServerContext& ctx) {
  http.Post("/v1/chat/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    guarded(res, Api::OpenAi, [&] { handle_generation(ctx, req, res, /*chat=*/true); });
  });
  http.Post("/v1/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    guarded(res, Api::OpenAi, [&] { handle_generation(ctx, req, res, /*chat=*/false); });
  });
  http.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(to_text(openai_models(ctx.model)), "application/json");
  });
}

}  // namespace ember::server
