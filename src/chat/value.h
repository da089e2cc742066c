// Values of the template language: none/undefined, bool, int, float, string, list (and tuple),
// dict (insertion ordered), namespace (a dict whose attributes `set` may change) and callables.
//
// The reference for every behaviour here is the @huggingface/jinja renderer (the one Hugging
// Face uses in the browser), so a few rules follow JavaScript rather than Python: `==` is loose
// equality, `true` prints as "true", string concatenation of a float prints "3" not "3.0".
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::chat {

class Value;
class Env;
using List = std::vector<Value>;

struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value value);
};

// Arguments of a call: positional values then keyword values in source order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* keyword_arg(const std::string& name) const;
};

// A callable value: a global (range, namespace, ...), a bound method ("abc".upper) or a macro.
// `caller_env` is the scope the call happens in; macros resolve free names through it.
struct Callable {
  std::string name;
  std::function<Value(CallArgs& args, Env& caller_env)> fn;
};

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Tuple, Dict, Namespace, Function };

  Value() = default;
  static Value none() { return Value(Kind::None, std::monostate{}); }
  static Value boolean(bool b) { return Value(Kind::Bool, b); }
  static Value integer(int64_t i) { return Value(Kind::Int, i); }
  static Value floating(double f) { return Value(Kind::Float, f); }
  static Value string(std::string s) { return Value(Kind::String, std::make_shared<const std::string>(std::move(s))); }
  // Containers record how deep they nest; building one deeper than kMaxDepth
  // throws ember::Error (a list nested 100,000 deep, built by a loop, would
  // overflow the stack when destroyed or printed).
  static constexpr int kMaxDepth = 256;
  static Value list(List items) { return nested(Kind::List, std::make_shared<List>(std::move(items))); }
  static Value tuple(List items) { return nested(Kind::Tuple, std::make_shared<List>(std::move(items))); }
  static Value dict(Dict d) { return nested(Kind::Dict, std::make_shared<Dict>(std::move(d))); }
  static Value name_space(Dict d) { return nested(Kind::Namespace, std::make_shared<Dict>(std::move(d))); }
  static Value function(std::string name, std::function<Value(CallArgs&, Env&)> fn) {
    return Value(Kind::Function, std::make_shared<Callable>(Callable{std::move(name), std::move(fn)}));
  }

  Kind kind() const { return kind_; }
  int depth() const { return depth_; }  // 0 for scalars; 1 + the deepest element for containers
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_list_like() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }
  bool is_attribute_container() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  double as_number() const { return kind_ == Kind::Int ? double(as_int()) : kind_ == Kind::Bool ? double(as_bool()) : as_float(); }
  const std::string& as_string() const { return *std::get<std::shared_ptr<const std::string>>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<List>>(data_); }
  Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(data_); }
  const std::shared_ptr<Dict>& dict_ptr() const { return std::get<std::shared_ptr<Dict>>(data_); }
  const Callable& as_function() const { return *std::get<std::shared_ptr<Callable>>(data_); }
  // Identity of a list/dict/function, for JavaScript-style reference equality.
  const void* identity() const;

  // Python-like truthiness as the reference renderer defines it (empty list/dict/string false).
  bool truthy() const;
  // The name the reference renderer uses for the type in error messages ("StringValue", ...).
  const char* type_name() const;

 private:
  using Data = std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const std::string>, std::shared_ptr<List>,
                            std::shared_ptr<Dict>, std::shared_ptr<Callable>>;
  template <class T>
  Value(Kind k, T&& d) : kind_(k), data_(std::forward<T>(d)) {}
  template <class T>
  static Value nested(Kind k, T&& d) {
    Value v(k, std::forward<T>(d));
    v.depth_ = uint16_t(container_depth(v));
    // Namespaces are mutable: whatever they come to hold (at most kMaxDepth / 2
    // deep, checked on assignment) is covered by recording them at that depth.
    if (k == Kind::Namespace) v.depth_ = uint16_t(std::max<int>(v.depth_, kMaxDepth / 2));
    return v;
  }
  static int container_depth(const Value& v);  // throws past kMaxDepth
  Kind kind_ = Kind::Undefined;
  uint16_t depth_ = 0;  // fits in the padding after kind_
  Data data_;
};

// Text of a value when a template prints it ({{ x }}): floats keep ".0", containers print as JSON.
std::string to_output_string(const Value& v, size_t max_bytes = size_t(256) << 20);
// Text of a value inside `+`/`~` string concatenation (JavaScript's value.toString()).
std::string to_concat_string(const Value& v, size_t max_bytes = size_t(256) << 20);
// JavaScript's Number.prototype.toString for a double.
std::string js_number_to_string(double x);

// `==` as the reference renderer does it (JavaScript loose equality of the underlying values).
bool loose_equal(const Value& a, const Value& b);
// `in` over a list and the `equalto` test (JavaScript strict equality).
bool strict_equal(const Value& a, const Value& b);

// JSON -> Value the way JavaScript sees a parsed JSON document: integral numbers are ints, and
// object keys that are array indices ("0", "17") come first in ascending order.
Value from_json(const nlohmann::ordered_json& j);

}  // namespace ember::chat
