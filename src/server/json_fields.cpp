#include "server/json_fields.h"

#include "engine/sampling_validation.h"
#include "server/api_error.h"

namespace ember::server {

json parse_json_object(std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return j;
}

const json* field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number_field(const json& obj, const char* key, double lo, double hi) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw ApiError(400, std::string(key) + " must be a number", key);
  const double x = v->get<double>();
  try {
    check_real(key, x, lo, hi);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), key);
  }
  return x;
}

std::optional<int64_t> integer_field(const json& obj, const char* key, int64_t lo, int64_t hi) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  // 3.0 is an integer to JavaScript clients; 3.5 and 1e30 are not.
  const bool whole_float = v->is_number_float() && v->get<double>() == double(int64_t(v->get<double>())) &&
                           std::abs(v->get<double>()) < 9e15;
  const bool too_big = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX);
  if (!(v->is_number_integer() || whole_float) || too_big)
    throw ApiError(400, std::string(key) + " must be an integer", key);
  const int64_t x = v->is_number_float() ? int64_t(v->get<double>()) : v->get<int64_t>();
  try {
    check_integer(key, x, lo, hi);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), key);
  }
  return x;
}

std::optional<bool> bool_field(const json& obj, const char* key) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw ApiError(400, std::string(key) + " must be true or false", key);
  return v->get<bool>();
}

std::optional<std::string> string_field(const json& obj, const char* key) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw ApiError(400, std::string(key) + " must be a string", key);
  return v->get<std::string>();
}

std::vector<std::string> strings_field(const json& obj, const char* key, size_t max_count) {
  const json* v = field(obj, key);
  if (!v) return {};
  const std::string what = std::string(key) + " must be a string or an array of at most " + std::to_string(max_count) + " strings";
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array() || v->size() > max_count) throw ApiError(400, what, key);
  std::vector<std::string> out;
  for (const json& s : *v) {
    if (!s.is_string()) throw ApiError(400, what, key);
    if (!s.get_ref<const std::string&>().empty()) out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace ember::server

namespace ember::server {

SamplingParams sampling_fields(const json& body, double max_temperature, const SamplingParams& base) {
  SamplingParams sp = base;
  if (auto t = number_field(body, "temperature", 0, max_temperature)) sp.temperature = float(*t);
  if (auto p = number_field(body, "top_p", 0, 1)) sp.top_p = float(*p);
  if (sp.top_p <= 0) throw ApiError(400, "top_p must be greater than 0", "top_p");
  if (auto k = integer_field(body, "top_k", -1, INT32_MAX)) sp.top_k = int(std::max<int64_t>(*k, 0));  // -1: off, as some clients send
  if (auto p = number_field(body, "min_p", 0, 1)) sp.min_p = float(*p);
  if (auto s = integer_field(body, "seed", INT64_MIN, INT64_MAX)) sp.seed = uint64_t(*s);
  if (auto p = number_field(body, "presence_penalty", -2, 2)) sp.presence_penalty = float(*p);
  if (auto p = number_field(body, "frequency_penalty", -2, 2)) sp.frequency_penalty = float(*p);
  if (auto p = number_field(body, "repetition_penalty", 0, 100)) sp.repetition_penalty = float(*p);
  if (sp.repetition_penalty <= 0) throw ApiError(400, "repetition_penalty must be greater than 0", "repetition_penalty");
  // The APIs' penalties count every token of the answer, not a recent window.
  sp.penalty_last_n = -1;
  return sp;
}

SamplingParams model_sampling(const SamplingDefaults& d) {
  SamplingParams sp;
  if (d.temperature) sp.temperature = float(*d.temperature);
  if (d.top_p) sp.top_p = float(*d.top_p);
  if (d.min_p) sp.min_p = float(*d.min_p);
  if (d.repetition_penalty) sp.repetition_penalty = float(*d.repetition_penalty);
  try {
    if (d.top_k) check_integer("top_k", *d.top_k, 0, INT32_MAX);
    if (d.top_k) sp.top_k = int(*d.top_k);
    validate_sampling(sp);
  } catch (const Error& e) {
    throw Error("the model's default sampling (" + d.source + "): " + e.what());
  }
  return sp;
}

}  // namespace ember::server
