// What the pick benchmarks (ember_bench_cuda_picks, ember_bench_host_picks)
// pick from, and with which settings.
#pragma once
#include <random>

#include "engine/pick.h"

namespace ember::bench {

struct PickSetting {
  const char* name;
  Pick pick;
};

inline constexpr PickSetting kPickSettings[] = {{"temperature 0.7", {0.7f, 0, 1.0f, 0.0f}},
                                                {"top-p 0.9", {0.7f, 0, 0.9f, 0.0f}},
                                                {"top-k 40, top-p 0.95, min-p 0.05", {0.8f, 40, 0.95f, 0.05f}},
                                                {"min-p 0.1", {1.0f, 0, 1.0f, 0.1f}}};

// One row of n logits: "peaked", as a trained model gives them (eight strong
// logits over a spread of σ 3), or flat (σ 0.05, as a model of random weights
// gives them: top-p then keeps most of the vocabulary).
inline void fill_pick_row(float* row, int n, bool peaked, std::mt19937& rng) {
  std::normal_distribution<float> wide(0.0f, 3.0f), narrow(0.0f, 0.05f);
  for (int i = 0; i < n; ++i) row[i] = peaked ? wide(rng) : narrow(rng);
  if (peaked)
    for (int j = 0; j < 8; ++j) row[rng() % unsigned(n)] = 14.0f + float(j);
}

}  // namespace ember::bench
