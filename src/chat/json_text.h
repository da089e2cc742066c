// JSON text of template values, byte for byte as the reference renderer writes it for the
// `tojson` filter and for printing lists/dicts: ", " and ": " separators without indent, "," and
// ": " with indent, non-ASCII kept unless ensure_ascii.
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "chat/value.h"

namespace ember::chat {

struct JsonOptions {
  int indent = 0;  // 0: single line
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::pair<std::string, std::string>> separators;  // (item, key)
  size_t max_bytes = size_t(256) << 20;  // a list holding itself many times must not explode
};

// undefined_as_null: `tojson` writes undefined as null; printing a list writes "undefined".
std::string to_json(const Value& v, const JsonOptions& options, bool undefined_as_null);
// JSON.stringify of a string.
std::string json_quote(const std::string& s, bool ensure_ascii);

}  // namespace ember::chat
