#include "model/sampling_defaults.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "gguf/gguf.h"
#include "model/model.h"
#include "util/error.h"
#include "util/json_bounded.h"
#include "util/text_file.h"

namespace ember {

namespace {

// A number of generation_config.json: absent or null is "not set"; anything but a number is refused.
std::optional<double> json_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw Error(std::string("generation_config.json: '") + key + "' must be a number");
  return it->get<double>();
}

}  // namespace

std::string SamplingDefaults::describe() const {
  if (empty()) return "";
  std::string out;
  auto add = [&](const char* name, std::optional<double> v) {
    if (!v) return;
    char text[64];
    std::snprintf(text, sizeof text, "%s%s %g", out.empty() ? "" : ", ", name, *v);
    out += text;
  };
  add("temperature", temperature);
  add("top_k", top_k ? std::optional<double>(double(*top_k)) : std::nullopt);
  add("top_p", top_p);
  add("min_p", min_p);
  add("repetition_penalty", repetition_penalty);
  return out + " (from " + source + ")";
}

SamplingDefaults sampling_defaults_from_gguf(const gguf::Reader& r) {
  SamplingDefaults d;
  d.source = "general.sampling.*";
  auto real = [&](const char* key) -> std::optional<double> {
    if (!r.find(key)) return std::nullopt;
    return r.get_float(key);  // an error names the file and key
  };
  d.temperature = real("general.sampling.temp");
  d.top_p = real("general.sampling.top_p");
  d.min_p = real("general.sampling.min_p");
  d.repetition_penalty = real("general.sampling.penalty_repeat");
  if (r.find("general.sampling.top_k")) d.top_k = r.get_int("general.sampling.top_k");
  return d;
}

SamplingDefaults sampling_defaults_from_generation_config(std::string_view json_text) {
  const nlohmann::json j = parse_json(json_text, "generation_config.json");
  if (!j.is_object()) throw Error("generation_config.json: not a JSON object");
  SamplingDefaults d;
  d.source = "generation_config.json";
  d.temperature = json_number(j, "temperature");
  d.top_p = json_number(j, "top_p");
  d.min_p = json_number(j, "min_p");
  d.repetition_penalty = json_number(j, "repetition_penalty");
  if (auto k = json_number(j, "top_k")) {
    // Range first: converting a double past int64's range is undefined.
    if (!(std::fabs(*k) <= 2147483647.0) || *k != double(int64_t(*k)))
      throw Error("generation_config.json: 'top_k' must be an integer of at most 2147483647");
    d.top_k = int64_t(*k);
  }
  // Transformers samples only with do_sample: true. Many files leave it out
  // while naming the temperature they recommend, so only an explicit false
  // means greedy.
  auto ds = j.find("do_sample");
  if (ds != j.end() && !ds->is_null()) {
    if (!ds->is_boolean()) throw Error("generation_config.json: 'do_sample' must be true or false");
    if (!ds->get<bool>()) d.temperature = 0.0;
  }
  return d;
}

SamplingDefaults sampling_defaults_in_folder(const std::string& dir) {
  const std::filesystem::path config = std::filesystem::path(dir) / "generation_config.json";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec) || !std::filesystem::exists(config, ec)) return {};
  return sampling_defaults_from_generation_config(read_text_file(config.string(), 1 << 20));
}

SamplingDefaults sampling_defaults(const Model& m) {
  return m.gguf() ? sampling_defaults_from_gguf(*m.gguf()) : sampling_defaults_in_folder(m.path());
}

void write_sampling_defaults(gguf::Writer& w, const SamplingDefaults& d) {
  if (d.temperature) w.set("general.sampling.temp", gguf::Value::f32(float(*d.temperature)));
  if (d.top_k) w.set("general.sampling.top_k", gguf::Value::i32(int32_t(std::clamp<int64_t>(*d.top_k, 0, INT32_MAX))));
  if (d.top_p) w.set("general.sampling.top_p", gguf::Value::f32(float(*d.top_p)));
  if (d.min_p) w.set("general.sampling.min_p", gguf::Value::f32(float(*d.min_p)));
  if (d.repetition_penalty) w.set("general.sampling.penalty_repeat", gguf::Value::f32(float(*d.repetition_penalty)));
}

}  // namespace ember
