// Sampled picks on the GPU (temperature, top-k, top-p, min-p, by the rules of
// engine/pick.h), so that a sampled sequence, like a greedy one, sends only its
// id to the host and its next step can be queued before the host reads it.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/pick.h"

namespace ember::cuda {

// One row's pick parameters as the step's metadata carries them (32 bytes).
struct DevicePick {
  float temperature = 0.0f;  // <= 0: the row is greedy, sample_rows leaves it alone
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  double draw = 0.0;
  int32_t pad[2] = {0, 0};
};
static_assert(sizeof(DevicePick) == 32, "the step metadata holds a pick in 8 ints");
DevicePick device_pick(const Pick& p);

// The largest row sample_rows takes.
constexpr int kMaxSampledVocab = 1 << 19;

// ids[r] = the pick of row r (rows ld floats apart, their first n logits) by
// picks[r], for every row whose temperature is above 0; greedy rows are not
// touched (argmax_rows picks them). kPickNonFinite / kPickAllMasked as
// pick_id gives them. Weights are summed as integers (w * 2^40), so a row's
// pick does not depend on the order of the sums: the same logits and draw
// give the same id on every run, and pick_id's id except where a draw or a
// top-p share lies within rounding of a boundary.
void sample_rows(const float* logits, int64_t ld, int64_t n_rows, int n, const DevicePick* picks, int32_t* ids,
                 cudaStream_t s);

}  // namespace ember::cuda
