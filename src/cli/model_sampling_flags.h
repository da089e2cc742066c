// `ember run` and `ember batch`: the model's own default sampling
// (model/sampling_defaults.h) for the sampling flags not given; a flag given wins.
#pragma once
#include <CLI/CLI.hpp>

#include "engine/sampler.h"
#include "model/model.h"

namespace ember::cli {

// Sets the fields of `sp` whose flag (add_sampling_flags) `cmd` did not see
// from the model's defaults. Throws ember::Error for a default out of range.
void apply_model_sampling(const CLI::App& cmd, const Model& model, SamplingParams& sp);

}  // namespace ember::cli
