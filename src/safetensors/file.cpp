// Parsing one safetensors file: the length-prefixed JSON header and the
// placement of every tensor in the data section.
#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "safetensors/safetensors.h"
#include "util/error.h"
#include "util/json_bounded.h"
#include "util/quote.h"

namespace ember::safetensors {

namespace {

// The reference implementation refuses headers above 100 MB; so do we, which
// also bounds what a hostile length can make the JSON parser allocate.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeSize { const char* name; size_t bytes; };
constexpr DtypeSize kDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},   {"I32", 4},     {"U32", 4},
    {"F32", 4},  {"I64", 8}, {"U64", 8}, {"F64", 8},
};

}  // namespace

size_t dtype_size(std::string_view dtype) {
  for (const DtypeSize& d : kDtypes)
    if (dtype == d.name) return d.bytes;
  return 0;
}

int64_t Tensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void Folder::add_file(const uint8_t* data, size_t size, const std::string& name) {
  auto fail = [&](const std::string& field, uint64_t at, const std::string& problem) {
    throw Error(name + ": " + field + " at byte " + std::to_string(at) + ": " + problem);
  };

  // --- header length and JSON ---
  if (size < 8) fail("header length", 0, "file is " + std::to_string(size) + " bytes, too short for a safetensors file");
  uint64_t header_len;
  std::memcpy(&header_len, data, 8);
  if (header_len > size - 8)
    fail("header length", 0, std::to_string(header_len) + " exceeds the remaining " + std::to_string(size - 8) + " bytes");
  if (header_len > kMaxHeaderBytes)
    fail("header length", 0, std::to_string(header_len) + " exceeds the 100 MB limit for a header");
  if (header_len < 2 || data[8] != '{')
    fail("header", 8, "does not start with '{' (not a safetensors file?)");
  const char* json_begin = reinterpret_cast<const char*>(data + 8);
  // Nesting is bounded before parsing: a header nested tens of thousands deep
  // would otherwise exhaust the stack.
  check_json_depth(std::string_view(json_begin, size_t(header_len)), name + ": header (from byte 8)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(json_begin, json_begin + header_len);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1 within the JSON text.
    fail("header", 8 + (e.byte ? e.byte - 1 : 0), "invalid JSON: " + json_error_text(e));
  } catch (const nlohmann::json::exception& e) {
    fail("header", 8, "invalid JSON: " + json_error_text(e));
  }
  if (!header.is_object()) fail("header", 8, "is not a JSON object");

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size - data_start;
  const std::string where = "(JSON header, bytes 8 to " + std::to_string(data_start) + ")";

  // --- entries ---
  std::vector<Tensor> found;
  std::vector<uint64_t> begins;
  for (const auto& [key, entry] : header.items()) {
    if (key == "__metadata__") {
      if (!entry.is_object()) fail("header '__metadata__'", 8, "is not an object of strings " + where);
      for (const auto& [mk, mv] : entry.items()) {
        if (!mv.is_string()) fail("header '__metadata__' key " + single_quoted(excerpt(mk)), 8, "value is not a string " + where);
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string field = "tensor " + single_quoted(excerpt(key));
    auto bad = [&](const std::string& problem) { fail(field, 8, problem + " " + where); };
    if (!entry.is_object()) bad("entry is not an object");

    Tensor t;
    t.name = key;
    t.file = name;
    const auto dtype = entry.find("dtype");
    if (dtype == entry.end() || !dtype->is_string()) bad("has no \"dtype\" string");
    t.dtype = dtype->get<std::string>();
    const size_t elem_bytes = dtype_size(t.dtype);
    if (elem_bytes == 0) bad("dtype " + single_quoted(excerpt(t.dtype)) + " is unknown or unsupported");

    const auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array()) bad("has no \"shape\" array");
    // Bound the product of the dimensions (zeros counted as one) so that no
    // partial product a consumer computes can overflow.
    int64_t n = 1, bound = 1;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned()) bad("shape " + excerpt(shape->dump()) + " holds something other than a non-negative integer");
      const uint64_t v = d.get<uint64_t>();
      if (v > uint64_t(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(bound, std::max<int64_t>(int64_t(v), 1), &bound))
        bad("shape " + excerpt(shape->dump()) + ": element count overflows 64 bits");
      n *= int64_t(v);
      t.shape.push_back(int64_t(v));
    }
    int64_t expected_bytes;
    if (__builtin_mul_overflow(n, int64_t(elem_bytes), &expected_bytes))
      bad("shape " + excerpt(shape->dump()) + ": byte size overflows 64 bits");

    const auto offsets = entry.find("data_offsets");
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      bad("has no \"data_offsets\" pair of non-negative integers");
    const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
    if (begin > end) bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] run backwards");
    if (end > data_size)
      fail(field + " data", data_start + std::min(begin, data_size),
           "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] extend past end of file (data section holds " +
               std::to_string(data_size) + " bytes, file size " + std::to_string(size) + ")");
    if (end - begin != uint64_t(expected_bytes))
      fail(field + " data", data_start + begin,
           std::to_string(end - begin) + " bytes, but " + t.dtype + " shape " + excerpt(shape->dump()) + " needs " +
               std::to_string(expected_bytes));
    t.data = data + data_start + begin;
    t.nbytes = size_t(end - begin);
    found.push_back(std::move(t));
    begins.push_back(begin);
  }

  // --- placement: tensors must tile the data section without overlap or holes ---
  std::vector<size_t> order(found.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return begins[a] != begins[b] ? begins[a] < begins[b] : found[a].nbytes < found[b].nbytes;
  });
  uint64_t covered = 0;
  const Tensor* prev = nullptr;
  for (size_t k : order) {
    const Tensor& t = found[k];
    if (begins[k] < covered)
      fail("tensor " + single_quoted(t.name) + " data", data_start + begins[k],
           "overlaps tensor " + single_quoted(prev->name) + " (data bytes " + std::to_string(data_start + covered - prev->nbytes) +
               " to " + std::to_string(data_start + covered) + ")");
    if (begins[k] > covered)
      fail("tensor " + single_quoted(t.name) + " data", data_start + covered,
           "a gap of " + std::to_string(begins[k] - covered) + " bytes precedes this tensor's data");
    covered = begins[k] + t.nbytes;
    prev = &t;
  }
  if (covered != data_size)
    fail("data section", data_start + covered,
         std::to_string(data_size - covered) + " trailing bytes belong to no tensor");

  for (size_t k : order) {
    Tensor& t = found[k];
    if (index_.count(t.name))
      throw Error(name + ": tensor " + single_quoted(t.name) + " is also in " + tensors_[index_.at(t.name)].file);
    index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
}

const Tensor* Folder::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Folder Folder::from_memory(const uint8_t* data, size_t size, std::string name) {
  Folder f;
  f.add_file(data, size, name);
  return f;
}

}  // namespace ember::safetensors
