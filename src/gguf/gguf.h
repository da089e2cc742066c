// GGUF files (versions 2 and 3): a hardened reader over a memory mapping and a
// streaming writer.
//
// Every count, length, offset and size the reader takes from a file is checked
// against the file before use; a corrupt or hostile file yields an ember::Error
// naming the file, the field and the byte offset, never a crash or an
// allocation larger than the file could justify.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "quant/types.h"
#include "util/mapped_file.h"

namespace ember::gguf {

enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* value_type_name(ValueType t);

// One metadata value. Arrays may nest (an array of arrays).
struct Value {
  ValueType type = ValueType::U8;
  uint64_t u = 0;  // U8..U64 and BOOL
  int64_t i = 0;   // I8..I64
  double f = 0;    // F32, F64
  std::string s;   // STRING
  ValueType elem_type = ValueType::U8;  // ARRAY
  std::vector<Value> array;             // ARRAY

  static Value u8(uint8_t v), i8(int8_t v), u16(uint16_t v), i16(int16_t v), u32(uint32_t v), i32(int32_t v),
      u64(uint64_t v), i64(int64_t v), f32(float v), f64(double v), boolean(bool v), str(std::string v);
  static Value arr(ValueType elem, std::vector<Value> items);
  static Value str_array(const std::vector<std::string>& items);
  static Value f32_array(const std::vector<float>& items);
  static Value i32_array(const std::vector<int32_t>& items);

  bool is_integer() const;  // any integer type (not BOOL)
  bool is_number() const;   // integer or float
  // Conversions; throw ember::Error when the value has another type.
  int64_t as_int() const;
  double as_float() const;  // integers convert too
  bool as_bool() const;
  const std::string& as_string() const;
  std::string to_display(size_t max_items = 8) const;  // short human-readable form for `ember inspect`
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // dimensions, fastest-varying first (ne[0] is the row length)
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;            // relative to the start of the data section
  const uint8_t* data = nullptr;  // points into the mapping
  size_t nbytes = 0;
  int64_t n_elements() const;
  int64_t rows() const;  // product of ne[1..]
};

class Reader {
 public:
  // Throws ember::Error("<path>: <field> at byte <offset>: <problem>") on any defect.
  static Reader open(const std::string& path);
  // Parses a buffer the caller keeps alive (used by the fuzzer and tests).
  static Reader from_memory(const uint8_t* data, size_t size, std::string name);

  const std::string& path() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  size_t file_size() const { return size_; }

  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  // Typed lookups: the first form throws when the key is missing or has the wrong
  // type (naming file and key); the second returns `fallback` when missing.
  std::string get_string(std::string_view key) const;
  std::string get_string(std::string_view key, const std::string& fallback) const;
  int64_t get_int(std::string_view key) const;
  int64_t get_int(std::string_view key, int64_t fallback) const;
  double get_float(std::string_view key) const;
  double get_float(std::string_view key, double fallback) const;
  bool get_bool(std::string_view key, bool fallback) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
  void parse(const uint8_t* data, size_t size);
  std::shared_ptr<MappedFile> file_;
  std::string name_;
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> kv_index_;      // key -> index in kv_
  std::unordered_map<std::string, size_t> tensor_index_;  // name -> index in tensors_
};

// Streams a GGUF v3 file: declare metadata and tensors, then write each tensor's
// data in declaration order (so multi-gigabyte files never sit in memory).
class Writer {
 public:
  explicit Writer(uint64_t alignment = 32);
  ~Writer();
  void set(std::string key, Value v);  // replaces an earlier value of the same key
  // Declares a tensor; its byte size follows from type and shape.
  void add_tensor(std::string name, std::vector<int64_t> ne, GgmlType type);
  // Writes header, metadata and tensor infos. Throws ember::Error on I/O failure.
  void begin(const std::string& path);
  // Writes the next declared tensor's data (exactly its byte size), padded to the alignment.
  void write_tensor_data(const void* data, size_t nbytes);
  void finish();  // checks every declared tensor was written, flushes, closes

 private:
  struct Decl { std::string name; std::vector<int64_t> ne; GgmlType type; uint64_t nbytes; uint64_t offset; };
  uint64_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<Decl> tensors_;
  size_t next_ = 0;
  std::FILE* f_ = nullptr;
  std::string path_;
};

}  // namespace ember::gguf
