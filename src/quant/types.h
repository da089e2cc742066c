// Tensor element types, numbered as in the GGUF format (the numbers are part of
// the file format), with the block geometry of each.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ember {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3,
  // 4 and 5 were Q4_2 / Q4_3, removed from the format.
  Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
};

struct TypeInfo {
  const char* name;     // as GGUF tools print it: "Q4_K", "IQ3_XXS", ...
  int64_t block_elems;  // elements per block (1 for plain types)
  size_t block_bytes;   // bytes per block
  bool known;           // false for unused numbers
};

// Geometry of `t`; for a number that names no type, returns {.known = false}.
TypeInfo type_info(GgmlType t);
inline TypeInfo type_info(uint32_t raw) { return type_info(static_cast<GgmlType>(raw)); }
inline const char* type_name(GgmlType t) { return type_info(t).known ? type_info(t).name : "unknown"; }
std::optional<GgmlType> type_from_name(std::string_view name);  // case-insensitive

// Bytes of a row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(GgmlType t, int64_t n) {
  const TypeInfo ti = type_info(t);
  return size_t(n / ti.block_elems) * ti.block_bytes;
}

}  // namespace ember
