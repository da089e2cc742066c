#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/json_text.h"
#include "chat/text.h"
#include "util/error.h"

namespace ember::chat {

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries)
    if (k == key) {
      v = std::move(value);
      return;
    }
  entries.emplace_back(key, std::move(value));
}

const Value* CallArgs::keyword_arg(const std::string& name) const {
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::List:
    case Kind::Tuple: return std::get<std::shared_ptr<List>>(data_).get();
    case Kind::Dict:
    case Kind::Namespace: return std::get<std::shared_ptr<Dict>>(data_).get();
    case Kind::Function: return std::get<std::shared_ptr<Callable>>(data_).get();
    default: return nullptr;
  }
}

int Value::container_depth(const Value& v) {
  int deepest = 0;
  if (v.is_list_like()) {
    for (const Value& e : v.as_list()) deepest = std::max(deepest, int(e.depth_));
  } else {
    for (const auto& [k, e] : v.as_dict().entries) deepest = std::max(deepest, int(e.depth_));
  }
  if (deepest + 1 > kMaxDepth)
    throw Error("template error: lists and dicts nest deeper than " + std::to_string(kMaxDepth) + " levels");
  return deepest + 1;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return as_float() != 0 && !std::isnan(as_float());
    case Kind::String: return !as_string().empty();
    case Kind::List:
    case Kind::Tuple: return !as_list().empty();
    case Kind::Dict: return !as_dict().entries.empty();
    case Kind::Namespace:  // the reference never overrides truthiness of namespaces
    case Kind::Function: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "UndefinedValue";
    case Kind::None: return "NullValue";
    case Kind::Bool: return "BooleanValue";
    case Kind::Int: return "IntegerValue";
    case Kind::Float: return "FloatValue";
    case Kind::String: return "StringValue";
    case Kind::List: return "ArrayValue";
    case Kind::Tuple: return "TupleValue";
    case Kind::Dict: return "ObjectValue";
    case Kind::Namespace: return "NamespaceValue";
    case Kind::Function: return "FunctionValue";
  }
  return "?";
}

std::string js_number_to_string(double x) {
  if (std::isnan(x)) return "NaN";
  if (x == 0) return "0";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x < 0) return "-" + js_number_to_string(-x);
  // Shortest digits that round-trip, then ECMAScript's layout rules for Number::toString.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e_pos; ++i)
    if (sci[i] != '.') digits += sci[i];
  int n = std::atoi(sci.c_str() + e_pos + 1) + 1;  // value = 0.digits * 10^n
  int k = int(digits.size());
  if (k <= n && n <= 21) return digits + std::string(size_t(n - k), '0');
  if (0 < n && n <= 21) return digits.substr(0, size_t(n)) + "." + digits.substr(size_t(n));
  if (-6 < n && n <= 0) return "0." + std::string(size_t(-n), '0') + digits;
  int e = n - 1;
  std::string mant = digits.substr(0, 1) + (k > 1 ? "." + digits.substr(1) : "");
  return mant + "e" + (e >= 0 ? "+" : "-") + std::to_string(std::abs(e));
}

static std::string float_output_string(double f) {
  if (f == 0 && std::signbit(f)) return "-0.0";
  if (std::isfinite(f) && std::floor(f) == f && std::fabs(f) < 1e21) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", f);
    return buf;
  }
  return js_number_to_string(f);
}

std::string to_output_string(const Value& v, size_t max_bytes) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::Undefined: return "undefined";
    case K::None: return "null";
    case K::Bool: return v.as_bool() ? "true" : "false";
    case K::Int: return std::to_string(v.as_int());
    case K::Float: return float_output_string(v.as_float());
    case K::String: return v.as_string();
    case K::Function: throw Error("cannot print function '" + v.as_function().name + "' as text");
    default: {
      JsonOptions o;
      o.max_bytes = max_bytes;
      return to_json(v, o, false);
    }
  }
}

std::string to_concat_string(const Value& v, size_t max_bytes) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::Float: return js_number_to_string(v.as_float());
    case K::List:
    case K::Tuple: {
      std::string out;
      const List& items = v.as_list();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ',';
        out += to_output_string(items[i], max_bytes);
        if (out.size() > max_bytes) throw Error("string exceeds " + std::to_string(max_bytes) + " bytes");
      }
      return out;
    }
    case K::Dict:
    case K::Namespace: return "[object Map]";
    default: return to_output_string(v, max_bytes);
  }
}

// --- JavaScript equality -------------------------------------------------------------------

namespace {

enum class JsType { Undefined, Null, Bool, Number, String, Object };

JsType js_type(const Value& v) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::Undefined: return JsType::Undefined;
    case K::None: return JsType::Null;
    case K::Bool: return JsType::Bool;
    case K::Int:
    case K::Float: return JsType::Number;
    case K::String: return JsType::String;
    default: return JsType::Object;
  }
}

// JavaScript's ToNumber for a string: a whole decimal/hex/binary/octal literal or NaN.
double string_to_number(const std::string& raw) {
  std::string s = text::trim(raw);
  if (s.empty()) return 0;
  if (s == "Infinity" || s == "+Infinity") return INFINITY;
  if (s == "-Infinity") return -INFINITY;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'o' || s[1] == 'O' || s[1] == 'b' || s[1] == 'B')) {
    int base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
    double value = 0;
    for (size_t i = 2; i < s.size(); ++i) {
      int d = std::isdigit(static_cast<unsigned char>(s[i])) ? s[i] - '0'
              : std::isxdigit(static_cast<unsigned char>(s[i])) ? (std::tolower(static_cast<unsigned char>(s[i])) - 'a' + 10)
                                                                 : 99;
      if (d >= base) return NAN;
      value = value * base + d;
    }
    return value;
  }
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return NAN;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return NAN;
  }
  if (i != s.size()) return NAN;
  return std::strtod(s.c_str(), nullptr);
}

// ToPrimitive of an object: arrays join their elements, Maps print "[object Map]".
std::string object_to_primitive(const Value& v) {
  if (v.kind() == Value::Kind::Function) return "function";
  return to_concat_string(v);
}

}  // namespace

bool loose_equal(const Value& a, const Value& b) {
  JsType ta = js_type(a), tb = js_type(b);
  auto nullish = [](JsType t) { return t == JsType::Undefined || t == JsType::Null; };
  if (nullish(ta) || nullish(tb)) return nullish(ta) && nullish(tb);
  if (ta == tb) return strict_equal(a, b);
  if (ta == JsType::Bool) return loose_equal(Value::integer(a.as_bool()), b);
  if (tb == JsType::Bool) return loose_equal(a, Value::integer(b.as_bool()));
  if (ta == JsType::Number && tb == JsType::String) return a.as_number() == string_to_number(b.as_string());
  if (ta == JsType::String && tb == JsType::Number) return string_to_number(a.as_string()) == b.as_number();
  if (ta == JsType::Object) return loose_equal(Value::string(object_to_primitive(a)), b);
  if (tb == JsType::Object) return loose_equal(a, Value::string(object_to_primitive(b)));
  return false;
}

bool strict_equal(const Value& a, const Value& b) {
  JsType ta = js_type(a), tb = js_type(b);
  if (ta != tb) return false;
  switch (ta) {
    case JsType::Undefined:
    case JsType::Null: return true;
    case JsType::Bool: return a.as_bool() == b.as_bool();
    case JsType::Number:
      if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
      return a.as_number() == b.as_number();
    case JsType::String: return a.as_string() == b.as_string();
    case JsType::Object: return a.identity() == b.identity();
  }
  return false;
}

// --- JSON input --------------------------------------------------------------------------------

static bool is_array_index_key(const std::string& k) {
  if (k.empty() || k.size() > 10) return false;
  if (k.size() > 1 && k[0] == '0') return false;
  for (char c : k)
    if (c < '0' || c > '9') return false;
  return std::stoull(k) < 4294967295ull;
}

static Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  using J = nlohmann::ordered_json::value_t;
  if (depth > 512) throw Error("JSON input nested too deeply");
  switch (j.type()) {
    case J::null: return Value::none();
    case J::boolean: return Value::boolean(j.get<bool>());
    case J::number_integer: return Value::integer(j.get<int64_t>());
    case J::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      return u <= uint64_t(INT64_MAX) ? Value::integer(int64_t(u)) : Value::floating(double(u));
    }
    case J::number_float: {
      double f = j.get<double>();
      // JavaScript has one number type; the reference treats any integral number as an int.
      if (std::isfinite(f) && std::floor(f) == f && std::fabs(f) < 9.2e18) return Value::integer(int64_t(f));
      return Value::floating(f);
    }
    case J::string: return Value::string(j.get<std::string>());
    case J::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::list(std::move(items));
    }
    case J::object: {
      Dict d;
      std::vector<std::pair<uint64_t, const std::string*>> index_keys;
      for (auto it = j.begin(); it != j.end(); ++it)
        if (is_array_index_key(it.key())) index_keys.emplace_back(std::stoull(it.key()), &it.key());
      std::sort(index_keys.begin(), index_keys.end());
      for (const auto& [n, key] : index_keys) d.entries.emplace_back(*key, from_json_at(j.at(*key), depth + 1));
      for (auto it = j.begin(); it != j.end(); ++it)
        if (!is_array_index_key(it.key())) d.entries.emplace_back(it.key(), from_json_at(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default: throw Error("unsupported JSON value (binary) in template context");
  }
}

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

}  // namespace ember::chat
