// Parsing JSON that comes from outside (safetensors headers and indexes,
// config.json, tokenizer.json, tokenizer_config.json, message files, request
// bodies) with a nesting-depth limit checked before the parser runs, so a
// document nested tens of thousands deep is refused instead of exhausting the
// stack (in parsing, copying, dumping or destroying it). Error messages quote
// at most a short excerpt of the input.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/limits.h"

namespace ember {

// Throws ember::Error("<where>: nesting deeper than N at byte B") when any
// array or object opens more than max_depth levels deep.
void check_json_depth(std::string_view text, const std::string& where, int max_depth = limits::kMaxJsonDepth);

// nlohmann's message for `e`, cut short (it may quote a whole huge token).
std::string json_error_text(const nlohmann::json::exception& e);

// Both throw ember::Error("<where>: invalid JSON at byte B: <short reason>").
nlohmann::json parse_json(std::string_view text, const std::string& where, int max_depth = limits::kMaxJsonDepth);
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& where,
                                          int max_depth = limits::kMaxJsonDepth);

}  // namespace ember
