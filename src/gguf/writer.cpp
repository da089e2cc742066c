// gguf::Writer: streams a GGUF v3 file. Everything but the tensor data is
// known up front (names, shapes, types), so the header, metadata and tensor
// infos are written by begin(); tensor data then follows one tensor at a time.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "gguf/gguf.h"
#include "util/error.h"

namespace ember::gguf {

namespace {

constexpr uint32_t kVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Serialises into a byte buffer; begin() writes the buffer in one go.
struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  void put(T v) {
    const size_t n = b.size();
    b.resize(n + sizeof(T));
    std::memcpy(b.data() + n, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
  }
};

void put_value(Bytes& out, const Value& v, const std::string& key) {
  switch (v.type) {
    case ValueType::U8: out.put<uint8_t>(uint8_t(v.u)); break;
    case ValueType::I8: out.put<int8_t>(int8_t(v.i)); break;
    case ValueType::U16: out.put<uint16_t>(uint16_t(v.u)); break;
    case ValueType::I16: out.put<int16_t>(int16_t(v.i)); break;
    case ValueType::U32: out.put<uint32_t>(uint32_t(v.u)); break;
    case ValueType::I32: out.put<int32_t>(int32_t(v.i)); break;
    case ValueType::U64: out.put<uint64_t>(v.u); break;
    case ValueType::I64: out.put<int64_t>(v.i); break;
    case ValueType::F32: out.put<float>(float(v.f)); break;
    case ValueType::F64: out.put<double>(v.f); break;
    case ValueType::BOOL: out.put<uint8_t>(v.u ? 1 : 0); break;
    case ValueType::STRING: out.put_string(v.s); break;
    case ValueType::ARRAY:
      out.put<uint32_t>(uint32_t(v.elem_type));
      out.put<uint64_t>(v.array.size());
      for (const Value& e : v.array) {
        // Value::arr checks this, but a Value can also be assembled by hand.
        if (e.type != v.elem_type)
          throw Error("gguf writer: metadata '" + key + "': array of " + value_type_name(v.elem_type) +
                      " holds an element of type " + value_type_name(e.type));
        put_value(out, e, key);
      }
      break;
    default:
      throw Error("gguf writer: metadata '" + key + "': unknown value type " + std::to_string(uint32_t(v.type)));
  }
}

}  // namespace

Writer::Writer(uint64_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (uint64_t(1) << 30))
    throw Error("gguf writer: alignment " + std::to_string(alignment) + " is not a power of two between 1 and 2^30");
  if (alignment != kDefaultAlignment) set("general.alignment", Value::u32(uint32_t(alignment)));
}

Writer::~Writer() {
  if (f_) std::fclose(f_);  // an unfinished file is left incomplete; finish() was never reached
}

void Writer::set(std::string key, Value v) {
  if (f_) throw Error("gguf writer: set('" + key + "') after begin()");
  if (key == "general.alignment" && !(v.is_integer() && v.as_int() == int64_t(alignment_)))
    throw Error("gguf writer: general.alignment must equal the writer's alignment " + std::to_string(alignment_) +
                " (pass it to the constructor instead)");
  for (auto& [k, old] : kv_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  kv_.emplace_back(std::move(key), std::move(v));
}

void Writer::add_tensor(std::string name, std::vector<int64_t> ne, GgmlType type) {
  if (f_) throw Error("gguf writer: add_tensor('" + name + "') after begin()");
  const TypeInfo info = type_info(type);
  if (!info.known) throw Error("gguf writer: tensor '" + name + "': unknown type id " + std::to_string(uint32_t(type)));
  if (ne.empty() || ne.size() > 4)
    throw Error("gguf writer: tensor '" + name + "': " + std::to_string(ne.size()) + " dimensions (need 1 to 4)");
  int64_t n = 1;
  for (int64_t d : ne) {
    if (d < 0) throw Error("gguf writer: tensor '" + name + "': negative dimension " + std::to_string(d));
    if (__builtin_mul_overflow(n, d, &n)) throw Error("gguf writer: tensor '" + name + "': element count overflows");
  }
  if (ne[0] % info.block_elems != 0)
    throw Error("gguf writer: tensor '" + name + "': row length " + std::to_string(ne[0]) + " is not a multiple of the " +
                info.name + " block size " + std::to_string(info.block_elems));
  for (const Decl& d : tensors_)
    if (d.name == name) throw Error("gguf writer: duplicate tensor name '" + name + "'");
  int64_t nbytes;
  if (__builtin_mul_overflow(n / info.block_elems, int64_t(info.block_bytes), &nbytes))
    throw Error("gguf writer: tensor '" + name + "': byte size overflows");
  const uint64_t offset =
      tensors_.empty() ? 0 : align_up(tensors_.back().offset + tensors_.back().nbytes, alignment_);
  tensors_.push_back(Decl{std::move(name), std::move(ne), type, uint64_t(nbytes), offset});
}

void Writer::begin(const std::string& path) {
  if (f_) throw Error("gguf writer: begin() called twice");
  Bytes out;
  out.b = {'G', 'G', 'U', 'F'};
  out.put<uint32_t>(kVersion);
  out.put<uint64_t>(tensors_.size());
  out.put<uint64_t>(kv_.size());
  for (const auto& [key, v] : kv_) {
    out.put_string(key);
    out.put<uint32_t>(uint32_t(v.type));
    put_value(out, v, key);
  }
  for (const Decl& d : tensors_) {
    out.put_string(d.name);
    out.put<uint32_t>(uint32_t(d.ne.size()));
    for (int64_t x : d.ne) out.put<uint64_t>(uint64_t(x));
    out.put<uint32_t>(uint32_t(d.type));
    out.put<uint64_t>(d.offset);
  }
  out.b.resize(align_up(out.b.size(), alignment_), 0);

  path_ = path;
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) throw Error(path + ": cannot create: " + std::strerror(errno));
  if (std::fwrite(out.b.data(), 1, out.b.size(), f_) != out.b.size())
    throw Error(path + ": write failed: " + std::strerror(errno));
  next_ = 0;
}

void Writer::write_tensor_data(const void* data, size_t nbytes) {
  if (!f_) throw Error("gguf writer: write_tensor_data() before begin()");
  if (next_ >= tensors_.size())
    throw Error(path_ + ": write_tensor_data(): all " + std::to_string(tensors_.size()) + " tensors already written");
  const Decl& d = tensors_[next_];
  if (nbytes != d.nbytes)
    throw Error(path_ + ": tensor '" + d.name + "': got " + std::to_string(nbytes) + " bytes of data, its " +
                type_name(d.type) + " shape needs " + std::to_string(d.nbytes));
  if (nbytes && std::fwrite(data, 1, nbytes, f_) != nbytes)
    throw Error(path_ + ": tensor '" + d.name + "': write failed: " + std::strerror(errno));
  // Pad so that the next tensor starts at its declared (aligned) offset.
  static const uint8_t zeros[256] = {};
  uint64_t pad = align_up(d.nbytes, alignment_) - d.nbytes;
  while (pad > 0) {
    const size_t n = size_t(std::min<uint64_t>(pad, sizeof zeros));
    if (std::fwrite(zeros, 1, n, f_) != n) throw Error(path_ + ": write failed: " + std::strerror(errno));
    pad -= n;
  }
  ++next_;
}

void Writer::finish() {
  if (!f_) throw Error("gguf writer: finish() before begin()");
  if (next_ != tensors_.size())
    throw Error(path_ + ": finish(): only " + std::to_string(next_) + " of " + std::to_string(tensors_.size()) +
                " tensors were written (next: '" + tensors_[next_].name + "')");
  std::FILE* f = f_;
  f_ = nullptr;
  const bool flushed = std::fflush(f) == 0;
  const int e = errno;
  if (std::fclose(f) != 0 || !flushed) throw Error(path_ + ": write failed on close: " + std::strerror(e));
}

}  // namespace ember::gguf
