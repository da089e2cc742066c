// gguf::Value: construction helpers, typed conversions and display.
#include <cmath>
#include <cstdio>
#include <limits>

#include "gguf/gguf.h"
#include "util/error.h"

namespace ember::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown";
}

namespace {
Value unsigned_value(ValueType t, uint64_t v) {
  Value x;
  x.type = t;
  x.u = v;
  return x;
}
Value signed_value(ValueType t, int64_t v) {
  Value x;
  x.type = t;
  x.i = v;
  return x;
}
Value float_value(ValueType t, double v) {
  Value x;
  x.type = t;
  x.f = v;
  return x;
}
bool is_unsigned(ValueType t) {
  return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}
bool is_signed(ValueType t) {
  return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}
[[noreturn]] void wrong_type(const Value& v, const char* wanted) {
  throw Error(std::string("value has type ") + value_type_name(v.type) + ", expected " + wanted);
}
}  // namespace

Value Value::u8(uint8_t v) { return unsigned_value(ValueType::U8, v); }
Value Value::u16(uint16_t v) { return unsigned_value(ValueType::U16, v); }
Value Value::u32(uint32_t v) { return unsigned_value(ValueType::U32, v); }
Value Value::u64(uint64_t v) { return unsigned_value(ValueType::U64, v); }
Value Value::boolean(bool v) { return unsigned_value(ValueType::BOOL, v ? 1 : 0); }
Value Value::i8(int8_t v) { return signed_value(ValueType::I8, v); }
Value Value::i16(int16_t v) { return signed_value(ValueType::I16, v); }
Value Value::i32(int32_t v) { return signed_value(ValueType::I32, v); }
Value Value::i64(int64_t v) { return signed_value(ValueType::I64, v); }
Value Value::f32(float v) { return float_value(ValueType::F32, v); }
Value Value::f64(double v) { return float_value(ValueType::F64, v); }

Value Value::str(std::string v) {
  Value x;
  x.type = ValueType::STRING;
  x.s = std::move(v);
  return x;
}

Value Value::arr(ValueType elem, std::vector<Value> items) {
  for (size_t k = 0; k < items.size(); ++k)
    if (items[k].type != elem)
      throw Error("array element #" + std::to_string(k) + " has type " + value_type_name(items[k].type) +
                  ", but the array holds " + value_type_name(elem));
  Value x;
  x.type = ValueType::ARRAY;
  x.elem_type = elem;
  x.array = std::move(items);
  return x;
}

Value Value::str_array(const std::vector<std::string>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(str(s));
  return arr(ValueType::STRING, std::move(v));
}

Value Value::f32_array(const std::vector<float>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (float f : items) v.push_back(f32(f));
  return arr(ValueType::F32, std::move(v));
}

Value Value::i32_array(const std::vector<int32_t>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (int32_t i : items) v.push_back(i32(i));
  return arr(ValueType::I32, std::move(v));
}

bool Value::is_integer() const { return is_unsigned(type) || is_signed(type); }
bool Value::is_number() const { return is_integer() || type == ValueType::F32 || type == ValueType::F64; }

int64_t Value::as_int() const {
  if (is_signed(type)) return i;
  if (is_unsigned(type)) {
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      throw Error("value " + std::to_string(u) + " does not fit a signed 64-bit integer");
    return int64_t(u);
  }
  wrong_type(*this, "an integer");
}

double Value::as_float() const {
  if (type == ValueType::F32 || type == ValueType::F64) return f;
  if (is_signed(type)) return double(i);
  if (is_unsigned(type)) return double(u);
  wrong_type(*this, "a number");
}

bool Value::as_bool() const {
  if (type != ValueType::BOOL) wrong_type(*this, "bool");
  return u != 0;
}

const std::string& Value::as_string() const {
  if (type != ValueType::STRING) wrong_type(*this, "string");
  return s;
}

std::string Value::to_display(size_t max_items) const {
  switch (type) {
    case ValueType::U8: case ValueType::U16: case ValueType::U32: case ValueType::U64:
      return std::to_string(u);
    case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64:
      return std::to_string(i);
    case ValueType::F32: case ValueType::F64: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", f);
      return buf;
    }
    case ValueType::BOOL: return u ? "true" : "false";
    case ValueType::STRING: {
      // Keep one-line output: long strings are cut, control characters escaped.
      std::string out = "\"";
      const size_t limit = 80;
      for (size_t k = 0; k < s.size() && k < limit; ++k) {
        const unsigned char c = static_cast<unsigned char>(s[k]);
        if (c == '\n') out += "\\n";
        else if (c == '"' || c == '\\') { out += '\\'; out += char(c); }
        else if (c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\x%02x", c); out += b; }
        else out += char(c);
      }
      if (s.size() > limit) out += "...";
      return out + "\"";
    }
    case ValueType::ARRAY: {
      std::string out = "[";
      for (size_t k = 0; k < array.size() && k < max_items; ++k) {
        if (k) out += ", ";
        out += array[k].to_display(max_items);
      }
      if (array.size() > max_items) out += ", ... (" + std::to_string(array.size()) + " items)";
      return out + "]";
    }
  }
  return "?";
}

}  // namespace ember::gguf
