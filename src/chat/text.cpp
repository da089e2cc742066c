#include "chat/text.h"

#include <utf8proc.h>

namespace ember::chat::text {

size_t char_len(const std::string& s, size_t i) {
  unsigned char c = s[i];
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

char32_t decode(const std::string& s, size_t i) {
  size_t n = char_len(s, i);
  unsigned char c = s[i];
  if (n == 1) return c < 0x80 ? c : 0xFFFD;
  char32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

static bool is_js_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

size_t space_len(const std::string& s, size_t i) {
  if (i >= s.size()) return 0;
  unsigned char c = s[i];
  if (c < 0x80) return is_js_space(c) ? 1 : 0;
  size_t n = char_len(s, i);
  return n > 1 && is_js_space(decode(s, i)) ? n : 0;
}

bool space_before(const std::string& s, size_t end, size_t* start) {
  for (size_t n = 1; n <= 3 && n <= end; ++n) {
    size_t b = end - n;
    if (space_len(s, b) == n) {
      *start = b;
      return true;
    }
  }
  return false;
}

std::string trim_start(const std::string& s) {
  size_t i = 0;
  while (size_t n = space_len(s, i)) i += n;
  return s.substr(i);
}

std::string trim_end(const std::string& s) {
  size_t end = s.size(), start = 0;
  while (end > 0 && space_before(s, end, &start)) end = start;
  return s.substr(0, end);
}

std::string trim(const std::string& s) { return trim_end(trim_start(s)); }

static std::string map_case(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    if (c < 0x80) {
      out += char(upper ? (c >= 'a' && c <= 'z' ? c - 32 : c) : (c >= 'A' && c <= 'Z' ? c + 32 : c));
      ++i;
      continue;
    }
    size_t n = char_len(s, i);
    if (n == 1) {  // keep invalid bytes as they are
      out += s[i++];
      continue;
    }
    char32_t cp = decode(s, i);
    append_utf8(out, char32_t(upper ? utf8proc_toupper(utf8proc_int32_t(cp)) : utf8proc_tolower(utf8proc_int32_t(cp))));
    i += n;
  }
  return out;
}

std::string to_upper(const std::string& s) { return map_case(s, true); }
std::string to_lower(const std::string& s) { return map_case(s, false); }

std::vector<std::string> characters(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = char_len(s, i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t length(const std::string& s) {
  size_t count = 0;
  for (size_t i = 0; i < s.size(); i += char_len(s, i)) ++count;
  return count;
}

}  // namespace ember::chat::text
