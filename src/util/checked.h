// Arithmetic on sizes that come from untrusted files: overflow is reported,
// never wrapped.
#pragma once
#include <cstdint>
#include <optional>

namespace ember {

// a * b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace ember
