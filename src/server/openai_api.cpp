#include "server/openai_api.h"

#include "server/api_error.h"
#include "server/output_constraints.h"
#include "server/prompt.h"
#include "server/reasoning_split.h"

namespace ember::server {

namespace {

constexpr size_t kMaxStops = 16;
constexpr int kMaxChoices = 16;

void check_model(const json& body, const ServedModel& m) {
  const auto name = string_field(body, "model");
  if (name && *name != m.id)
    throw ApiError(404, "the model '" + name->substr(0, 200) + "' does not exist; this server serves '" + m.id + "'",
                   "model");
}

// Content as one string: a string, or text parts joined; images and audio
// refused. `where` names it in errors, `param` is the error's parameter.
std::string content_text(const json& content, const std::string& where, const char* param) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw ApiError(400, where + " must be a string or an array of content parts", param);
  std::string text;
  for (const json& part : content) {
    const auto type = part.is_object() ? string_field(part, "type") : std::nullopt;
    if (!type) throw ApiError(400, where + " parts must be objects with a \"type\"", param);
    if (*type != "text")
      throw ApiError(400, where + ": content of type '" + type->substr(0, 64) + "' is not supported (this model reads text only)",
                     param);
    const auto t = string_field(part, "text");
    if (!t) throw ApiError(400, where + ": a text part needs a string \"text\"", param);
    text += *t;
  }
  return text;
}

// Predicted outputs: {"type": "content", "content": the answer expected (a string or text parts)}.
// Its tokens are drafted from (engine/prediction.h); the answer stays the model's own.
// Returns whether one came (its tokens in `tokens`).
bool prediction_of(const json& body, const ServedModel& m, std::vector<int32_t>& tokens) {
  const json* p = field(body, "prediction");
  if (!p || p->is_null()) return false;
  const json* content = p->is_object() ? field(*p, "content") : nullptr;
  if (!content || string_field(*p, "type").value_or("") != "content")
    throw ApiError(400, "prediction must be {\"type\": \"content\", \"content\": the expected answer}", "prediction");
  tokens = m.tok->encode(content_text(*content, "prediction.content", "prediction"), /*add_special=*/false,
                         /*parse_special=*/false);
  return true;
}

// OpenAI messages to the list the chat template reads: roles checked, content flattened to text.
json template_messages(const json& body) {
  const json* msgs = field(body, "messages");
  if (!msgs) throw ApiError(400, "messages is required", "messages");
  if (!msgs->is_array() || msgs->empty()) throw ApiError(400, "messages must be a non-empty array", "messages");
  json out = json::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& msg = (*msgs)[i];
    if (!msg.is_object()) throw ApiError(400, "messages[" + std::to_string(i) + "] must be an object", "messages");
    auto role = string_field(msg, "role");
    if (!role || !(*role == "system" || *role == "developer" || *role == "user" || *role == "assistant" || *role == "tool"))
      throw ApiError(400, "messages[" + std::to_string(i) + "].role must be system, developer, user, assistant or tool",
                     "messages");
    if (*role == "developer") role = "system";  // the newer name of the same thing
    json m = {{"role", *role},
              {"content", content_text(msg.contains("content") ? msg["content"] : json(),
                                       "messages[" + std::to_string(i) + "].content", "messages")}};
    if (const json* calls = field(msg, "tool_calls")) {
      if (!calls->is_array()) throw ApiError(400, "messages[" + std::to_string(i) + "].tool_calls must be an array", "messages");
      m["tool_calls"] = *calls;
    }
    for (const char* key : {"tool_call_id", "name", "reasoning_content"})
      if (auto s = string_field(msg, key)) m[key] = *s;
    out.push_back(std::move(m));
  }
  return out;
}

json tools_of(const json& body) {
  const json* tools = field(body, "tools");
  if (!tools) return nullptr;
  if (!tools->is_array()) throw ApiError(400, "tools must be an array", "tools");
  for (const json& t : *tools) {
    if (!t.is_object()) throw ApiError(400, "tools must hold objects", "tools");
    // The template and the tool-call grammar read function.name: a tool without one is refused, not skipped.
    const json* fn = field(t, "function");
    if (!fn || !fn->is_object() || !string_field(*fn, "name"))
      throw ApiError(400, "tools: each tool needs {\"type\": \"function\", \"function\": {\"name\": ...}}", "tools");
  }
  return tools->empty() ? json() : *tools;
}

// tool_choice: "auto", "none", "required" or {"type": "function", "function": {"name"}}.
ToolChoice tool_choice_of(const json& body, std::string& name) {
  const json* c = field(body, "tool_choice");
  if (!c) return ToolChoice::Auto;
  if (c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "auto") return ToolChoice::Auto;
    if (s == "none") return ToolChoice::None;
    if (s == "required") return ToolChoice::Required;
  } else if (c->is_object()) {
    const json* fn = field(*c, "function");
    if (const auto n = fn && fn->is_object() ? string_field(*fn, "name") : std::nullopt) {
      name = *n;
      return ToolChoice::Named;
    }
  }
  throw ApiError(400, "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                 "tool_choice");
}

// The fields chat and completions share: sampling, stop, n, stream, logprobs.
void common_fields(const json& body, const ServedModel& m, OpenAiCall& call) {
  call.gen.sampling = sampling_fields(body, 2.0, m.sampling);
  call.gen.stop = strings_field(body, "stop", kMaxStops);
  call.n = int(integer_field(body, "n", 1, kMaxChoices).value_or(1));
  // An extension other servers share: generate past end-of-generation tokens (benchmarks ask exact lengths).
  call.gen.ignore_eos = bool_field(body, "ignore_eos").value_or(false);
  call.stream = bool_field(body, "stream").value_or(false);
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) throw ApiError(400, "stream_options must be an object", "stream_options");
    call.include_usage = bool_field(*so, "include_usage").value_or(false);
  }
}

}  // namespace

OpenAiCall parse_chat_completion(const json& body, const ServedModel& m) {
  check_model(body, m);
  OpenAiCall call;
  call.chat = true;
  common_fields(body, m, call);
  if (bool_field(body, "logprobs").value_or(false))
    call.top_logprobs = int(integer_field(body, "top_logprobs", 0, 20).value_or(0));
  json kwargs = json::object();
  if (const json* k = field(body, "chat_template_kwargs")) {
    if (!k->is_object()) throw ApiError(400, "chat_template_kwargs must be an object", "chat_template_kwargs");
    kwargs = *k;
  }
  const json tools = tools_of(body);
  call.gen.prompt = encode_conversation(m, template_messages(body), tools, kwargs);
  std::string tool_name;
  const ToolChoice choice = tool_choice_of(body, tool_name);
  ToolUse use = tool_use(m, tools, choice, tool_name, "tool_choice");
  call.tool_format = use.format;
  const json* response_format = field(body, "response_format");
  call.gen.constraint = response_format_constraint(response_format ? *response_format : json(), m);
  if (use.constraint) {
    if (call.gen.constraint)
      throw ApiError(400, "a required tool call and a JSON response_format cannot both shape one answer", "response_format");
    call.gen.constraint = std::move(use.constraint);
  }
  // max_completion_tokens is the newer name; either may come.
  auto asked = integer_field(body, "max_completion_tokens", 1, INT32_MAX);
  const char* name = "max_completion_tokens";
  if (!asked) {
    asked = integer_field(body, "max_tokens", 1, INT32_MAX);
    name = "max_tokens";
  }
  call.gen.max_tokens = resolve_max_tokens(asked, call.gen.prompt.size(), m.context, name);
  call.gen.keep_logits = call.top_logprobs >= 0;
  call.predicted = prediction_of(body, m, call.gen.prediction);
  return call;
}

OpenAiCall parse_completion(const json& body, const ServedModel& m) {
  check_model(body, m);
  OpenAiCall call;
  call.chat = false;
  common_fields(body, m, call);
  const json* prompt = field(body, "prompt");
  if (!prompt) throw ApiError(400, "prompt is required", "prompt");
  if (prompt->is_string()) {
    call.gen.prompt = encode_text(m, prompt->get<std::string>());
  } else if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number_integer()) {
    for (const json& id : *prompt) {  // token ids, as the API allows
      if (!id.is_number_integer()) throw ApiError(400, "prompt must be a string or an array of token ids", "prompt");
      const int64_t v = id.get<int64_t>();
      if (v < 0 || v >= m.tok->vocab_size())
        throw ApiError(400, "token id " + std::to_string(v) + " is outside the vocabulary", "prompt");
      call.gen.prompt.push_back(int32_t(v));
    }
  } else if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    call.gen.prompt = encode_text(m, (*prompt)[0].get<std::string>());
  } else {
    throw ApiError(400, "prompt must be a string or an array of token ids (one prompt per request)", "prompt");
  }
  if (call.gen.prompt.empty()) throw ApiError(400, "the prompt is empty", "prompt");
  if (auto lp = integer_field(body, "logprobs", 0, 20)) call.top_logprobs = int(*lp);
  call.gen.max_tokens = resolve_max_tokens(integer_field(body, "max_tokens", 1, INT32_MAX).value_or(16),
                                           call.gen.prompt.size(), m.context, "max_tokens");
  call.gen.keep_logits = call.top_logprobs >= 0;
  return call;
}

json openai_finish_reason(FinishReason r, bool called_tools) {
  switch (r) {
    case FinishReason::Stop: return called_tools ? "tool_calls" : "stop";
    case FinishReason::Length: return "length";
    default: return nullptr;
  }
}

json openai_tool_calls(const std::vector<ToolCall>& calls, bool delta, size_t first_index) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = json::object();
    if (delta) c["index"] = first_index + i;  // a stream numbers its calls
    c["id"] = calls[i].id;
    c["type"] = "function";
    c["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
    out.push_back(std::move(c));
  }
  return out;
}

json openai_usage(const std::vector<Completion>& choices, bool predicted) {
  int64_t generated = 0, kept = 0, dropped = 0;
  for (const Completion& c : choices) {
    generated += int64_t(c.tokens.size());
    kept += c.prediction_kept;
    dropped += c.prediction_dropped;
  }
  const int64_t prompt = choices.empty() ? 0 : choices[0].prompt_tokens;
  const int64_t cached = choices.empty() ? 0 : choices[0].cached_tokens;
  json u = {{"prompt_tokens", prompt},
            {"completion_tokens", generated},
            {"total_tokens", prompt + generated},
            {"prompt_tokens_details", {{"cached_tokens", cached}}}};
  // Predicted outputs: the prediction's drafted tokens the answer took, and those it did not.
  if (predicted)
    u["completion_tokens_details"] = {{"accepted_prediction_tokens", kept}, {"rejected_prediction_tokens", dropped}};
  return u;
}

json openai_logprobs(const OpenAiCall& call, const Tokenizer& tok, const std::vector<TokenLogprob>& lps) {
  auto text_of = [&](int32_t id) { return tok.decode({id}); };
  auto bytes_of = [](const std::string& s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back(int(c));
    return b;
  };
  if (call.chat) {
    json content = json::array();
    for (const TokenLogprob& t : lps) {
      json top = json::array();
      for (auto [id, lp] : t.top) top.push_back({{"token", text_of(id)}, {"logprob", lp}, {"bytes", bytes_of(text_of(id))}});
      const std::string s = text_of(t.id);
      content.push_back({{"token", s}, {"logprob", t.logprob}, {"bytes", bytes_of(s)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_lps = json::array(), tops = json::array();
  for (const TokenLogprob& t : lps) {
    tokens.push_back(text_of(t.id));
    token_lps.push_back(t.logprob);
    json top = json::object();
    for (auto [id, lp] : t.top) top[text_of(id)] = lp;
    tops.push_back(top);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}};
}

json openai_response(const OpenAiCall& call, const std::vector<Completion>& choices, const ServedModel& m,
                     const std::string& id, int64_t created) {
  json out_choices = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const Completion& c = choices[i];
    json lp = call.top_logprobs >= 0 ? openai_logprobs(call, *m.tok, c.logprobs) : json();
    if (call.chat) {
      const SplitText parts = split_reasoning(c.text);
      const ToolCallPiece answer = parse_tool_calls(call.tool_format, parts.content);
      const bool called = !answer.calls.empty();
      json message = {{"role", "assistant"}, {"content", called && answer.text.empty() ? json() : json(answer.text)}};
      if (!parts.reasoning.empty()) message["reasoning_content"] = parts.reasoning;
      if (called) message["tool_calls"] = openai_tool_calls(answer.calls);
      out_choices.push_back(
          {{"index", i}, {"message", message}, {"logprobs", lp}, {"finish_reason", openai_finish_reason(c.reason, called)}});
    } else {
      out_choices.push_back({{"index", i}, {"text", c.text}, {"logprobs", lp}, {"finish_reason", openai_finish_reason(c.reason)}});
    }
  }
  return {{"id", id},
          {"object", call.chat ? "chat.completion" : "text_completion"},
          {"created", created},
          {"model", m.id},
          {"choices", out_choices},
          {"usage", openai_usage(choices, call.predicted)}};
}

json openai_chunk(const OpenAiCall& call, const ServedModel& m, const std::string& id, int64_t created, int index,
                  const json& delta, const json& finish_reason, const json& logprobs) {
  json choice = {{"index", index}};
  if (call.chat) choice["delta"] = delta;
  else choice["text"] = delta.value("text", "");
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = finish_reason;
  json chunk = {{"id", id},
                {"object", call.chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created},
                {"model", m.id},
                {"choices", json::array({choice})}};
  if (call.include_usage) chunk["usage"] = nullptr;
  return chunk;
}

json openai_usage_chunk(const OpenAiCall& call, const ServedModel& m, const std::string& id, int64_t created,
                        const std::vector<Completion>& choices) {
  return {{"id", id},
          {"object", call.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", m.id},
          {"choices", json::array()},
          {"usage", openai_usage(choices, call.predicted)}};
}

json openai_models(const ServedModel& m) {
  // max_model_len: the context a request's prompt and answer share (the name other servers use).
  json model = {{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", "ember"},
                {"max_model_len", m.context}};
  // The model's own defaults, which apply to the fields a request leaves out.
  if (const SamplingDefaults& d = m.sampling_defaults; !d.empty()) {
    json s = json::object();
    if (d.temperature) s["temperature"] = *d.temperature;
    if (d.top_k) s["top_k"] = *d.top_k;
    if (d.top_p) s["top_p"] = *d.top_p;
    if (d.min_p) s["min_p"] = *d.min_p;
    if (d.repetition_penalty) s["repetition_penalty"] = *d.repetition_penalty;
    s["source"] = d.source;
    model["sampling_defaults"] = std::move(s);
  }
  return {{"object", "list"}, {"data", json::array({std::move(model)})}};
}

}  // namespace ember::server
