// A model's own default sampling, as its authors recommend it: the GGUF file's
// `general.sampling.*` keys, or the `generation_config.json` beside a Hugging
// Face folder. Read once at load; what a request or a flag sets wins, field by
// field. Plain optional numbers (the engine's SamplingParams and its range
// checks are applied by the caller, engine/sampling_validation.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ember {

class Model;
namespace gguf { class Reader; class Writer; }

struct SamplingDefaults {
  std::optional<double> temperature;  // 0: greedy
  std::optional<double> top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
  std::string source;  // where they came from, for messages ("general.sampling.*", "generation_config.json")

  bool empty() const { return !temperature && !top_p && !min_p && !repetition_penalty && !top_k; }
  // "temperature 0.6, top_k 20, top_p 0.95 (from generation_config.json)", or "" when empty.
  std::string describe() const;
};

// general.sampling.temp, .top_k, .top_p, .min_p, .penalty_repeat (the keys
// llama.cpp's converter writes); a key of the wrong type is an ember::Error.
SamplingDefaults sampling_defaults_from_gguf(const gguf::Reader& r);
// temperature, top_k, top_p, min_p, repetition_penalty; do_sample: false means
// greedy whatever the rest says. Malformed JSON or a wrong type is an ember::Error.
SamplingDefaults sampling_defaults_from_generation_config(std::string_view json_text);
// The model's: its GGUF keys, or generation_config.json in its folder (none: empty).
SamplingDefaults sampling_defaults(const Model& m);
// generation_config.json in `dir`, when there is one (else empty).
SamplingDefaults sampling_defaults_in_folder(const std::string& dir);
// Writes the set fields as general.sampling.* keys (what GGUF files made from
// a folder with a generation_config.json carry).
void write_sampling_defaults(gguf::Writer& w, const SamplingDefaults& d);

}  // namespace ember
