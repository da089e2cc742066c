#include "tokenizer/utf8.h"

namespace ember::utf8 {

static const char kReplacement[] = "\xEF\xBF\xBD";

void Decoder::feed_byte(uint8_t b, std::string& out) {
  if (needed_ == 0) {
    if (b < 0x80) { out.push_back(char(b)); return; }
    if (b >= 0xC2 && b <= 0xDF) { needed_ = 1; cp_ = b & 0x1F; }
    else if (b >= 0xE0 && b <= 0xEF) {
      if (b == 0xE0) lower_ = 0xA0;
      if (b == 0xED) upper_ = 0x9F;
      needed_ = 2; cp_ = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      if (b == 0xF0) lower_ = 0x90;
      if (b == 0xF4) upper_ = 0x8F;
      needed_ = 3; cp_ = b & 0x07;
    } else { out += kReplacement; return; }
    partial_[0] = char(b);
    seen_ = 0;
    return;
  }
  if (b < lower_ || b > upper_) {
    // The pending sequence is invalid: one U+FFFD for it, then reprocess b.
    needed_ = seen_ = 0; cp_ = 0; lower_ = 0x80; upper_ = 0xBF;
    out += kReplacement;
    feed_byte(b, out);
    return;
  }
  lower_ = 0x80; upper_ = 0xBF;
  cp_ = (cp_ << 6) | (b & 0x3F);
  partial_[++seen_] = char(b);
  if (seen_ == needed_) {
    out.append(partial_, size_t(needed_ + 1));
    needed_ = seen_ = 0; cp_ = 0;
  }
}

void Decoder::feed(std::string_view bytes, std::string& out) {
  for (unsigned char b : bytes) feed_byte(b, out);
}

void Decoder::finish(std::string& out) {
  if (needed_ != 0) out += kReplacement;
  needed_ = seen_ = 0; cp_ = 0; lower_ = 0x80; upper_ = 0xBF;
}

bool is_valid(std::string_view s) {
  size_t i = 0, n = s.size();
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  while (i < n) {
    uint8_t b = p[i];
    if (b < 0x80) { ++i; continue; }
    int len; uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b >= 0xE0 && b <= 0xEF) { len = 3; if (b == 0xE0) lo = 0xA0; if (b == 0xED) hi = 0x9F; }
    else if (b >= 0xF0 && b <= 0xF4) { len = 4; if (b == 0xF0) lo = 0x90; if (b == 0xF4) hi = 0x8F; }
    else return false;
    if (i + size_t(len) > n) return false;
    if (p[i + 1] < lo || p[i + 1] > hi) return false;
    for (int k = 2; k < len; ++k) if ((p[i + k] & 0xC0) != 0x80) return false;
    i += size_t(len);
  }
  return true;
}

std::string sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  Decoder d;
  d.feed(s, out);
  d.finish(out);
  return out;
}

uint32_t next(std::string_view s, size_t& i) {
  auto b = uint8_t(s[i]);
  int len = seq_len(b);
  if (len == 1 || i + size_t(len) > s.size()) { ++i; return b; }
  uint32_t cp = b & (0x7F >> len);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3F);
  i += size_t(len);
  return cp;
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) out.push_back(char(cp));
  else if (cp < 0x800) { out.push_back(char(0xC0 | (cp >> 6))); out.push_back(char(0x80 | (cp & 0x3F))); }
  else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12))); out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18))); out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F))); out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

bool is_js_space(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string_view trim_js_start(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!is_js_space(next(s, j))) break;
    i = j;
  }
  return s.substr(i);
}

std::string_view trim_js_end(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (uint8_t(s[start]) & 0xC0) == 0x80) --start;
    size_t j = start;
    if (!is_js_space(next(s, j))) break;
    end = start;
  }
  return s.substr(0, end);
}

size_t incomplete_tail(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    auto b = uint8_t(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    int len = seq_len(b);
    return (len > int(back)) ? back : 0;
  }
  return 0;
}

}  // namespace ember::utf8
