#include "chat/json_text.h"

#include <algorithm>
#include <cmath>

#include "chat/text.h"
#include "util/error.h"

namespace ember::chat {

static void append_u_escape(std::string& out, unsigned unit) {
  static const char* hex = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += hex[(unit >> shift) & 0xF];
}

std::string json_quote(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || (ensure_ascii && c == 0x7F)) append_u_escape(out, c);
          else out += char(c);
      }
      ++i;
      continue;
    }
    size_t n = text::char_len(s, i);
    if (!ensure_ascii) {
      out.append(s, i, n);
    } else {
      // ensure_ascii escapes UTF-16 code units, so characters above U+FFFF become a surrogate pair.
      char32_t cp = text::decode(s, i);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        append_u_escape(out, 0xD800 + (cp >> 10));
        append_u_escape(out, 0xDC00 + (cp & 0x3FF));
      } else {
        append_u_escape(out, cp);
      }
    }
    i += n;
  }
  out += '"';
  return out;
}

// Key order of sort_keys: the reference uses localeCompare; this approximates it for the keys
// tool schemas use (case-insensitive first, lower case before upper case on a tie).
static bool locale_less(const std::string& a, const std::string& b) {
  std::string la = text::to_lower(a), lb = text::to_lower(b);
  if (la != lb) return la < lb;
  return a > b;
}

static std::string number_json(const Value& v) {
  if (v.kind() == Value::Kind::Int) return std::to_string(v.as_int());
  double f = v.as_float();
  if (!std::isfinite(f)) return "null";
  return js_number_to_string(f);
}

static std::string write(const Value& v, const JsonOptions& o, int depth, bool undefined_as_null) {
  using K = Value::Kind;
  std::string item_sep = o.separators ? o.separators->first : (o.indent > 0 ? "," : ", ");
  std::string key_sep = o.separators ? o.separators->second : ": ";
  switch (v.kind()) {
    case K::None: return "null";
    case K::Undefined: return undefined_as_null ? "null" : "undefined";
    case K::Bool: return v.as_bool() ? "true" : "false";
    case K::Int:
    case K::Float: return number_json(v);
    case K::String: return json_quote(v.as_string(), o.ensure_ascii);
    case K::Function: throw Error("cannot convert a function to JSON");
    case K::Tuple: throw Error("cannot convert a tuple to JSON");  // as the reference renderer
    default: break;
  }
  // Templates can nest lists in a loop ({% set x = [x] %}); refuse before the stack runs out.
  if (depth > 256) throw Error("value nested too deeply to convert to JSON");
  std::string indent_unit(size_t(std::max(o.indent, 0)), ' ');
  std::string base = "\n";
  for (int d = 0; d < depth; ++d) base += indent_unit;
  std::string child = base + indent_unit;
  std::string out;
  if (v.is_list_like()) {
    const List& items = v.as_list();
    out = "[";
    for (size_t i = 0; i < items.size(); ++i) {
      if (o.indent > 0) out += i == 0 ? child : item_sep + child;
      else if (i > 0) out += item_sep;
      out += write(items[i], o, depth + 1, undefined_as_null);
      if (out.size() > o.max_bytes) throw Error("JSON text exceeds " + std::to_string(o.max_bytes) + " bytes");
    }
    if (o.indent > 0 && !items.empty()) out += base;
    return out + "]";
  }
  std::vector<const std::pair<std::string, Value>*> entries;
  for (const auto& e : v.as_dict().entries) entries.push_back(&e);
  if (o.sort_keys)
    std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return locale_less(a->first, b->first); });
  out = "{";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += item_sep;
    if (o.indent > 0) out += child;
    out += json_quote(entries[i]->first, o.ensure_ascii) + key_sep + write(entries[i]->second, o, depth + 1, undefined_as_null);
    if (out.size() > o.max_bytes) throw Error("JSON text exceeds " + std::to_string(o.max_bytes) + " bytes");
  }
  if (o.indent > 0 && !entries.empty()) out += base;
  return out + "}";
}

std::string to_json(const Value& v, const JsonOptions& options, bool undefined_as_null) {
  return write(v, options, 0, undefined_as_null);
}

}  // namespace ember::chat
