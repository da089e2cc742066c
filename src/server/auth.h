// API keys: each API's header, compared in constant time so the time a
// refusal takes says nothing about how much of a guess was right.
#pragma once
#include <string>
#include <string_view>

namespace ember::server {

bool constant_time_equal(std::string_view a, std::string_view b);

// The key a request presents: "Authorization: Bearer KEY" (OpenAI routes) or
// "x-api-key: KEY" (Anthropic routes; their SDK sends this). Either header is
// read on either route, as clients of each sometimes send the other.
bool key_accepted(std::string_view expected, std::string_view authorization_header, std::string_view x_api_key_header);

}  // namespace ember::server
