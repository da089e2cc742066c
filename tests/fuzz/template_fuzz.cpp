// libFuzzer target: parse the input as a template and render it with a small chat-like context
// under tight limits. Any failure must be an ember::Error; crashes, leaks and hangs are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/template.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Hi <think>x</think> there"},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1.5, "b": [true, null]}}}]},
      {"role": "tool", "content": "42"},
      {"role": "user", "content": [{"type": "text", "text": "part"}, {"type": "image"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false, "n": 3, "s": "  text\n"
  })");
  ember::chat::RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_list_items = 4096;
  limits.max_iterations = 20000;
  limits.max_call_depth = 40;
  try {
    auto t = ember::chat::Template::parse(std::string(reinterpret_cast<const char*>(data), size));
    t.render(context, limits);
  } catch (const ember::Error&) {
  }
  return 0;
}
