#include "server/auth.h"

#include <algorithm>

namespace ember::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer string is visited whatever the contents; only the length leaks.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

bool key_accepted(std::string_view expected, std::string_view authorization_header, std::string_view x_api_key_header) {
  if (expected.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  const bool bearer_ok = authorization_header.starts_with(kBearer) &&
                         constant_time_equal(authorization_header.substr(kBearer.size()), expected);
  const bool header_ok = !x_api_key_header.empty() && constant_time_equal(x_api_key_header, expected);
  return bearer_ok || header_ok;
}

}  // namespace ember::server
