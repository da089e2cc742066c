// Reading a request body's fields. Every refusal is an ApiError(400) naming
// the field and what it should be, so the two APIs refuse bad input alike.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::server {

using json = nlohmann::ordered_json;

// The body as a JSON object, or ApiError(400) saying why not.
json parse_json_object(std::string_view body);

// The field's value, or nullptr when it is absent or null (both mean "not given").
const json* field(const json& obj, const char* key);

std::optional<double> number_field(const json& obj, const char* key, double lo, double hi);
std::optional<int64_t> integer_field(const json& obj, const char* key, int64_t lo, int64_t hi);
std::optional<bool> bool_field(const json& obj, const char* key);
std::optional<std::string> string_field(const json& obj, const char* key);
// A string, or an array of at most `max_count` strings (OpenAI "stop").
std::vector<std::string> strings_field(const json& obj, const char* key, size_t max_count);

}  // namespace ember::server

#include "engine/sampler.h"
#include "model/sampling_defaults.h"

namespace ember::server {

// temperature (0 .. max_temperature), top_p, top_k, min_p, seed,
// presence_penalty and frequency_penalty (-2 .. 2), repetition_penalty:
// the sampling fields both APIs share; absent ones keep `base` (the model's
// defaults; without any, greedy).
SamplingParams sampling_fields(const json& body, double max_temperature, const SamplingParams& base);

// The model's default sampling over the engine's defaults, checked by
// validate_sampling; an out-of-range value is an ember::Error naming its source.
SamplingParams model_sampling(const SamplingDefaults& d);

}  // namespace ember::server
