// Filters (`value | name` and `value | name(args)`), dispatched on the operand's type the way
// the reference renderer does it. A few Jinja filters the reference lacks (e/escape, round,
// select/reject, count, list of a string) are provided with Python Jinja's meaning.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "chat/interpreter.h"
#include "chat/json_text.h"
#include "chat/text.h"
#include "util/error.h"

namespace ember::chat {

using K = Value::Kind;
using EK = Expr::Kind;

namespace {

// JavaScript parseInt(s, 10) / parseFloat(s): the longest numeric prefix, or NaN.
std::optional<double> js_parse_number(const std::string& raw, bool integer) {
  std::string s = text::trim_start(raw);
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (!integer && s.compare(i, 8, "Infinity") == 0) return s[0] == '-' ? -INFINITY : INFINITY;
  size_t digits_start = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  size_t int_digits = i - digits_start;
  if (integer) {
    if (int_digits == 0) return std::nullopt;
    return std::strtod(s.substr(0, i).c_str(), nullptr);
  }
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    frac_digits = j - i - 1;
    if (int_digits + frac_digits > 0) i = j;
  }
  if (int_digits + frac_digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    size_t exp_start = j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j > exp_start) i = j;
  }
  return std::strtod(s.substr(0, i).c_str(), nullptr);
}

Value number_value(double x) {
  if (std::isfinite(x) && std::floor(x) == x && std::fabs(x) < 9.2e18) return Value::integer(int64_t(x));
  return Value::floating(x);
}

std::string indent_text(const std::string& s, int64_t width, bool first, bool blank) {
  std::string pad(size_t(std::max<int64_t>(width, 0)), ' ');
  std::string out;
  size_t start = 0, index = 0;
  while (true) {
    size_t nl = s.find('\n', start);
    std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    bool keep = (!first && index == 0) || (!blank && line.empty());
    if (index > 0) out += '\n';
    out += keep ? line : pad + line;
    if (nl == std::string::npos) break;
    start = nl + 1;
    ++index;
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Array.prototype.join over the raw values, as the reference's `join` does.
std::string join_raw(const List& items, const std::string& sep, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    const Value& v = items[i];
    if (v.is_none() || v.is_undefined()) continue;
    out += to_concat_string(v, max_bytes);
    if (out.size() > max_bytes) throw Error("template error: join result exceeds " + std::to_string(max_bytes) + " bytes");
  }
  return out;
}

// The attribute at a dotted path ("function.name", "items.0"), or undefined.
Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (v.is_attribute_container()) {
      const Value* found = v.as_dict().find(part);
      v = found ? *found : Value();
    } else if (v.is_list_like()) {
      char* end = nullptr;
      long long idx = std::strtoll(part.c_str(), &end, 10);
      if (end == part.c_str() || idx < 0 || size_t(idx) >= v.as_list().size()) return Value();
      v = v.as_list()[size_t(idx)];
    } else {
      return Value();
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

const Value* arg_at(const CallArgs& a, size_t i, const char* key) {
  return i < a.positional.size() ? &a.positional[i] : a.keyword_arg(key);
}

bool bool_arg(const Value* v, bool fallback, const std::string& what, int line) {
  if (!v) return fallback;
  if (v->kind() != K::Bool) Interpreter::fail(line, what + " must be a boolean");
  return v->as_bool();
}

}  // namespace

Value Interpreter::apply_filter(const Value& operand, const Expr& filter, Env& env) {
  const bool is_call = filter.kind == EK::Call;
  const std::string& name = is_call ? filter.children[0]->name : filter.name;
  const int line = filter.line;
  auto unsupported = [&]() -> Value {
    fail(line, "filter '" + name + "' is not supported for " + operand.type_name());
  };

  if (!is_call) {
    if (name == "safe") return operand;
    if (name == "tojson") {
      JsonOptions o;
      o.max_bytes = limits_.max_output_bytes;
      return Value::string(to_json(operand, o, true));
    }
    if (name == "default" || name == "d") return operand.is_undefined() ? Value::string("") : operand;
    if (name == "e" || name == "escape") {
      if (operand.is_none() || operand.is_undefined()) return Value::string("");
      return Value::string(html_escape(operand.is_string() ? operand.as_string() : to_output_string(operand)));
    }
    if (operand.is_list_like()) {
      const List& items = operand.as_list();
      if (name == "list") return operand;
      if (name == "first") return items.empty() ? Value() : items.front();
      if (name == "last") return items.empty() ? Value() : items.back();
      if (name == "length" || name == "count") return Value::integer(int64_t(items.size()));
      if (name == "reverse") return Value::list(List(items.rbegin(), items.rend()));
      if (name == "sort") {
        List sorted = items;
        std::stable_sort(sorted.begin(), sorted.end(),
                         [&](const Value& a, const Value& b) { return compare_values(a, b, false, line) < 0; });
        return Value::list(std::move(sorted));
      }
      if (name == "join") return Value::string(join_raw(items, "", limits_.max_output_bytes));
      if (name == "string") return Value::string(to_output_string(operand, limits_.max_output_bytes));
      if (name == "unique") {
        List out;
        for (const Value& v : items)
          if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return strict_equal(o, v); })) out.push_back(v);
        return Value::list(std::move(out));
      }
      if (name == "select" || name == "reject") {
        List out;
        for (const Value& v : items)
          if (v.truthy() == (name == "select")) out.push_back(v);
        return Value::list(std::move(out));
      }
      return unsupported();
    }
    if (operand.is_string()) {
      const std::string& s = operand.as_string();
      if (name == "length" || name == "count") return Value::integer(int64_t(text::length(s)));
      if (name == "upper") return Value::string(text::to_upper(s));
      if (name == "lower") return Value::string(text::to_lower(s));
      if (name == "title" || name == "capitalize") {
        CallArgs none;
        return call(string_attribute(operand, name, limits_.max_output_bytes, limits_.max_list_items), none, env, line);
      }
      if (name == "trim") return Value::string(text::trim(s));
      if (name == "indent") {
        check_size(s.size() + 4 * (size_t(std::count(s.begin(), s.end(), '\n')) + 1), line);
        return Value::string(indent_text(s, 4, false, false));
      }
      if (name == "join" || name == "string") return operand;
      if (name == "int") {
        auto v = js_parse_number(s, true);
        return v ? number_value(*v) : Value::integer(0);
      }
      if (name == "float") {
        auto v = js_parse_number(s, false);
        return Value::floating(v ? *v : 0.0);
      }
      if (name == "list") {
        check_list_size(size_t(std::count_if(s.begin(), s.end(), [](char c) { return (uint8_t(c) & 0xC0) != 0x80; })), line);
        List chars;
        for (auto& c : text::characters(s)) chars.push_back(Value::string(std::move(c)));
        return Value::list(std::move(chars));
      }
      return unsupported();
    }
    if (operand.is_number()) {
      if (name == "abs")
        return operand.is_int() ? (operand.as_int() == INT64_MIN ? Value::floating(-double(INT64_MIN)) : Value::integer(std::llabs(operand.as_int())))
                                : Value::floating(std::fabs(operand.as_float()));
      if (name == "int") return operand.is_int() ? operand : number_value(std::floor(operand.as_float()));
      if (name == "float") return Value::floating(operand.as_number());
      if (name == "string") return Value::string(to_output_string(operand));
      if (name == "round") return Value::floating(std::round(operand.as_number()));
      return unsupported();
    }
    if (operand.kind() == K::Dict) {
      if (name == "length" || name == "count") return Value::integer(int64_t(operand.as_dict().entries.size()));
      Value method = dict_attribute(operand, name);
      if (method.kind() == K::Function) {
        CallArgs none;
        return call(method, none, env, line);
      }
      if (name == "list") {
        List keys;
        for (const auto& [k, v] : operand.as_dict().entries) keys.push_back(Value::string(k));
        return Value::list(std::move(keys));
      }
      return unsupported();
    }
    if (operand.kind() == K::Bool) {
      if (name == "bool") return operand;
      if (name == "int") return Value::integer(operand.as_bool());
      if (name == "float") return Value::floating(operand.as_bool());
      if (name == "string") return Value::string(operand.as_bool() ? "true" : "false");
      return unsupported();
    }
    return unsupported();
  }

  // --- name(args) ---
  if (name == "selectattr" || name == "rejectattr") {
    // the reference accepts only string literals here: attribute, test name, test argument
    for (size_t i = 1; i < filter.children.size(); ++i) {
      const Expr& a = *filter.children[i];
      if (a.kind != EK::Literal || !a.literal.is_string()) fail(line, "arguments of '" + name + "' must be strings");
    }
  }
  CallArgs args = eval_args(filter.children, 1, env);
  if (name == "tojson") {
    JsonOptions o;
    o.max_bytes = limits_.max_output_bytes;
    const Value* indent = args.keyword_arg("indent");
    if (indent && !indent->is_none()) {
      if (!indent->is_int()) fail(line, "tojson indent must be an integer");
      if (indent->as_int() < 0 || indent->as_int() > 64) fail(line, "tojson indent out of range");
      o.indent = int(indent->as_int());
    }
    o.ensure_ascii = bool_arg(args.keyword_arg("ensure_ascii"), false, "tojson ensure_ascii", line);
    o.sort_keys = bool_arg(args.keyword_arg("sort_keys"), false, "tojson sort_keys", line);
    if (const Value* sep = args.keyword_arg("separators"); sep && !sep->is_none()) {
      if (!sep->is_list_like() || sep->as_list().size() != 2 || !sep->as_list()[0].is_string() || !sep->as_list()[1].is_string())
        fail(line, "tojson separators must be two strings");
      o.separators = std::make_pair(sep->as_list()[0].as_string(), sep->as_list()[1].as_string());
    }
    return Value::string(to_json(operand, o, true));
  }
  if (name == "join") {
    List items;
    if (operand.is_string()) {
      for (auto& c : text::characters(operand.as_string())) items.push_back(Value::string(std::move(c)));
    } else if (operand.is_list_like()) {
      items = operand.as_list();
    } else {
      return unsupported();
    }
    const Value* sep = arg_at(args, 0, "separator");
    if (sep && !sep->is_string()) fail(line, "join separator must be a string");
    std::string out = join_raw(items, sep ? sep->as_string() : "", limits_.max_output_bytes);
    count_built(out.size(), line);
    return Value::string(std::move(out));
  }
  if (name == "int" || name == "float") {
    const Value* def = arg_at(args, 0, "default");
    Value fallback = def ? *def : (name == "int" ? Value::integer(0) : Value::floating(0));
    if (operand.is_string()) {
      auto v = js_parse_number(operand.as_string(), name == "int");
      if (!v || std::isnan(*v)) return fallback;
      return name == "int" ? number_value(*v) : Value::floating(*v);
    }
    if (operand.is_number()) return operand;
    if (operand.kind() == K::Bool) return name == "int" ? Value::integer(operand.as_bool()) : Value::floating(operand.as_bool());
    return unsupported();
  }
  if (name == "default" || name == "d") {
    Value def = !args.positional.empty() ? args.positional[0] : Value::string("");
    bool boolean = bool_arg(arg_at(args, 1, "boolean"), false, "default's boolean flag", line);
    if (operand.is_undefined() || (boolean && !operand.truthy())) return def;
    return operand;
  }
  if (name == "round" && operand.is_number()) {
    const Value* precision = arg_at(args, 0, "precision");
    const Value* method = arg_at(args, 1, "method");
    int64_t digits = precision && precision->is_int() ? std::clamp<int64_t>(precision->as_int(), -300, 300) : 0;
    std::string how = method && method->is_string() ? method->as_string() : "common";
    double scale = std::pow(10.0, double(digits)), x = operand.as_number() * scale;
    double r = how == "ceil" ? std::ceil(x) : how == "floor" ? std::floor(x) : std::round(x);
    return Value::floating(r / scale);
  }
  if (operand.is_list_like()) {
    const List& items = operand.as_list();
    if (name == "sort") {
      bool reverse = bool_arg(arg_at(args, 0, "reverse"), false, "sort reverse", line);
      bool case_sensitive = bool_arg(arg_at(args, 1, "case_sensitive"), false, "sort case_sensitive", line);
      const Value* attribute = arg_at(args, 2, "attribute");
      if (attribute && !attribute->is_string() && !attribute->is_int() && !attribute->is_none())
        fail(line, "sort attribute must be a string or integer");
      auto key = [&](const Value& v) {
        if (!attribute || attribute->is_none()) return v;
        return attribute_path(v, attribute->is_int() ? std::to_string(attribute->as_int()) : attribute->as_string());
      };
      List sorted = items;
      std::stable_sort(sorted.begin(), sorted.end(), [&](const Value& a, const Value& b) {
        int c = compare_values(key(a), key(b), case_sensitive, line);
        return reverse ? c > 0 : c < 0;
      });
      return Value::list(std::move(sorted));
    }
    if (name == "selectattr" || name == "rejectattr") {
      bool select = name == "selectattr";
      for (const Value& item : items)
        if (!item.is_attribute_container()) fail(line, "'" + name + "' needs a list of dicts");
      if (args.positional.empty()) fail(line, "'" + name + "' needs an attribute name");
      const std::string attr = args.positional[0].as_string();
      const Value* test = args.positional.size() > 1 ? &args.positional[1] : nullptr;
      const Value* test_arg = args.positional.size() > 2 ? &args.positional[2] : nullptr;
      Value undefined;
      List out;
      for (const Value& item : items) {
        const Value* a = item.as_dict().find(attr);
        bool r = false;
        if (a) r = test ? run_test(test->as_string(), *a, test_arg ? test_arg : &undefined, line) : a->truthy();
        if (r == select) out.push_back(item);
      }
      return Value::list(std::move(out));
    }
    if (name == "select" || name == "reject") {  // Jinja's select/reject by test name
      bool select = name == "select";
      const Value* test = args.positional.empty() ? nullptr : &args.positional[0];
      if (test && !test->is_string()) fail(line, "'" + name + "' needs a test name");
      const Value* test_arg = args.positional.size() > 1 ? &args.positional[1] : nullptr;
      List out;
      for (const Value& item : items) {
        bool r = test ? run_test(test->as_string(), item, test_arg, line) : item.truthy();
        if (r == select) out.push_back(item);
      }
      return Value::list(std::move(out));
    }
    if (name == "map") {
      const Value* attr = args.keyword_arg("attribute");
      if (!attr) fail(line, "map is supported only with attribute=");
      if (!attr->is_string()) fail(line, "map attribute must be a string");
      const Value* def = args.keyword_arg("default");
      List out;
      for (const Value& item : items) {
        if (!item.is_attribute_container()) fail(line, "map(attribute=) needs a list of dicts");
        Value v = attribute_path(item, attr->as_string());
        out.push_back(v.is_undefined() && def ? *def : v);
      }
      return Value::list(std::move(out));
    }
    return unsupported();
  }
  if (operand.is_string()) {
    if (name == "indent") {
      const Value* width = arg_at(args, 0, "width");
      if (width && !width->is_int()) fail(line, "indent width must be an integer");
      int64_t w = width ? width->as_int() : 4;
      if (w > 1024) fail(line, "indent width too large");
      size_t lines = size_t(std::count(operand.as_string().begin(), operand.as_string().end(), '\n')) + 1;
      check_size(operand.as_string().size() + lines * size_t(std::max<int64_t>(w, 0)), line);
      const Value* first = arg_at(args, 1, "first");
      const Value* blank = arg_at(args, 2, "blank");
      std::string out = indent_text(operand.as_string(), w, first && first->truthy(), blank && blank->truthy());
      count_built(out.size(), line);
      return Value::string(std::move(out));
    }
    if (name == "replace") {
      Value method = string_attribute(operand, "replace", limits_.max_output_bytes, limits_.max_list_items);
      Value result = call(method, args, env, line);
      count_built(result.as_string().size(), line);
      return result;
    }
    return unsupported();
  }
  if (operand.kind() == K::Dict) {
    Value method = dict_attribute(operand, name);
    if (method.kind() == K::Function) return call(method, args, env, line);
    return unsupported();
  }
  return unsupported();
}

}  // namespace ember::chat
