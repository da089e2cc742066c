// Token ids for test prompts: deterministic, pseudo-random, below 150,000
// (inside the vocabulary of the `tiny` preset), distinct prompts per seed.
#pragma once
#include <cstdint>
#include <vector>

inline std::vector<int32_t> ids(int n, int seed) {
  std::vector<int32_t> v;
  uint32_t x = uint32_t(seed) * 2654435761u + 1;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v.push_back(int32_t(x % 150000u));
  }
  return v;
}
