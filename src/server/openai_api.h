// The OpenAI API as plain functions: request bodies to engine requests
// (/v1/chat/completions, /v1/completions) and results to the JSON the
// official SDK reads, whole or as stream chunks. No sockets here: the routes
// (openai_routes.cpp), the unit tests and the fuzzer call these.
#pragma once
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/completion.h"
#include "server/json_fields.h"
#include "server/served_model.h"
#include "server/tool_calls.h"

namespace ember::server {

struct OpenAiCall {
  GenerationRequest gen;   // prompt, sampling and limits of choice 0 (choice i samples with seed + i)
  bool chat = true;        // /v1/chat/completions (else /v1/completions)
  int n = 1;               // choices
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  int top_logprobs = -1;   // -1: no logprobs; else the alternatives per token (0..20)
  ToolCallFormat tool_format = ToolCallFormat::None;  // with tools: how calls are found in the answer
  bool predicted = false;  // a prediction came (usage then tells how much of it the answer took)
};

// Throws ApiError: 400 for a malformed body, 404 for another model's name.
OpenAiCall parse_chat_completion(const json& body, const ServedModel& m);
OpenAiCall parse_completion(const json& body, const ServedModel& m);

// "stop", "length", "tool_calls" (stopped after calling tools), or null while running.
json openai_finish_reason(FinishReason r, bool called_tools = false);
// message.tool_calls, or in a stream delta.tool_calls (numbered from `first_index`).
json openai_tool_calls(const std::vector<ToolCall>& calls, bool delta = false, size_t first_index = 0);
json openai_usage(const std::vector<Completion>& choices, bool predicted = false);

// A whole answer: chat.completion or text_completion.
json openai_response(const OpenAiCall& call, const std::vector<Completion>& choices, const ServedModel& m,
                     const std::string& id, int64_t created);

// One stream chunk for choice `index`: `delta` is the chat delta ({"content": ...},
// {"reasoning_content": ...}, {"role": "assistant"}) or, for completions, {"text": ...}.
json openai_chunk(const OpenAiCall& call, const ServedModel& m, const std::string& id, int64_t created, int index,
                  const json& delta, const json& finish_reason, const json& logprobs = nullptr);
// The last chunk of a stream with include_usage: no choices, the usage.
json openai_usage_chunk(const OpenAiCall& call, const ServedModel& m, const std::string& id, int64_t created,
                        const std::vector<Completion>& choices);
// The logprobs object of a run of tokens, in the route's format.
json openai_logprobs(const OpenAiCall& call, const Tokenizer& tok, const std::vector<TokenLogprob>& lps);

json openai_models(const ServedModel& m);

}  // namespace ember::server
