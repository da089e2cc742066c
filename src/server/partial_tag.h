// Streamed text is cut anywhere, so a tag (<think>, <tool_call>) may arrive
// in pieces: the parsers hold back the end of the text that may still
// become one.
#pragma once
#include <algorithm>
#include <string_view>

namespace ember::server {

// Length of the longest end of `s` that is a proper beginning of `tag`.
inline size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace ember::server
