// 'name' in single quotes, for error messages that name a key, tensor or field.
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

}  // namespace ember
