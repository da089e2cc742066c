// Codebooks of the IQ formats: the grids of 8 (or 4) values that a grid index
// selects, the sign patterns, the IQ4 non-linear value table and the IQ1 delta.
// These are data of the file format; a file made by any tool uses exactly these.
#pragma once
#include <cstdint>

namespace ember::quant::iq {

// Each entry packs 8 byte values (4 for the IQ3 grids), element 0 in the low byte.
const uint64_t* iq2xxs_grid();  // 256 entries, values 8, 25, 43
const uint64_t* iq2xs_grid();   // 512 entries
const uint64_t* iq2s_grid();    // 1024 entries
const uint32_t* iq3xxs_grid();  // 256 entries, values 4, 12, ..., 62
const uint32_t* iq3s_grid();    // 512 entries, values 1, 3, ..., 15
const uint64_t* iq1s_grid();    // 2048 entries, int8 values -1, 0, 1

// Sign byte for a 7-bit sign index: bit 7 makes the number of minus signs even.
inline uint8_t ksigns(uint32_t i7) { return uint8_t(i7 | ((__builtin_popcount(i7) & 1) << 7)); }

inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr float kIQ1Delta = 0.125f;

}  // namespace ember::quant::iq
