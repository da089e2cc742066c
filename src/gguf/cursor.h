// A bounds-checked read position over an untrusted byte buffer. Every read
// names the field it reads so that a defect is reported as
//   "<file>: <field> at byte <offset>: <problem>".
// Field names are built lazily (a callable returning std::string) so that the
// common, successful path never formats text.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "util/error.h"

namespace ember::gguf::detail {

static_assert(std::endian::native == std::endian::little, "GGUF reading assumes a little-endian host");

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& name) : data_(data), size_(size), name_(name) {}

  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }
  const std::string& name() const { return name_; }

  [[noreturn]] void fail(const std::string& field, size_t at, const std::string& problem) const {
    throw Error(name_ + ": " + field + " at byte " + std::to_string(at) + ": " + problem);
  }

  // Reads a little-endian scalar of type T.
  template <class T, class Field>
  T read(const Field& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // Reads a GGUF string: uint64 length, then that many bytes (no terminator).
  template <class Field>
  std::string read_string(const Field& field) {
    return std::string(read_string_view(field));
  }
  template <class Field>
  std::string_view read_string_view(const Field& field) {
    const size_t at = pos_;
    const uint64_t len = read<uint64_t>([&] { return field() + " length"; });
    if (len > remaining())
      fail(field() + " length", at,
           std::to_string(len) + " exceeds remaining " + std::to_string(remaining()) + " bytes");
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), size_t(len));
    pos_ += size_t(len);
    return s;
  }

 private:
  template <class Field>
  void need(size_t n, const Field& field) const {
    if (n > remaining())
      fail(field(), pos_,
           "needs " + std::to_string(n) + " bytes but only " + std::to_string(remaining()) +
               " remain (file truncated?)");
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

}  // namespace ember::gguf::detail
