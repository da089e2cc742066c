#include "cli/model_sampling_flags.h"

#include "model/sampling_defaults.h"
#include "server/json_fields.h"

namespace ember::cli {

void apply_model_sampling(const CLI::App& cmd, const Model& model, SamplingParams& sp) {
  const SamplingDefaults d = sampling_defaults(model);
  if (d.empty()) return;
  const SamplingParams base = server::model_sampling(d);  // the same checks as the server's
  auto given = [&](const char* flag) { return cmd.get_option(flag)->count() > 0; };
  if (!given("--temp")) sp.temperature = base.temperature;
  if (!given("--top-k")) sp.top_k = base.top_k;
  if (!given("--top-p")) sp.top_p = base.top_p;
  if (!given("--min-p")) sp.min_p = base.min_p;
  if (!given("--repeat-penalty")) sp.repetition_penalty = base.repetition_penalty;
}

}  // namespace ember::cli
