// Conversations and text to prompt token ids, shared by the OpenAI and
// Anthropic routes: each API first rewrites its messages into the
// OpenAI-style list the chat templates expect, then comes here.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "server/json_fields.h"
#include "server/served_model.h"

namespace ember::server {

// messages: [{"role", "content": string, "tool_calls"?, "tool_call_id"?, "reasoning_content"?}];
// tools: null or OpenAI-style tool definitions. Control tokens come only from
// the template (chat/chat_tokens.h). Template errors are ApiError(400).
std::vector<int32_t> encode_conversation(const ServedModel& m, const json& messages, const json& tools,
                                         const json& template_kwargs);
// A completion prompt: the text as the model's tokenizer reads it (BOS added).
std::vector<int32_t> encode_text(const ServedModel& m, const std::string& text);

// New tokens allowed: `asked` when prompt + asked fits the context (else
// ApiError 400 naming the numbers), or all the room left when not asked.
int resolve_max_tokens(std::optional<int64_t> asked, size_t prompt_tokens, int context, const char* field_name);

}  // namespace ember::server
