#include "util/json_bounded.h"

#include "util/error.h"
#include "util/quote.h"

namespace ember {

void check_json_depth(std::string_view text, const std::string& where, int max_depth) {
  // Brackets inside strings do not nest; a backslash escapes the next byte.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw Error(where + ": JSON nested deeper than " + std::to_string(max_depth) + " levels at byte " +
                    std::to_string(i));
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced closers are the parser's to report
    }
  }
}

std::string json_error_text(const nlohmann::json::exception& e) {
  // nlohmann's message quotes the last token read, which may be the whole input.
  std::string why = e.what();
  if (const size_t p = why.find("; last read: "); p != std::string::npos) why.resize(p);
  return excerpt(why, 160);
}

namespace {

template <class Json>
Json parse_bounded(std::string_view text, const std::string& where, int max_depth) {
  check_json_depth(text, where, max_depth);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(where + ": not valid JSON (invalid JSON at byte " + std::to_string(e.byte ? e.byte - 1 : 0) +
                "): " + json_error_text(e));
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not valid JSON: " + json_error_text(e));
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& where, int max_depth) {
  return parse_bounded<nlohmann::json>(text, where, max_depth);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& where, int max_depth) {
  return parse_bounded<nlohmann::ordered_json>(text, where, max_depth);
}

}  // namespace ember
