// libFuzzer target: arbitrary bytes as the body of every request route
// (OpenAI chat and completions, Anthropic messages and count_tokens), for a
// model without and with its own default sampling. Each must either give an
// engine request that fits the context, with sampling the engine accepts, or
// refuse with a 4xx ApiError; anything else (a crash, another exception, a
// 5xx, a request the engine would refuse) aborts. An accepted request's
// response is then built with the body's own bytes as the model's answer, so
// tool-call parsing (whole and streamed in two pieces), reasoning and the
// response shapes of tools, tool_choice, response_format, logprobs and n run too.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/sampling_validation.h"
#include "server/anthropic_api.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/openai_api.h"
#include "server/sse.h"
#include "server/tool_calls.h"
#include "server_test_util.h"

using namespace ember::server;

namespace {

void check(const ember::GenerationRequest& r, const ServedModel& m) {
  if (r.prompt.empty() || r.max_tokens < 1 || int64_t(r.prompt.size()) + r.max_tokens > m.context) std::abort();
  for (const auto* ids : {&r.prompt, &r.prediction})
    for (int32_t id : *ids)
      if (id < 0 || id >= m.tok->vocab_size()) std::abort();
  ember::validate_sampling(r.sampling);  // throws ember::Error (not ApiError): reported
}

template <class F>
void refused_cleanly(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) std::abort();
  }
  // Any other exception escapes and libFuzzer reports it.
}

// The answer `text` in the call's tool format: whole, and streamed in two pieces, must find the same calls.
void parse_answer(ToolCallFormat f, const std::string& text) {
  const ToolCallPiece whole = parse_tool_calls(f, text);
  ToolCallParser p(f);
  const size_t cut = text.size() / 2;
  ToolCallPiece a = p.take(std::string_view(text).substr(0, cut), false);
  ToolCallPiece b = p.take(std::string_view(text).substr(cut), true);
  if (a.calls.size() + b.calls.size() != whole.calls.size()) std::abort();
}

Completion answer(const std::string& text) {
  Completion c;
  c.text = text;
  c.tokens = {1};
  c.reason = ember::FinishReason::Stop;
  c.prompt_tokens = 1;
  return c;
}

// The model of the unit tests with default sampling (temperature 0.7, top_k 20, top_p 0.8).
const ServedModel& model_with_defaults() {
  static const ServedModel m = [] {
    ServedModel s = test::qwen3_model();
    s.sampling_defaults = ember::sampling_defaults_from_generation_config(
        R"({"do_sample": true, "temperature": 0.7, "top_k": 20, "top_p": 0.8})");
    s.sampling = model_sampling(s.sampling_defaults);
    return s;
  }();
  return m;
}

void run(const std::string& body, const ServedModel& m) {
  refused_cleanly([&] {
    const OpenAiCall call = parse_chat_completion(parse_json_object(body), m);
    check(call.gen, m);
    parse_answer(call.tool_format, body);
    to_text(openai_response(call, std::vector<Completion>(size_t(call.n), answer(body)), m, "id", 1));
  });
  refused_cleanly([&] {
    const OpenAiCall call = parse_completion(parse_json_object(body), m);
    check(call.gen, m);
    to_text(openai_response(call, {answer(body)}, m, "id", 1));
  });
  refused_cleanly([&] {
    const AnthropicCall call = parse_messages(parse_json_object(body), m);
    check(call.gen, m);
    parse_answer(call.tool_format, body);
    to_text(anthropic_response(answer(body), "", m, "msg", call.tool_format));
  });
  refused_cleanly([&] {
    if (count_message_tokens(parse_json_object(body), m) < 1) std::abort();
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  run(body, test::qwen3_model());
  run(body, model_with_defaults());
  return 0;
}
