// The model's own default sampling (model/sampling_defaults.h) for `ember run`,
// `ember batch` and `ember serve`: what a flag or a request does not set.
#pragma once
#include <CLI/CLI.hpp>

#include "engine/sampler.h"
#include "model/model.h"
#include "model/sampling_defaults.h"

namespace ember::cli {

// The model's defaults and the sampling they make. Defaults that cannot be read
// or are out of range are an optional hint, not a broken model: they are
// dropped with a warning on stderr naming why, and greedy stays the default.
struct ModelSampling {
  SamplingDefaults defaults;
  SamplingParams params;
};
ModelSampling checked_model_sampling(const Model& model);

// Sets the fields of `sp` whose flag (add_sampling_flags) `cmd` did not see
// from the model's defaults, and says on stderr which it used.
void apply_model_sampling(const CLI::App& cmd, const Model& model, SamplingParams& sp);

}  // namespace ember::cli
