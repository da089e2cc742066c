#include "server/prompt.h"

#include "chat/chat_tokens.h"
#include "server/api_error.h"

namespace ember::server {

std::vector<int32_t> encode_conversation(const ServedModel& m, const json& messages, const json& tools,
                                         const json& template_kwargs) {
  if (!m.chat_template) throw ApiError(400, "model " + m.id + " has no chat template; use /v1/completions");
  chat::ChatRequest req;
  req.messages = messages;
  req.tools = tools;
  req.add_generation_prompt = true;
  req.kwargs = template_kwargs.is_object() ? template_kwargs : json::object();
  try {
    return chat::encode_chat(*m.tok, *m.chat_template, req).ids;
  } catch (const Error& e) {
    // A template's raise_exception (e.g. roles out of order) is the request's fault.
    throw ApiError(400, std::string("the chat template refused the conversation: ") + e.what());
  }
}

std::vector<int32_t> encode_text(const ServedModel& m, const std::string& text) {
  return m.tok->encode(text, /*add_special=*/true, /*parse_special=*/true);
}

int resolve_max_tokens(std::optional<int64_t> asked, size_t prompt_tokens, int context, const char* field_name) {
  const int64_t room = int64_t(context) - int64_t(prompt_tokens);
  if (room < 1)
    throw ApiError(400, "the prompt has " + std::to_string(prompt_tokens) + " tokens; the context holds " +
                            std::to_string(context) + " with room for at least one new token", "messages");
  if (!asked) return int(room);
  if (*asked > room)
    throw ApiError(400, std::string(field_name) + " = " + std::to_string(*asked) + " with a prompt of " +
                            std::to_string(prompt_tokens) + " tokens exceeds the context of " + std::to_string(context) +
                            " tokens", field_name);
  return int(*asked);
}

}  // namespace ember::server
