// UTF-8 helpers with JavaScript's notion of whitespace and case, which is what the reference
// renderer (written in JavaScript) applies to template text and to values.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace ember::chat::text {

// Byte length of the UTF-8 sequence starting at s[i] (1 for a stray or invalid byte).
size_t char_len(const std::string& s, size_t i);
// Code point at s[i] (U+FFFD for an invalid sequence).
char32_t decode(const std::string& s, size_t i);
void append_utf8(std::string& out, char32_t cp);

// Byte length of the JavaScript whitespace character (/\s/) at s[i], or 0.
size_t space_len(const std::string& s, size_t i);
// True when the JavaScript whitespace character at s ends exactly at byte `end`; gives its start.
bool space_before(const std::string& s, size_t end, size_t* start);

std::string trim(const std::string& s);        // String.prototype.trim
std::string trim_start(const std::string& s);  // trimStart
std::string trim_end(const std::string& s);    // trimEnd

std::string to_upper(const std::string& s);
std::string to_lower(const std::string& s);

// The string split into characters (code points), as Array.from(str) does.
std::vector<std::string> characters(const std::string& s);
size_t length(const std::string& s);  // number of characters

inline bool is_word_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace ember::chat::text
