#include "cli/model_sampling_flags.h"

#include <cstdio>

#include "server/json_fields.h"
#include "util/error.h"

namespace ember::cli {

ModelSampling checked_model_sampling(const Model& model) {
  ModelSampling m;
  try {
    m.defaults = sampling_defaults(model);
    m.params = server::model_sampling(m.defaults);  // the same checks as the server's
  } catch (const Error& e) {
    std::fprintf(stderr, "warning: the model's default sampling is ignored: %s\n", e.what());
    m = ModelSampling{};
  }
  return m;
}

void apply_model_sampling(const CLI::App& cmd, const Model& model, SamplingParams& sp) {
  const ModelSampling m = checked_model_sampling(model);
  if (m.defaults.empty()) return;
  const SamplingParams& base = m.params;
  auto given = [&](const char* flag) { return cmd.get_option(flag)->count() > 0; };
  bool used = false;
  auto take = [&](const char* flag, auto& field, auto value) {
    if (given(flag)) return;
    field = value;
    used = true;
  };
  take("--temp", sp.temperature, base.temperature);
  take("--top-k", sp.top_k, base.top_k);
  take("--top-p", sp.top_p, base.top_p);
  take("--min-p", sp.min_p, base.min_p);
  take("--repeat-penalty", sp.repetition_penalty, base.repetition_penalty);
  // The model's defaults may sample where ember used to be greedy: say so.
  if (used)
    std::fprintf(stderr, "ember: the model's default sampling (%s) fills the sampling flags not given; --temp 0 is greedy\n",
                 m.defaults.describe().c_str());
}

}  // namespace ember::cli
