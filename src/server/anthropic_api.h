// The Anthropic Messages API as plain functions: request bodies to engine
// requests (/v1/messages, /v1/messages/count_tokens), results to the JSON
// the official SDK reads, and the event sequence of a stream. No sockets
// here: the routes (anthropic_routes.cpp), the unit tests and the fuzzer
// call these.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/request.h"
#include "server/completion.h"
#include "server/json_fields.h"
#include "server/reasoning_split.h"
#include "server/served_model.h"
#include "server/tool_calls.h"

namespace ember::server {

struct AnthropicCall {
  GenerationRequest gen;
  bool stream = false;
  ToolCallFormat tool_format = ToolCallFormat::None;  // with tools: how calls are found in the answer
};

// Throws ApiError: 400 for a malformed body (max_tokens missing, an image
// block, ...), 404 for another model's name.
AnthropicCall parse_messages(const json& body, const ServedModel& m);
// /v1/messages/count_tokens: the prompt's length; max_tokens is not needed.
int64_t count_message_tokens(const json& body, const ServedModel& m);

// "end_turn", "max_tokens", "stop_sequence" or "tool_use" (stopped after calling tools).
std::string anthropic_stop_reason(const Completion& c, const std::string& stop_sequence, bool called_tools = false);
json anthropic_usage(const Completion& c);
json anthropic_response(const Completion& c, const std::string& stop_sequence, const ServedModel& m, const std::string& id,
                        ToolCallFormat tool_format = ToolCallFormat::None);
// A tool_use content block; `input` is the call's arguments as an object.
json anthropic_tool_use(const ToolCall& call);
inline constexpr const char* kToolUseIdPrefix = "toolu_";

// The events of one streamed message, in the documented order: message_start,
// for each block content_block_start / content_block_delta... / content_block_stop,
// then message_delta and message_stop. Reasoning becomes a "thinking" block,
// a tool call a "tool_use" block whose input comes as one input_json_delta.
class AnthropicStream {
 public:
  using Event = std::pair<std::string, json>;  // SSE event name, data
  AnthropicStream(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}
  std::vector<Event> start(int64_t prompt_tokens);
  std::vector<Event> text(const SplitText& piece);
  std::vector<Event> tool_use(const ToolCall& call);
  std::vector<Event> finish(const Completion& c, const std::string& stop_sequence, bool called_tools = false);

 private:
  void open_block(std::vector<Event>& out, const char* type, const ToolCall* call = nullptr);
  void close_block(std::vector<Event>& out);
  std::string id_, model_;
  int index_ = -1;          // the open block's index, -1 before the first
  std::string open_type_;   // "thinking", "text", "tool_use", or "" when none is open
};

}  // namespace ember::server
