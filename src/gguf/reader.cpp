// gguf::Reader: parses the header, metadata and tensor infos of a GGUF file
// (versions 2 and 3) and points each tensor at its bytes in the mapping.
//
// The file is untrusted. Before anything is allocated for a count or length,
// the count is checked against the bytes left in the file (each element of
// every kind needs a known minimum number of bytes), so a hostile header can
// never make us allocate more than the file itself could hold.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <cstring>
#include <limits>

#include "gguf/cursor.h"
#include "gguf/gguf.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/limits.h"
#include "util/quote.h"

namespace ember::gguf {

namespace {

using detail::Cursor;

constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS in the format
constexpr int kMaxArrayNesting = 16;     // arrays of arrays deeper than this are surely corrupt
constexpr uint64_t kDefaultAlignment = 32;

// Smallest encoding of one tensor info: name length (8) + empty name + n_dims (4)
// + one dimension (8) + type (4) + offset (8).
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Smallest encoding of one key/value: key length (8) + empty key + type (4) + 1-byte value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;

bool known_value_type(uint32_t t) { return t <= uint32_t(ValueType::F64); }

// Memory parsed metadata may take: a fixed allowance plus 16 bytes per byte of
// the file. A parsed value takes sizeof(Value) (~100 bytes) however few bytes
// it has in the file (one for an element of a u8 array), so without this a
// 4 MB file of byte arrays expanded into 400 MB.
constexpr uint64_t kMetadataMemoryAllowance = uint64_t(32) << 20;
constexpr uint64_t kMetadataMemoryPerFileByte = 16;

uint64_t metadata_value_budget(uint64_t file_bytes) {
  const uint64_t memory = kMetadataMemoryAllowance + kMetadataMemoryPerFileByte * std::min<uint64_t>(file_bytes, uint64_t(1) << 50);
  return std::min<uint64_t>(limits::kMaxGgufMetadataValues, memory / sizeof(Value));
}

// Bytes that one element of type t occupies at the least.
uint64_t min_value_bytes(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    case ValueType::STRING: return 8;      // the length field
    case ValueType::ARRAY: return 4 + 8;   // element type + length
  }
  return 1;
}

// Names a metadata value for error messages: "metadata 'key'" or, inside
// arrays, "metadata 'key' element #3 #0". Indices are pushed and popped while
// parsing; the text is only built when something fails.
struct ValuePath {
  const std::string& key;
  std::vector<uint64_t> index;
  // Values still allowed in the whole metadata section (metadata_value_budget).
  uint64_t* budget;
  uint64_t budget_total;
  std::string str() const {
    std::string out = "metadata " + single_quoted(excerpt(key));
    if (!index.empty()) {
      out += " element";
      for (uint64_t i : index) out += " #" + std::to_string(i);
    }
    return out;
  }
};

Value read_value(Cursor& c, ValueType t, ValuePath& path, int depth);

ValueType read_value_type(Cursor& c, const std::function<std::string()>& field) {
  const size_t at = c.pos();
  const uint32_t raw = c.read<uint32_t>(field);
  if (!known_value_type(raw)) c.fail(field(), at, "unknown value type " + std::to_string(raw));
  return static_cast<ValueType>(raw);
}

Value read_array(Cursor& c, ValuePath& path, int depth) {
  if (depth >= kMaxArrayNesting)
    c.fail(path.str(), c.pos(), "arrays nested more than " + std::to_string(kMaxArrayNesting) + " deep");
  Value v;
  v.type = ValueType::ARRAY;
  v.elem_type = read_value_type(c, [&] { return path.str() + " array element type"; });
  const size_t at = c.pos();
  const uint64_t n = c.read<uint64_t>([&] { return path.str() + " array length"; });
  const uint64_t min_bytes = min_value_bytes(v.elem_type);
  if (n > c.remaining() / min_bytes)
    c.fail(path.str() + " array length", at,
           std::to_string(n) + " elements of " + value_type_name(v.elem_type) + " (at least " +
               std::to_string(min_bytes) + " bytes each) exceed the remaining " + std::to_string(c.remaining()) +
               " bytes");
  if (n > *path.budget)
    c.fail(path.str() + " array length", at,
           std::to_string(n) + " elements exceed what is left of this file's limit of " +
               std::to_string(path.budget_total) + " metadata values (at most " +
               std::to_string(limits::kMaxGgufMetadataValues) + "; fewer for a file under " +
               std::to_string(limits::kMaxGgufMetadataValues * sizeof(Value) / kMetadataMemoryPerFileByte >> 20) +
               " MB, as each takes ~100 bytes of memory)");
  *path.budget -= n;
  v.array.reserve(size_t(n));
  path.index.push_back(0);
  for (uint64_t k = 0; k < n; ++k) {
    path.index.back() = k;
    v.array.push_back(read_value(c, v.elem_type, path, depth + 1));
  }
  path.index.pop_back();
  return v;
}

Value read_value(Cursor& c, ValueType t, ValuePath& path, int depth) {
  auto field = [&] { return path.str(); };
  switch (t) {
    case ValueType::U8: return Value::u8(c.read<uint8_t>(field));
    case ValueType::I8: return Value::i8(c.read<int8_t>(field));
    case ValueType::U16: return Value::u16(c.read<uint16_t>(field));
    case ValueType::I16: return Value::i16(c.read<int16_t>(field));
    case ValueType::U32: return Value::u32(c.read<uint32_t>(field));
    case ValueType::I32: return Value::i32(c.read<int32_t>(field));
    case ValueType::U64: return Value::u64(c.read<uint64_t>(field));
    case ValueType::I64: return Value::i64(c.read<int64_t>(field));
    case ValueType::F32: return Value::f32(c.read<float>(field));
    case ValueType::F64: return Value::f64(c.read<double>(field));
    case ValueType::BOOL: {
      const size_t at = c.pos();
      const uint8_t b = c.read<uint8_t>(field);
      if (b > 1) c.fail(path.str(), at, "bool value " + std::to_string(b) + " is neither 0 nor 1");
      return Value::boolean(b != 0);
    }
    case ValueType::STRING: return Value::str(c.read_string([&] { return path.str() + " string"; }));
    case ValueType::ARRAY: return read_array(c, path, depth);
  }
  c.fail(path.str(), c.pos(), "unknown value type");
}


}  // namespace

Reader Reader::open(const std::string& path) {
  Reader r;
  r.file_ = std::make_shared<MappedFile>(path);
  r.name_ = path;
  r.parse(r.file_->data(), r.file_->size());
  return r;
}

Reader Reader::from_memory(const uint8_t* data, size_t size, std::string name) {
  Reader r;
  r.name_ = std::move(name);
  r.parse(data, size);
  return r;
}

void Reader::parse(const uint8_t* data, size_t size) {
  size_ = size;
  Cursor c(data, size, name_);

  // --- header ---
  if (size < 4) c.fail("magic", 0, "file is " + std::to_string(size) + " bytes, too short for a GGUF header");
  if (std::memcmp(data, "GGUF", 4) != 0) {
    char found[32];
    std::snprintf(found, sizeof found, "%02x %02x %02x %02x", data[0], data[1], data[2], data[3]);
    c.fail("magic", 0, std::string("expected \"GGUF\" (47 47 55 46), found ") + found + " (not a GGUF file)");
  }
  c.read<uint32_t>([] { return std::string("magic"); });
  const size_t version_at = c.pos();
  version_ = c.read<uint32_t>([] { return std::string("version"); });
  if (version_ == 1)
    c.fail("version", version_at, "version 1 (32-bit counts) is not supported; only versions 2 and 3 are");
  if (version_ == 0x02000000u || version_ == 0x03000000u)
    c.fail("version", version_at, "file is big-endian; only little-endian GGUF files are supported");
  if (version_ != 2 && version_ != 3)
    c.fail("version", version_at, "unsupported version " + std::to_string(version_) + " (supported: 2, 3)");

  const size_t tensor_count_at = c.pos();
  const uint64_t n_tensors = c.read<uint64_t>([] { return std::string("tensor count"); });
  const size_t kv_count_at = c.pos();
  const uint64_t n_kv = c.read<uint64_t>([] { return std::string("metadata kv count"); });
  if (n_tensors > c.remaining() / kMinTensorInfoBytes)
    c.fail("tensor count", tensor_count_at,
           std::to_string(n_tensors) + " tensors cannot fit in the remaining " + std::to_string(c.remaining()) +
               " bytes (each tensor info needs at least " + std::to_string(kMinTensorInfoBytes) + ")");
  if (n_kv > (c.remaining() - n_tensors * kMinTensorInfoBytes) / kMinKvBytes)
    c.fail("metadata kv count", kv_count_at,
           std::to_string(n_kv) + " key/value pairs cannot fit in the remaining " + std::to_string(c.remaining()) +
               " bytes (each needs at least " + std::to_string(kMinKvBytes) + ")");

  // --- metadata ---
  kv_.reserve(size_t(n_kv));
  size_t alignment_value_at = 0;
  const uint64_t value_budget_total = metadata_value_budget(size);
  uint64_t value_budget = value_budget_total;
  for (uint64_t k = 0; k < n_kv; ++k) {
    const size_t key_at = c.pos();
    const std::string key_field = "metadata key #" + std::to_string(k);
    std::string key = c.read_string([&] { return key_field + " string"; });
    if (kv_index_.count(key)) c.fail(key_field, key_at, "duplicate key " + single_quoted(excerpt(key)));
    ValuePath path{key, {}, &value_budget, value_budget_total};
    const ValueType t = read_value_type(c, [&] { return path.str() + " value type"; });
    if (key == "general.alignment") alignment_value_at = c.pos();
    Value v = read_value(c, t, path, 0);
    kv_index_.emplace(key, kv_.size());
    kv_.emplace_back(std::move(key), std::move(v));
  }

  alignment_ = kDefaultAlignment;
  if (const Value* a = find("general.alignment")) {
    const std::string field = "metadata 'general.alignment'";
    if (!a->is_integer())
      c.fail(field, alignment_value_at, std::string("has type ") + value_type_name(a->type) + ", expected u32");
    const bool negative = a->type == ValueType::I8 || a->type == ValueType::I16 || a->type == ValueType::I32 ||
                          a->type == ValueType::I64;
    const uint64_t al = negative ? (a->i < 0 ? 0 : uint64_t(a->i)) : a->u;
    // Capped at 2^30 so that rounding an offset up can never overflow.
    if (al == 0 || (al & (al - 1)) != 0 || al > (uint64_t(1) << 30))
      c.fail(field, alignment_value_at,
             "alignment " + a->to_display() + " is not a power of two between 1 and 2^30");
    alignment_ = al;
  }

  // --- tensor infos ---
  tensors_.reserve(size_t(n_tensors));
  std::vector<size_t> offset_at(static_cast<size_t>(n_tensors), 0);
  for (uint64_t t = 0; t < n_tensors; ++t) {
    TensorInfo ti;
    const size_t name_at = c.pos();
    ti.name = c.read_string([&] { return "tensor #" + std::to_string(t) + " name"; });
    if (tensor_index_.count(ti.name))
      c.fail("tensor #" + std::to_string(t) + " name", name_at, "duplicate tensor name " + single_quoted(excerpt(ti.name)));
    const std::string tname = "tensor " + single_quoted(excerpt(ti.name));

    const size_t dims_at = c.pos();
    const uint32_t n_dims = c.read<uint32_t>([&] { return tname + " dimension count"; });
    if (n_dims == 0 || n_dims > kMaxDims)
      c.fail(tname + " dimension count", dims_at,
             std::to_string(n_dims) + " dimensions (a tensor has 1 to " + std::to_string(kMaxDims) + ")");
    // Zero-size dimensions are allowed, so the element count alone could hide an
    // overflowing product of the others (which rows() would compute): bound the
    // product with each zero counted as one as well.
    int64_t n_elements = 1, bound = 1;
    size_t ne0_at = c.pos();
    for (uint32_t d = 0; d < n_dims; ++d) {
      const size_t at = c.pos();
      const std::string dfield = tname + " ne[" + std::to_string(d) + "]";
      const uint64_t v = c.read<uint64_t>([&] { return dfield; });
      if (v > uint64_t(std::numeric_limits<int64_t>::max()))
        c.fail(dfield, at, "dimension " + std::to_string(v) + " is negative or too large");
      const auto prod = checked_mul(bound, std::max<int64_t>(int64_t(v), 1));
      if (!prod) c.fail(dfield, at, "element count (product of dimensions) overflows 64 bits");
      bound = *prod;
      n_elements *= int64_t(v);
      ti.ne.push_back(int64_t(v));
    }

    const size_t type_at = c.pos();
    const uint32_t raw_type = c.read<uint32_t>([&] { return tname + " type"; });
    const TypeInfo info = type_info(raw_type);
    if (!info.known) c.fail(tname + " type", type_at, "unknown tensor type id " + std::to_string(raw_type));
    ti.type = static_cast<GgmlType>(raw_type);
    if (ti.ne[0] % info.block_elems != 0)
      c.fail(tname + " ne[0]", ne0_at,
             "row length " + std::to_string(ti.ne[0]) + " is not a multiple of the " + info.name + " block size " +
                 std::to_string(info.block_elems));
    const auto nbytes = checked_mul(n_elements / info.block_elems, int64_t(info.block_bytes));
    if (!nbytes || uint64_t(*nbytes) > size)
      c.fail(tname + " type", type_at,
             "a " + std::string(info.name) + " tensor of " + std::to_string(n_elements) +
                 " elements is larger than the whole file (" + std::to_string(size) + " bytes)");
    ti.nbytes = size_t(*nbytes);

    offset_at[t] = c.pos();
    ti.offset = c.read<uint64_t>([&] { return tname + " offset"; });
    if (ti.offset % alignment_ != 0)
      c.fail(tname + " offset", offset_at[t],
             "offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
                 std::to_string(alignment_));

    tensor_index_.emplace(ti.name, tensors_.size());
    tensors_.push_back(std::move(ti));
  }

  // --- data section: starts at the aligned end of the tensor infos ---
  data_offset_ = (uint64_t(c.pos()) + alignment_ - 1) / alignment_ * alignment_;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    TensorInfo& ti = tensors_[t];
    const std::string field = "tensor " + single_quoted(excerpt(ti.name)) + " data";
    if (ti.offset > size || data_offset_ > size - ti.offset)
      c.fail(field, offset_at[t],
             "offset " + std::to_string(ti.offset) + " starts past end of file (data section at byte " +
                 std::to_string(data_offset_) + ", file size " + std::to_string(size) + ")");
    const uint64_t begin = data_offset_ + ti.offset;
    if (ti.nbytes > size - begin)
      c.fail(field, begin,
             std::to_string(ti.nbytes) + " bytes extend past end of file (size " + std::to_string(size) + ")");
    ti.data = data + begin;
  }

  // Tensors may be stored in any order, but two of them must never share bytes.
  std::vector<size_t> order(tensors_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  const TensorInfo* prev = nullptr;
  for (size_t k : order) {
    const TensorInfo& ti = tensors_[k];
    if (ti.nbytes == 0) continue;
    if (prev && prev->offset + prev->nbytes > ti.offset)
      c.fail("tensor " + single_quoted(excerpt(ti.name)) + " data", data_offset_ + ti.offset,
             "overlaps tensor " + single_quoted(excerpt(prev->name)) + " (data bytes " + std::to_string(data_offset_ + prev->offset) +
                 " to " + std::to_string(data_offset_ + prev->offset + prev->nbytes) + ")");
    prev = &ti;
  }
}

// --- lookups ---

const Value* Reader::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorInfo* Reader::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
// Runs a typed conversion, prefixing its error with the file and key.
template <class F>
auto converted(const std::string& file, std::string_view key, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(file + ": metadata key '" + std::string(key) + "': " + e.what());
  }
}
}  // namespace

#define EMBER_GGUF_REQUIRE(key)                                                              \
  const Value* v = find(key);                                                                \
  if (!v) throw Error(name_ + ": metadata key '" + std::string(key) + "' is missing")

std::string Reader::get_string(std::string_view key) const {
  EMBER_GGUF_REQUIRE(key);
  return converted(name_, key, [&] { return v->as_string(); });
}
std::string Reader::get_string(std::string_view key, const std::string& fallback) const {
  const Value* v = find(key);
  return v ? converted(name_, key, [&] { return v->as_string(); }) : fallback;
}
int64_t Reader::get_int(std::string_view key) const {
  EMBER_GGUF_REQUIRE(key);
  return converted(name_, key, [&] { return v->as_int(); });
}
int64_t Reader::get_int(std::string_view key, int64_t fallback) const {
  const Value* v = find(key);
  return v ? converted(name_, key, [&] { return v->as_int(); }) : fallback;
}
double Reader::get_float(std::string_view key) const {
  EMBER_GGUF_REQUIRE(key);
  return converted(name_, key, [&] { return v->as_float(); });
}
double Reader::get_float(std::string_view key, double fallback) const {
  const Value* v = find(key);
  return v ? converted(name_, key, [&] { return v->as_float(); }) : fallback;
}
bool Reader::get_bool(std::string_view key, bool fallback) const {
  const Value* v = find(key);
  return v ? converted(name_, key, [&] { return v->as_bool(); }) : fallback;
}

namespace {
const Value& require_array(const Value& v) {
  if (v.type != ValueType::ARRAY)
    throw Error(std::string("value has type ") + value_type_name(v.type) + ", expected an array");
  return v;
}
}  // namespace

std::vector<std::string> Reader::get_string_array(std::string_view key) const {
  EMBER_GGUF_REQUIRE(key);
  return converted(name_, key, [&] {
    std::vector<std::string> out;
    out.reserve(require_array(*v).array.size());
    for (const Value& e : v->array) out.push_back(e.as_string());
    return out;
  });
}
std::vector<float> Reader::get_float_array(std::string_view key) const {
  EMBER_GGUF_REQUIRE(key);
  return converted(name_, key, [&] {
    std::vector<float> out;
    out.reserve(require_array(*v).array.size());
    for (const Value& e : v->array) out.push_back(float(e.as_float()));
    return out;
  });
}
std::vector<int64_t> Reader::get_int_array(std::string_view key) const {
  EMBER_GGUF_REQUIRE(key);
  return converted(name_, key, [&] {
    std::vector<int64_t> out;
    out.reserve(require_array(*v).array.size());
    for (const Value& e : v->array) out.push_back(e.as_int());
    return out;
  });
}
#undef EMBER_GGUF_REQUIRE

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

int64_t TensorInfo::rows() const {
  int64_t n = 1;
  for (size_t d = 1; d < ne.size(); ++d) n *= ne[d];
  return n;
}

}  // namespace ember::gguf
