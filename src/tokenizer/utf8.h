// UTF-8 helpers shared by the tokenizer: the WHATWG decoding rules (what a
// browser's or Node's TextDecoder does with invalid bytes), code point
// iteration, and the whitespace sets the reference tokenizer uses.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::utf8 {

// Incremental WHATWG UTF-8 decoder: every maximal invalid subsequence becomes one
// U+FFFD. Feeding bytes in any chunking and then calling finish() gives the same
// text as decoding all bytes at once.
class Decoder {
 public:
  // Appends the text of every complete character in `bytes` to `out`; an
  // incomplete trailing sequence stays pending.
  void feed(std::string_view bytes, std::string& out);
  // End of stream: a pending incomplete sequence becomes one U+FFFD.
  void finish(std::string& out);
  bool pending() const { return needed_ != 0; }

 private:
  void feed_byte(uint8_t b, std::string& out);
  uint32_t cp_ = 0;
  int needed_ = 0, seen_ = 0;
  uint8_t lower_ = 0x80, upper_ = 0xBF;
  char partial_[4] = {};
};

// True when `s` is well-formed UTF-8 (no surrogates, no overlongs, <= U+10FFFF).
bool is_valid(std::string_view s);
// `s` with every invalid sequence replaced by U+FFFD (WHATWG rules).
std::string sanitize(std::string_view s);

// Length of the UTF-8 sequence starting with lead byte `b` (1 for invalid leads).
inline int seq_len(uint8_t b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : b < 0xF8 ? 4 : 1; }
// Decodes the code point at s[i] (s must be valid UTF-8); advances i.
uint32_t next(std::string_view s, size_t& i);
void append(std::string& out, uint32_t cp);

// JavaScript's String.prototype.trim whitespace (WhiteSpace + LineTerminator).
bool is_js_space(uint32_t cp);
std::string_view trim_js_start(std::string_view s);
std::string_view trim_js_end(std::string_view s);

// Number of bytes at the end of `s` that form an incomplete (but so far valid)
// UTF-8 sequence; 0 when `s` ends on a character boundary.
size_t incomplete_tail(std::string_view s);

}  // namespace ember::utf8
