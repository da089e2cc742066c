// libFuzzer target: arbitrary bytes as the body of every request route
// (OpenAI chat and completions, Anthropic messages and count_tokens). Each
// must either give an engine request that fits the context or refuse with a
// 4xx ApiError; anything else (a crash, another exception, a 5xx, a request
// the engine would refuse) aborts.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/anthropic_api.h"
#include "server/api_error.h"
#include "server/openai_api.h"
#include "server_test_util.h"

using namespace ember::server;

namespace {

void check(const ember::GenerationRequest& r, const ServedModel& m) {
  if (r.prompt.empty() || r.max_tokens < 1 || int64_t(r.prompt.size()) + r.max_tokens > m.context) std::abort();
  for (int32_t id : r.prompt)
    if (id < 0 || id >= m.tok->vocab_size()) std::abort();
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ServedModel& m = ember::server::test::qwen3_model();
  const std::string body(reinterpret_cast<const char*>(data), size);
  refused_cleanly([&] { check(parse_chat_completion(parse_json_object(body), m).gen, m); });
  refused_cleanly([&] { check(parse_completion(parse_json_object(body), m).gen, m); });
  refused_cleanly([&] { check(parse_messages(parse_json_object(body), m).gen, m); });
  refused_cleanly([&] {
    if (count_message_tokens(parse_json_object(body), m) < 1) std::abort();
  });
  return 0;
}
