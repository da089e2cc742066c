// Builds GGUF files byte by byte from the format description, independently of
// gguf::Writer, so that the reader is tested against the format and not
// against our own writer. Little-endian throughout, as the format requires.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ember::gguf::test {

// Value type numbers as the format defines them.
enum Vt : uint32_t { U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
                     STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12 };

struct Bytes {
  std::vector<uint8_t> b;

  size_t pos() const { return b.size(); }

  template <class T>
  Bytes& put(T v) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    b.insert(b.end(), raw, raw + sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& raw(const std::string& s) {
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  // A GGUF string: uint64 byte length, then the bytes.
  Bytes& str(const std::string& s) { return u64(s.size()).raw(s); }
  Bytes& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
  Bytes& pad_to(size_t alignment) { return zeros((alignment - b.size() % alignment) % alignment); }

  // Header: magic, version, tensor count, kv count (64-bit counts, versions 2 and 3).
  Bytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  // Key and value type; the caller appends the value.
  Bytes& key(const std::string& k, uint32_t type) { return str(k).u32(type); }
  // A tensor info: name, n_dims, dims, type, offset.
  Bytes& tensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset) {
    str(name).u32(uint32_t(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
};

}  // namespace ember::gguf::test
