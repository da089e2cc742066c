// Methods of strings and dicts, the global functions, the `is` tests and value ordering.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "chat/interpreter.h"
#include "chat/text.h"
#include "util/error.h"

namespace ember::chat {

using K = Value::Kind;

static Error method_error(const std::string& method, const std::string& what) {
  return Error("template error: " + method + "(): " + what);
}

// --- strings ---------------------------------------------------------------------------------

// Python's str.split: with no separator, runs of whitespace separate and the ends are trimmed.
static Value split_string(const std::string& s, const Value* sep, int64_t maxsplit, size_t max_items = SIZE_MAX) {
  List parts;
  auto too_many = [&](size_t n) {
    if (n > max_items) throw method_error("split", "result exceeds " + std::to_string(max_items) + " items");
  };
  if (!sep || sep->is_none()) {
    std::string t = text::trim_start(s);
    size_t i = 0;
    while (i < t.size()) {
      size_t start = i;
      while (i < t.size() && !text::space_len(t, i)) i += text::char_len(t, i);
      if (maxsplit != -1 && int64_t(parts.size()) >= maxsplit) {
        parts.push_back(Value::string(t.substr(start)));
        break;
      }
      parts.push_back(Value::string(t.substr(start, i - start)));
      too_many(parts.size());
      while (size_t n = text::space_len(t, i)) i += n;
    }
    return Value::list(std::move(parts));
  }
  if (!sep->is_string()) throw method_error("split", "separator must be a string or none");
  const std::string& d = sep->as_string();
  if (d.empty()) throw method_error("split", "empty separator");
  std::vector<std::string> pieces;
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(d, pos);
    if (hit == std::string::npos) break;
    pieces.push_back(s.substr(pos, hit - pos));
    too_many(pieces.size());
    pos = hit + d.size();
  }
  pieces.push_back(s.substr(pos));
  if (maxsplit != -1 && int64_t(pieces.size()) > maxsplit) {
    std::string rest;
    for (size_t i = size_t(maxsplit); i < pieces.size(); ++i) rest += (i > size_t(maxsplit) ? d : "") + pieces[i];
    pieces.resize(size_t(maxsplit));
    pieces.push_back(rest);
  }
  for (auto& p : pieces) parts.push_back(Value::string(std::move(p)));
  return Value::list(std::move(parts));
}

// Python's str.rsplit (not in the reference renderer; provided because Jinja has it).
static Value rsplit_string(const std::string& s, const Value* sep, int64_t maxsplit, size_t max_items) {
  if (!sep || sep->is_none() || maxsplit < 0) {
    Value all = split_string(s, sep, -1, max_items);
    if (maxsplit < 0 || int64_t(all.as_list().size()) <= maxsplit + 1) return all;
  }
  if (!sep->is_string() || sep->as_string().empty()) throw method_error("rsplit", "separator must be a non-empty string");
  const std::string& d = sep->as_string();
  List parts;
  size_t end = s.size();
  while (int64_t(parts.size()) < maxsplit) {  // collected right to left, reversed below (linear time)
    size_t hit = end >= d.size() ? s.rfind(d, end - d.size()) : std::string::npos;
    if (hit == std::string::npos) break;
    parts.push_back(Value::string(s.substr(hit + d.size(), end - hit - d.size())));
    if (parts.size() > max_items) throw method_error("rsplit", "result exceeds " + std::to_string(max_items) + " items");
    end = hit;
  }
  std::reverse(parts.begin(), parts.end());
  parts.insert(parts.begin(), Value::string(s.substr(0, end)));
  return Value::list(std::move(parts));
}

static std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count,
                               size_t max_bytes) {
  if (count == 0) return s;
  int64_t remaining = count < 0 ? INT64_MAX : count;
  // size the result first so a replacement that would explode memory fails instead
  size_t hits = 0;
  if (from.empty()) {
    hits = text::length(s) + 1;
  } else {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + from.size())) ++hits;
  }
  hits = std::min<size_t>(hits, size_t(remaining));
  if (to.size() > from.size() && hits > 0 && (to.size() - from.size()) > (max_bytes - std::min(max_bytes, s.size())) / hits)
    throw method_error("replace", "result exceeds " + std::to_string(max_bytes) + " bytes");
  std::string out;
  if (from.empty()) {  // insert between characters and at both ends
    size_t i = 0;
    while (true) {
      if (remaining > 0) {
        out += to;
        --remaining;
      }
      if (i >= s.size()) break;
      size_t n = text::char_len(s, i);
      out.append(s, i, n);
      i += n;
    }
    return out;
  }
  size_t pos = 0;
  while (remaining > 0) {
    size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
    --remaining;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

static bool affix_match(const std::string& s, const Value& pattern, bool prefix, const char* method) {
  auto one = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (pattern.is_string()) return one(pattern.as_string());
  if (pattern.is_list_like()) {
    for (const Value& p : pattern.as_list()) {
      if (!p.is_string()) throw method_error(method, "tuple elements must be strings");
      if (one(p.as_string())) return true;
    }
    return false;
  }
  throw method_error(method, "argument must be a string or tuple of strings");
}

static std::string title_case(const std::string& s) {
  // Upper-cases a word character that follows a non-word character; leaves the rest alone.
  std::string out = s;
  for (size_t i = 0; i < out.size(); ++i)
    if (text::is_word_byte(out[i]) && (i == 0 || !text::is_word_byte(out[i - 1])) && out[i] >= 'a' && out[i] <= 'z')
      out[i] = char(out[i] - 32);
  return out;
}

static std::string capitalize(const std::string& s) {
  if (s.empty()) return s;
  size_t n = text::char_len(s, 0);
  return text::to_upper(s.substr(0, n)) + s.substr(n);
}

static int64_t int_arg(const Value* v, int64_t fallback, const char* method, const char* what) {
  if (!v) return fallback;
  if (!v->is_int()) throw method_error(method, std::string(what) + " must be an integer");
  return v->as_int();
}

Value string_attribute(const Value& sv, const std::string& name, size_t max_bytes, size_t max_items) {
  const std::string s = sv.as_string();
  auto fn = [&](auto body) { return Value::function(name, [s, body](CallArgs& a, Env&) -> Value { return body(s, a); }); };
  if (name == "length") return Value::integer(int64_t(text::length(s)));
  // strip/lstrip/rstrip take no characters in the reference: they always trim whitespace.
  if (name == "upper") return fn([](const std::string& x, CallArgs&) { return Value::string(text::to_upper(x)); });
  if (name == "lower") return fn([](const std::string& x, CallArgs&) { return Value::string(text::to_lower(x)); });
  if (name == "strip") return fn([](const std::string& x, CallArgs&) { return Value::string(text::trim(x)); });
  if (name == "lstrip") return fn([](const std::string& x, CallArgs&) { return Value::string(text::trim_start(x)); });
  if (name == "rstrip") return fn([](const std::string& x, CallArgs&) { return Value::string(text::trim_end(x)); });
  if (name == "title") return fn([](const std::string& x, CallArgs&) { return Value::string(title_case(x)); });
  if (name == "capitalize") return fn([](const std::string& x, CallArgs&) { return Value::string(capitalize(x)); });
  if (name == "startswith" || name == "endswith") {
    bool prefix = name == "startswith";
    return fn([prefix](const std::string& x, CallArgs& a) {
      const char* m = prefix ? "startswith" : "endswith";
      if (a.positional.empty()) throw method_error(m, "needs an argument");
      return Value::boolean(affix_match(x, a.positional[0], prefix, m));
    });
  }
  if (name == "split" || name == "rsplit") {
    bool right = name == "rsplit";
    return fn([right, max_items](const std::string& x, CallArgs& a) {
      const char* m = right ? "rsplit" : "split";
      const Value* sep = !a.positional.empty() ? &a.positional[0] : a.keyword_arg("sep");
      const Value* max = a.positional.size() > 1 ? &a.positional[1] : a.keyword_arg("maxsplit");
      int64_t maxsplit = int_arg(max, -1, m, "maxsplit");
      return right ? rsplit_string(x, sep, maxsplit, max_items) : split_string(x, sep, maxsplit, max_items);
    });
  }
  if (name == "replace") {
    return fn([max_bytes](const std::string& x, CallArgs& a) {
      if (a.positional.size() < 2) throw method_error("replace", "needs two arguments");
      if (!a.positional[0].is_string() || !a.positional[1].is_string()) throw method_error("replace", "arguments must be strings");
      const Value* count = a.positional.size() > 2 ? &a.positional[2] : a.keyword_arg("count");
      int64_t n = (count && !count->is_none()) ? int_arg(count, -1, "replace", "count") : -1;
      return Value::string(replace_all(x, a.positional[0].as_string(), a.positional[1].as_string(), n, max_bytes));
    });
  }
  if (name == "find") {  // not in the reference renderer; Python semantics (character index or -1)
    return fn([](const std::string& x, CallArgs& a) {
      if (a.positional.empty() || !a.positional[0].is_string()) throw method_error("find", "needs a string argument");
      size_t hit = x.find(a.positional[0].as_string());
      return Value::integer(hit == std::string::npos ? -1 : int64_t(text::length(x.substr(0, hit))));
    });
  }
  return Value();
}

// --- dicts -----------------------------------------------------------------------------------

int compare_values(const Value& a, const Value& b, bool case_sensitive, int line) {
  if (a.is_none() && b.is_none()) return 0;
  if (a.is_undefined() && b.is_undefined()) return 0;
  if (a.is_none() || b.is_none() || a.is_undefined() || b.is_undefined())
    Interpreter::fail(line, std::string("cannot compare ") + a.type_name() + " with " + b.type_name());
  auto numeric = [](const Value& v) { return v.is_number() || v.kind() == K::Bool; };
  if (numeric(a) && numeric(b)) {
    double x = a.as_number(), y = b.as_number();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind() != b.kind()) Interpreter::fail(line, std::string("cannot compare ") + a.type_name() + " with " + b.type_name());
  if (a.is_string()) {
    std::string x = case_sensitive ? a.as_string() : text::to_lower(a.as_string());
    std::string y = case_sensitive ? b.as_string() : text::to_lower(b.as_string());
    return x < y ? -1 : x > y ? 1 : 0;
  }
  Interpreter::fail(line, std::string("cannot compare values of type ") + a.type_name());
}

static Value dict_items(const Dict& d) {
  List items;
  for (const auto& [k, v] : d.entries) items.push_back(Value::list({Value::string(k), v}));
  return Value::list(std::move(items));
}

Value dict_attribute(const Value& dv, const std::string& name) {
  std::shared_ptr<Dict> d = dv.dict_ptr();
  if (name == "get")
    return Value::function(name, [d](CallArgs& a, Env&) -> Value {
      if (a.positional.empty() || !a.positional[0].is_string()) throw method_error("get", "key must be a string");
      if (const Value* v = d->find(a.positional[0].as_string())) return *v;
      if (a.positional.size() > 1) return a.positional[1];
      if (const Value* def = a.keyword_arg("default")) return *def;
      return Value::none();
    });
  if (name == "items") return Value::function(name, [d](CallArgs&, Env&) { return dict_items(*d); });
  if (name == "keys")
    return Value::function(name, [d](CallArgs&, Env&) {
      List keys;
      for (const auto& [k, v] : d->entries) keys.push_back(Value::string(k));
      return Value::list(std::move(keys));
    });
  if (name == "values")
    return Value::function(name, [d](CallArgs&, Env&) {
      List values;
      for (const auto& [k, v] : d->entries) values.push_back(v);
      return Value::list(std::move(values));
    });
  if (name == "dictsort")
    return Value::function(name, [d](CallArgs& a, Env&) -> Value {
      auto arg = [&](size_t i, const char* key) -> const Value* {
        return i < a.positional.size() ? &a.positional[i] : a.keyword_arg(key);
      };
      const Value* cs = arg(0, "case_sensitive");
      const Value* by = arg(1, "by");
      const Value* rev = arg(2, "reverse");
      if (cs && cs->kind() != K::Bool) throw method_error("dictsort", "case_sensitive must be a boolean");
      if (rev && rev->kind() != K::Bool) throw method_error("dictsort", "reverse must be a boolean");
      if (by && (!by->is_string() || (by->as_string() != "key" && by->as_string() != "value")))
        throw method_error("dictsort", "by must be 'key' or 'value'");
      bool case_sensitive = cs && cs->as_bool(), reverse = rev && rev->as_bool();
      size_t index = by && by->as_string() == "value" ? 1 : 0;
      List items = dict_items(*d).as_list();
      std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        int c = compare_values(x.as_list()[index], y.as_list()[index], case_sensitive, 0);
        return reverse ? c > 0 : c < 0;
      });
      return Value::list(std::move(items));
    });
  return Value();
}

// --- globals ---------------------------------------------------------------------------------

static std::string strftime_now(const std::string& format) {
  static const char* months_long[] = {"January", "February", "March",     "April",   "May",      "June",
                                      "July",    "August",   "September", "October", "November", "December"};
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  auto pad2 = [](int n) { return (n < 10 ? "0" : "") + std::to_string(n); };
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      out += format[i];
      continue;
    }
    char c = format[i + 1];
    switch (c) {
      case 'Y': out += std::to_string(tm.tm_year + 1900); break;
      case 'm': out += pad2(tm.tm_mon + 1); break;
      case 'd': out += pad2(tm.tm_mday); break;
      case 'b': out += std::string(months_long[tm.tm_mon]).substr(0, 3); break;
      case 'B': out += months_long[tm.tm_mon]; break;
      case 'H': out += pad2(tm.tm_hour); break;
      case 'M': out += pad2(tm.tm_min); break;
      case '%': out += '%'; break;
      default: out += '%'; out += c; break;  // other directives are left as written
    }
    ++i;
  }
  return out;
}

void install_globals(Env& env, Interpreter& interp) {
  env.set("true", Value::boolean(true));
  env.set("false", Value::boolean(false));
  env.set("none", Value::none());
  env.set("True", Value::boolean(true));
  env.set("False", Value::boolean(false));
  env.set("None", Value::none());
  env.set("raise_exception", Value::function("raise_exception", [](CallArgs& a, Env&) -> Value {
            std::string msg;
            for (size_t i = 0; i < a.positional.size(); ++i) msg += (i ? "," : "") + to_concat_string(a.positional[i], 1 << 16);
            throw Error("template raised an exception: " + msg);
          }));
  env.set("range", Value::function("range", [&interp](CallArgs& a, Env&) -> Value {
            if (!a.keyword.empty()) throw method_error("range", "takes no keyword arguments");
            if (a.positional.empty() || a.positional.size() > 3) throw method_error("range", "takes 1 to 3 arguments");
            for (const Value& v : a.positional)
              if (!v.is_number() && v.kind() != K::Bool) throw method_error("range", "arguments must be numbers");
            double start = 0, stop, step = 1;
            if (a.positional.size() == 1) {
              stop = a.positional[0].as_number();
            } else {
              start = a.positional[0].as_number();
              stop = a.positional[1].as_number();
              if (a.positional.size() == 3) step = a.positional[2].as_number();
            }
            if (step == 0) throw method_error("range", "step must not be zero");
            if (std::isnan(start) || std::isnan(stop) || std::isnan(step)) return Value::list({});
            double count = step > 0 ? std::ceil((stop - start) / step) : std::ceil((start - stop) / -step);
            if (count > double(interp.limits().max_list_items))
              throw Error("template error: range() of " + js_number_to_string(count) + " items exceeds the limit of " +
                          std::to_string(interp.limits().max_list_items));
            List items;
            for (double x = start; step > 0 ? x < stop : x > stop; x += step) {
              // JavaScript has one number type: every integral item is an int, as in the reference
              bool integral = std::floor(x) == x && std::fabs(x) < 9.2e18;
              items.push_back(integral ? Value::integer(int64_t(x)) : Value::floating(x));
            }
            return Value::list(std::move(items));
          }));
  env.set("strftime_now", Value::function("strftime_now", [](CallArgs& a, Env&) -> Value {
            if (a.positional.empty() || !a.positional[0].is_string()) throw method_error("strftime_now", "needs a format string");
            return Value::string(strftime_now(a.positional[0].as_string()));
          }));
  env.set("namespace", Value::function("namespace", [&interp](CallArgs& a, Env&) -> Value {
            if (a.positional.size() > 1) throw method_error("namespace", "takes at most 1 positional argument");
            Dict d;
            if (a.positional.size() == 1) {
              const Value& src = a.positional[0];
              if (src.kind() == K::Dict) {
                for (const auto& [k, v] : src.as_dict().entries) d.set(k, v);
              } else if (src.is_list_like()) {
                for (const Value& pair : src.as_list()) {
                  if (!pair.is_list_like() || pair.as_list().size() != 2 || !pair.as_list()[0].is_string())
                    throw method_error("namespace", "expected a dict or a list of [key, value] pairs");
                  d.set(pair.as_list()[0].as_string(), pair.as_list()[1]);
                }
              } else {
                throw method_error("namespace", std::string(src.type_name()) + " is not iterable");
              }
            }
            for (const auto& [k, v] : a.keyword) d.set(k, v);
            return interp.make_namespace(std::move(d));
          }));
}

// --- tests -----------------------------------------------------------------------------------

bool Interpreter::run_test(const std::string& name, const Value& v, const Value* arg, int line) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind() == K::Bool;
  if (name == "true") return v.kind() == K::Bool && v.as_bool();
  if (name == "false") return v.kind() == K::Bool && !v.as_bool();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "callable") return v.kind() == K::Function;
  if (name == "mapping") return v.kind() == K::Dict;
  if (name == "iterable") return v.kind() == K::List || v.is_string();  // as the reference: not tuples or dicts
  if (name == "sequence") return v.is_list_like() || v.kind() == K::Dict || v.is_string();
  if (name == "lower") return v.is_string() && v.as_string() == text::to_lower(v.as_string());
  if (name == "upper") return v.is_string() && v.as_string() == text::to_upper(v.as_string());
  if (name == "odd" || name == "even") {
    if (!v.is_int()) fail(line, "test '" + name + "' needs an integer, got " + v.type_name());
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "equalto" || name == "eq") {
    if (!arg) fail(line, "test '" + name + "' needs a value to compare with");
    return strict_equal(v, *arg);
  }
  fail(line, "test '" + name + "' is not supported");
}

}  // namespace ember::chat
