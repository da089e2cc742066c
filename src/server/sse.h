// Server-Sent Events framing: each event is optional "event: NAME" and one
// "data: JSON" line, ended by a blank line. JSON from nlohmann never holds a
// raw newline, so one data line always carries the whole payload.
#pragma once
#include <string>
#include <string_view>

#include "server/json_fields.h"

namespace ember::server {

std::string sse_data(const json& payload);                          // OpenAI: data only
std::string sse_event(std::string_view name, const json& payload);  // Anthropic: named events
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";     // the end of an OpenAI stream
// A comment line: clients ignore it; writing it tells the server whether the client is still there.
inline constexpr std::string_view kSseKeepAlive = ": keep-alive\n\n";

// JSON text for a reply: invalid UTF-8 (never expected from the tokenizer) is replaced, not thrown on.
std::string to_text(const json& j);

}  // namespace ember::server
