#include "server/anthropic_api.h"

#include "server/api_error.h"
#include "server/output_constraints.h"
#include "server/prompt.h"

namespace ember::server {

namespace {

constexpr size_t kMaxStops = 16;

void check_model(const json& body, const ServedModel& m) {
  const auto name = string_field(body, "model");
  if (!name) throw ApiError(400, "model is required");
  if (*name != m.id)
    throw ApiError(404, "model: '" + name->substr(0, 200) + "' does not exist; this server serves '" + m.id + "'");
}

std::string block_where(size_t msg, size_t block) {
  return "messages." + std::to_string(msg) + ".content." + std::to_string(block);
}

// A tool_result's content (a string or text blocks) as text.
std::string tool_result_text(const json& content, const std::string& where) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw ApiError(400, where + ": tool_result content must be a string or an array of blocks");
  std::string text;
  for (const json& b : content) {
    if (!b.is_object() || b.value("type", "") != "text" || !b.contains("text") || !b["text"].is_string())
      throw ApiError(400, where + ": tool_result content supports text blocks only");
    text += b["text"].get<std::string>();
  }
  return text;
}

// Anthropic messages to the OpenAI-style list the chat templates read: text
// joined, tool_use as tool_calls, each tool_result as a "tool" message,
// thinking as reasoning_content.
json template_messages(const json& body) {
  json out = json::array();
  if (const json* system = field(body, "system")) {
    std::string text;
    if (system->is_string()) {
      text = system->get<std::string>();
    } else if (system->is_array()) {
      for (const json& b : *system) {
        if (!b.is_object() || b.value("type", "") != "text" || !b.contains("text") || !b["text"].is_string())
          throw ApiError(400, "system: blocks must be text blocks");
        if (!text.empty()) text += "\n";
        text += b["text"].get<std::string>();
      }
    } else {
      throw ApiError(400, "system: must be a string or an array of text blocks");
    }
    out.push_back({{"role", "system"}, {"content", text}});
  }
  const json* msgs = field(body, "messages");
  if (!msgs) throw ApiError(400, "messages: field required");
  if (!msgs->is_array() || msgs->empty()) throw ApiError(400, "messages: must be a non-empty array");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& msg = (*msgs)[i];
    const std::string where = "messages." + std::to_string(i);
    if (!msg.is_object()) throw ApiError(400, where + ": must be an object");
    const auto role = string_field(msg, "role");
    if (!role || (*role != "user" && *role != "assistant")) throw ApiError(400, where + ".role: must be user or assistant");
    const json* content = field(msg, "content");
    if (!content) throw ApiError(400, where + ".content: field required");
    if (content->is_string()) {
      out.push_back({{"role", *role}, {"content", content->get<std::string>()}});
      continue;
    }
    if (!content->is_array()) throw ApiError(400, where + ".content: must be a string or an array of blocks");
    std::string text, thinking;
    json calls = json::array(), results = json::array();
    for (size_t b = 0; b < content->size(); ++b) {
      const json& block = (*content)[b];
      const auto type = block.is_object() ? string_field(block, "type") : std::nullopt;
      if (!type) throw ApiError(400, block_where(i, b) + ": a block must be an object with a \"type\"");
      if (*type == "text") {
        const auto t = string_field(block, "text");
        if (!t) throw ApiError(400, block_where(i, b) + ".text: field required");
        text += *t;
      } else if (*type == "image" || *type == "document") {
        throw ApiError(400, block_where(i, b) + ": " + *type + " blocks are not supported (this model reads text only)");
      } else if (*type == "tool_use" && *role == "assistant") {
        const auto id = string_field(block, "id");
        const auto name = string_field(block, "name");
        const json* input = field(block, "input");
        if (!id || !name || !input || !input->is_object())
          throw ApiError(400, block_where(i, b) + ": tool_use needs id, name and an object input");
        calls.push_back({{"id", *id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", *input}}}});
      } else if (*type == "tool_result" && *role == "user") {
        const auto id = string_field(block, "tool_use_id");
        if (!id) throw ApiError(400, block_where(i, b) + ".tool_use_id: field required");
        results.push_back({{"role", "tool"},
                           {"tool_call_id", *id},
                           {"content", tool_result_text(block.contains("content") ? block["content"] : json(), block_where(i, b))}});
      } else if ((*type == "thinking" || *type == "redacted_thinking") && *role == "assistant") {
        if (auto t = string_field(block, "thinking")) thinking += *t;
      } else {
        throw ApiError(400, block_where(i, b) + ": a " + *role + " message cannot hold a '" + type->substr(0, 64) + "' block");
      }
    }
    // Tool results answer the previous turn's calls, so they come before the user's own text.
    for (json& r : results) out.push_back(std::move(r));
    if (*role == "assistant" || !text.empty() || results.empty()) {
      json m = {{"role", *role}, {"content", text}};
      if (!calls.empty()) m["tool_calls"] = calls;
      if (!thinking.empty()) m["reasoning_content"] = thinking;
      out.push_back(std::move(m));
    }
  }
  return out;
}

// Anthropic tool definitions ({name, description, input_schema}) in the OpenAI form templates expect.
json template_tools(const json& body) {
  const json* tools = field(body, "tools");
  if (!tools) return nullptr;
  if (!tools->is_array()) throw ApiError(400, "tools: must be an array");
  json out = json::array();
  for (const json& t : *tools) {
    const auto name = t.is_object() ? string_field(t, "name") : std::nullopt;
    if (!name) throw ApiError(400, "tools: each tool needs a name");
    json fn = {{"name", *name}};
    if (auto d = string_field(t, "description")) fn["description"] = *d;
    if (const json* s = field(t, "input_schema")) fn["parameters"] = *s;
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out.empty() ? json() : out;
}

json template_kwargs(const json& body) {
  json kwargs = json::object();
  if (const json* thinking = field(body, "thinking")) {
    const auto type = thinking->is_object() ? string_field(*thinking, "type") : std::nullopt;
    if (!type || (*type != "enabled" && *type != "disabled"))
      throw ApiError(400, "thinking.type: must be enabled or disabled");
    kwargs["enable_thinking"] = *type == "enabled";
  }
  return kwargs;
}

std::vector<int32_t> prompt_of(const json& body, const ServedModel& m) {
  return encode_conversation(m, template_messages(body), template_tools(body), template_kwargs(body));
}

// tool_choice: {"type": "auto" | "any" | "tool" | "none", "name"}.
ToolChoice tool_choice_of(const json& body, std::string& name) {
  const json* c = field(body, "tool_choice");
  if (!c) return ToolChoice::Auto;
  const auto type = c->is_object() ? string_field(*c, "type") : std::nullopt;
  if (type == "auto") return ToolChoice::Auto;
  if (type == "none") return ToolChoice::None;
  if (type == "any") return ToolChoice::Required;
  if (type == "tool") {
    const auto n = string_field(*c, "name");
    if (!n) throw ApiError(400, "tool_choice.name: field required for type tool");
    name = *n;
    return ToolChoice::Named;
  }
  throw ApiError(400, "tool_choice: must be an object with type auto, any, tool or none");
}

}  // namespace

AnthropicCall parse_messages(const json& body, const ServedModel& m) {
  check_model(body, m);
  if (!field(body, "max_tokens")) throw ApiError(400, "max_tokens: field required");
  AnthropicCall call;
  call.gen.sampling = sampling_fields(body, 1.0, m.sampling);
  call.gen.stop = strings_field(body, "stop_sequences", kMaxStops);
  if (const json* s = field(body, "stop_sequences"); s && !s->is_array())
    throw ApiError(400, "stop_sequences: must be an array of strings");
  call.stream = bool_field(body, "stream").value_or(false);
  const int64_t asked = *integer_field(body, "max_tokens", 1, INT32_MAX);
  const json tools = template_tools(body);
  call.gen.prompt = encode_conversation(m, template_messages(body), tools, template_kwargs(body));
  std::string tool_name;
  const ToolChoice choice = tool_choice_of(body, tool_name);
  ToolUse use = tool_use(m, tools, choice, tool_name, "tool_choice");
  call.tool_format = use.format;
  call.gen.constraint = std::move(use.constraint);
  call.gen.max_tokens = resolve_max_tokens(asked, call.gen.prompt.size(), m.context, "max_tokens");
  return call;
}

int64_t count_message_tokens(const json& body, const ServedModel& m) {
  check_model(body, m);
  return int64_t(prompt_of(body, m).size());
}

std::string anthropic_stop_reason(const Completion& c, const std::string& stop_sequence, bool called_tools) {
  if (c.reason == FinishReason::Length) return "max_tokens";
  if (called_tools) return "tool_use";
  return stop_sequence.empty() ? "end_turn" : "stop_sequence";
}

json anthropic_usage(const Completion& c) {
  // Anthropic counts cached prompt tokens apart from input_tokens.
  return {{"input_tokens", c.prompt_tokens - c.cached_tokens},
          {"output_tokens", int64_t(c.tokens.size())},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", c.cached_tokens}};
}

json anthropic_tool_use(const ToolCall& call) {
  json input = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  if (!input.is_object()) input = json::object();  // arguments that are not an object cannot be an Anthropic input
  return {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", input}};
}

json anthropic_response(const Completion& c, const std::string& stop_sequence, const ServedModel& m, const std::string& id,
                        ToolCallFormat tool_format) {
  const SplitText parts = split_reasoning(c.text);
  const ToolCallPiece answer = parse_tool_calls(tool_format, parts.content, kToolUseIdPrefix);
  json content = json::array();
  if (!parts.reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", parts.reasoning}, {"signature", ""}});
  if (!answer.text.empty() || answer.calls.empty()) content.push_back({{"type", "text"}, {"text", answer.text}});
  for (const ToolCall& call : answer.calls) content.push_back(anthropic_tool_use(call));
  return {{"id", id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", m.id},
          {"content", content},
          {"stop_reason", anthropic_stop_reason(c, stop_sequence, !answer.calls.empty())},
          {"stop_sequence", stop_sequence.empty() ? json() : json(stop_sequence)},
          {"usage", anthropic_usage(c)}};
}

std::vector<AnthropicStream::Event> AnthropicStream::start(int64_t prompt_tokens) {
  json message = {{"id", id_},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", model_},
                  {"content", json::array()},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr},
                  {"usage", {{"input_tokens", prompt_tokens}, {"output_tokens", 0}}}};
  return {{"message_start", {{"type", "message_start"}, {"message", message}}}};
}

void AnthropicStream::open_block(std::vector<Event>& out, const char* type, const ToolCall* call) {
  if (open_type_ == type && !call) return;
  close_block(out);
  ++index_;
  open_type_ = type;
  json block = call                      ? json{{"type", "tool_use"}, {"id", call->id}, {"name", call->name}, {"input", json::object()}}
               : open_type_ == "thinking" ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                          : json{{"type", "text"}, {"text", ""}};
  out.push_back({"content_block_start", {{"type", "content_block_start"}, {"index", index_}, {"content_block", block}}});
}

void AnthropicStream::close_block(std::vector<Event>& out) {
  if (open_type_.empty()) return;
  out.push_back({"content_block_stop", {{"type", "content_block_stop"}, {"index", index_}}});
  open_type_.clear();
}

std::vector<AnthropicStream::Event> AnthropicStream::text(const SplitText& piece) {
  std::vector<Event> out;
  if (!piece.reasoning.empty()) {
    open_block(out, "thinking");
    out.push_back({"content_block_delta",
                   {{"type", "content_block_delta"}, {"index", index_}, {"delta", {{"type", "thinking_delta"}, {"thinking", piece.reasoning}}}}});
  }
  if (!piece.content.empty()) {
    open_block(out, "text");
    out.push_back({"content_block_delta",
                   {{"type", "content_block_delta"}, {"index", index_}, {"delta", {{"type", "text_delta"}, {"text", piece.content}}}}});
  }
  return out;
}

std::vector<AnthropicStream::Event> AnthropicStream::tool_use(const ToolCall& call) {
  std::vector<Event> out;
  open_block(out, "tool_use", &call);
  // The input as one JSON delta: clients join the partial_json pieces and parse them at the block's end.
  const json input = anthropic_tool_use(call)["input"];
  out.push_back({"content_block_delta",
                 {{"type", "content_block_delta"}, {"index", index_}, {"delta", {{"type", "input_json_delta"}, {"partial_json", input.dump()}}}}});
  close_block(out);
  return out;
}

std::vector<AnthropicStream::Event> AnthropicStream::finish(const Completion& c, const std::string& stop_sequence, bool called_tools) {
  std::vector<Event> out;
  if (index_ < 0) open_block(out, "text");  // an empty answer still has its (empty) text block
  close_block(out);
  json delta = {{"stop_reason", anthropic_stop_reason(c, stop_sequence, called_tools)},
                {"stop_sequence", stop_sequence.empty() ? json() : json(stop_sequence)}};
  out.push_back({"message_delta", {{"type", "message_delta"}, {"delta", delta}, {"usage", anthropic_usage(c)}}});
  out.push_back({"message_stop", {{"type", "message_stop"}}});
  return out;
}

}  // namespace ember::server
