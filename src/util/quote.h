// 'name' in single quotes, for error messages that name a key, tensor or field;
// excerpt() for quoting untrusted input without letting it flood the message.
#pragma once
#include <string>
#include <string_view>

namespace ember {

inline std::string single_quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

// At most `max` bytes of `s` (cut before a UTF-8 continuation byte), control
// characters escaped, "..." and the full length appended when cut: error
// messages stay one short line whatever the input holds.
inline std::string excerpt(std::string_view s, size_t max = 80) {
  size_t n = s.size() <= max ? s.size() : max;
  while (n < s.size() && n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  std::string out;
  out.reserve(n + 24);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') out += "\\n";
    else if (c < 0x20 || c == 0x7f) { static const char* hex = "0123456789abcdef"; out += "\\x"; out += hex[c >> 4]; out += hex[c & 15]; }
    else out += char(c);
  }
  if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

}  // namespace ember
