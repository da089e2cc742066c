#include "grammar/json_schema_grammar.h"

#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "grammar/schema_disjoint.h"
#include "util/error.h"

namespace ember::grammar {

namespace {

using json = nlohmann::ordered_json;

constexpr int kMaxNesting = 64;           // schemas nested deeper are refused
constexpr int64_t kMaxRepeat = 10000;     // largest maxLength / maxItems written out as rules
constexpr int64_t kMaxInteger = 9999999999999999;  // 16 digits: what an unbounded integer may have

// Keywords that restrict values in ways the grammar cannot express: refused, never ignored.
const std::set<std::string> kUnsupported = {"pattern", "patternProperties", "not", "if", "then", "else",
                                            "multipleOf", "contains", "prefixItems", "propertyNames",
                                            "dependentSchemas", "dependentRequired", "minProperties",
                                            "maxProperties", "unevaluatedProperties", "unevaluatedItems"};

ByteSet range(int lo, int hi) {
  ByteSet s;
  for (int b = lo; b <= hi; ++b) s.set(size_t(b));
  return s;
}

class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& g, const json& root) : g_(g), root_(root) {}

  uint32_t value(const json& s, int depth) {
    if (depth > kMaxNesting) throw Error("schema nests deeper than " + std::to_string(kMaxNesting) + " levels");
    if (s.is_boolean()) {
      if (!s.get<bool>()) throw Error("schema: false allows no value");
      return any_value();
    }
    if (!s.is_object()) throw Error("schema: a schema must be an object or a boolean");
    for (auto it = s.begin(); it != s.end(); ++it)
      if (kUnsupported.count(it.key())) throw Error("schema: '" + it.key() + "' is not supported");
    if (s.contains("uniqueItems") && s["uniqueItems"] == true) throw Error("schema: 'uniqueItems' is not supported");
    check_combinator_alone(s);
    if (s.contains("$ref")) return reference(s["$ref"], depth);
    if (s.contains("const")) return g_.rule({g_.literal(s["const"].dump())});
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) throw Error("schema: enum must be a non-empty array");
      std::vector<Sequence> alts;
      for (const json& v : e) alts.push_back(g_.literal(v.dump()));
      return g_.rule(std::move(alts));
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key)) {
        const json& list = s[key];
        if (!list.is_array() || list.empty()) throw Error(std::string("schema: ") + key + " must be a non-empty array");
        // oneOf is anyOf once no value can match two branches (schema_disjoint.h).
        if (key == std::string_view("oneOf"))
          if (auto pair = oneof_overlap(list, root_))
            throw Error("schema: oneOf branches " + *pair + " may both match one value, and exactly-one cannot be "
                        "enforced; oneOf is supported when its branches differ in type, in const/enum values, or in "
                        "the const value of a property both require (else use anyOf)");
        std::vector<Sequence> alts;
        for (const json& sub : list) alts.push_back({g_.ref(value(sub, depth + 1))});
        return g_.rule(std::move(alts));
      }
    if (s.contains("allOf")) {
      const json& list = s["allOf"];
      if (!list.is_array() || list.size() != 1) throw Error("schema: allOf is supported with one member only");
      return value(list[0], depth + 1);
    }
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) return typed(t.get<std::string>(), s, depth);
      if (!t.is_array() || t.empty()) throw Error("schema: type must be a string or a non-empty array");
      std::vector<Sequence> alts;
      for (const json& one : t) {
        if (!one.is_string()) throw Error("schema: type must list strings");
        alts.push_back({g_.ref(typed(one.get<std::string>(), s, depth))});
      }
      return g_.rule(std::move(alts));
    }
    if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required"))
      return typed("object", s, depth);
    if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return typed("array", s, depth);
    return any_value();
  }

  // $ref, anyOf, oneOf and allOf each compile on their own: an assertion
  // beside one (or a second of them) would be silently dropped and the output
  // could break it, so it is refused. Annotations (title, description,
  // default, $defs, ...) are fine there.
  static void check_combinator_alone(const json& s) {
    static const char* const kCombinators[] = {"$ref", "anyOf", "oneOf", "allOf"};
    static const char* const kAssertions[] = {"type", "properties", "required", "additionalProperties", "items",
                                              "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
                                              "exclusiveMinimum", "exclusiveMaximum", "const", "enum"};
    const char* combinator = nullptr;
    for (const char* c : kCombinators)
      if (s.contains(c)) {
        if (combinator)
          throw Error(std::string("schema: '") + c + "' beside '" + combinator + "' is not supported; nest one in the other");
        combinator = c;
      }
    if (!combinator) return;
    for (const char* a : kAssertions)
      if (s.contains(a))
        throw Error(std::string("schema: '") + a + "' beside '" + combinator +
                    "' is not supported (it would be ignored); move it into the referenced schema or each branch");
  }

  uint32_t any_object() {
    any_value();
    return any_object_;
  }

  uint32_t ws() {
    if (!ws_)
      ws_ = g_.rule({{}, {g_.byte(' ')}, {g_.byte('\n'), g_.ref(g_.repeat({g_.byte(' ')}, 0, 16))}});
    return *ws_;
  }

 private:
  uint32_t typed(const std::string& type, const json& s, int depth) {
    if (type == "string") return string_rule(s);
    if (type == "integer") return integer_rule(s);
    if (type == "number") return number_rule(s);
    if (type == "boolean") return g_.rule({g_.literal("true"), g_.literal("false")});
    if (type == "null") return g_.rule({g_.literal("null")});
    if (type == "object") return object_rule(s, depth);
    if (type == "array") return array_rule(s, depth);
    throw Error("schema: unknown type '" + type.substr(0, 64) + "'");
  }

  uint32_t reference(const json& ref, int depth) {
    if (!ref.is_string()) throw Error("schema: $ref must be a string");
    const std::string r = ref.get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return it->second;
    if (r.empty() || r[0] != '#') throw Error("schema: only local $ref (\"#...\") is supported");
    const json* target = &root_;
    if (r.size() > 1) {
      try {
        target = &root_.at(json::json_pointer(r.substr(1)));
      } catch (const std::exception&) {
        throw Error("schema: $ref '" + r.substr(0, 200) + "' points nowhere");
      }
    }
    // The rule exists before its body is compiled, so a schema may refer to itself.
    const uint32_t rule = g_.new_rule();
    refs_[r] = rule;
    g_.add_alternative(rule, {g_.ref(value(*target, depth + 1))});
    return rule;
  }

  static std::optional<int64_t> count(const json& s, const char* key) {
    if (!s.contains(key)) return std::nullopt;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) throw Error(std::string("schema: ") + key + " must be a non-negative integer");
    if (v.get<int64_t>() > kMaxRepeat)
      throw Error(std::string("schema: ") + key + " above " + std::to_string(kMaxRepeat) + " is not supported");
    return v.get<int64_t>();
  }

  uint32_t character() {
    if (char_) return *char_;
    ByteSet plain = range(0x20, 0x7f);
    plain.reset('"');
    plain.reset('\\');
    const Symbol cont = g_.bytes(range(0x80, 0xbf));
    const Symbol hex = g_.bytes(range('0', '9') | range('a', 'f') | range('A', 'F'));
    // \u escapes never name a UTF-16 surrogate: alone it would not parse.
    const uint32_t unicode = g_.rule({{g_.bytes(range('0', '9') | range('a', 'c') | range('A', 'C')), hex, hex, hex},
                                      {g_.bytes(range('d', 'd') | range('D', 'D')), g_.bytes(range('0', '7')), hex, hex},
                                      {g_.bytes(range('e', 'f') | range('E', 'F')), hex, hex, hex}});
    ByteSet escaped;
    for (char c : std::string("\"\\/bfnrt")) escaped.set(uint8_t(c));
    char_ = g_.rule({{g_.bytes(plain)},
                     // UTF-8, well formed: no overlong forms, no surrogates, nothing past U+10FFFF.
                     {g_.bytes(range(0xc2, 0xdf)), cont},
                     {g_.byte(0xe0), g_.bytes(range(0xa0, 0xbf)), cont},
                     {g_.bytes(range(0xe1, 0xec) | range(0xee, 0xef)), cont, cont},
                     {g_.byte(0xed), g_.bytes(range(0x80, 0x9f)), cont},
                     {g_.byte(0xf0), g_.bytes(range(0x90, 0xbf)), cont, cont},
                     {g_.bytes(range(0xf1, 0xf3)), cont, cont, cont},
                     {g_.byte(0xf4), g_.bytes(range(0x80, 0x8f)), cont, cont},
                     {g_.byte('\\'), g_.bytes(escaped)},
                     {g_.byte('\\'), g_.byte('u'), g_.ref(unicode)}});
    return *char_;
  }

  uint32_t string_rule(const json& s) {
    const int64_t min = count(s, "minLength").value_or(0);
    const auto max = count(s, "maxLength");
    if (max && *max < min) throw Error("schema: maxLength is below minLength");
    const std::pair<int64_t, int64_t> key{min, max.value_or(-1)};
    if (auto it = strings_.find(key); it != strings_.end()) return it->second;  // the same bounds, the same rule
    return strings_[key] = g_.rule({{g_.byte('"'), g_.ref(g_.repeat({g_.ref(character())}, int(min), int(key.second))), g_.byte('"')}});
  }

  // Digit strings from x to y, both of the same length: a rule per differing position.
  uint32_t digits(const std::string& x, const std::string& y) {
    const Symbol any = g_.bytes(range('0', '9'));
    const size_t n = x.size();
    if (n == 1) return g_.rule({{g_.bytes(range(x[0], y[0]))}});
    const std::string xr = x.substr(1), yr = y.substr(1);
    if (xr == std::string(n - 1, '0') && yr == std::string(n - 1, '9')) {  // every tail: one rule, no recursion
      Sequence seq{g_.bytes(range(x[0], y[0]))};
      for (size_t i = 1; i < n; ++i) seq.push_back(any);
      return g_.rule({std::move(seq)});
    }
    if (x[0] == y[0]) return g_.rule({{g_.byte(uint8_t(x[0])), g_.ref(digits(xr, yr))}});
    std::vector<Sequence> alts;
    alts.push_back({g_.byte(uint8_t(x[0])), g_.ref(digits(xr, std::string(n - 1, '9')))});
    if (x[0] + 1 <= y[0] - 1) {
      Sequence mid{g_.bytes(range(x[0] + 1, y[0] - 1))};
      for (size_t i = 1; i < n; ++i) mid.push_back(any);
      alts.push_back(std::move(mid));
    }
    alts.push_back({g_.byte(uint8_t(y[0])), g_.ref(digits(std::string(n - 1, '0'), yr))});
    return g_.rule(std::move(alts));
  }

  // Magnitudes a..b (0 <= a <= b) without leading zeros.
  std::vector<Sequence> magnitudes(int64_t a, int64_t b) {
    std::vector<Sequence> alts;
    int64_t low = 0;  // smallest number of the current digit count
    for (int64_t high = 9; low <= b; low = high + 1, high = high * 10 + 9) {
      const int64_t from = std::max(a, low), to = std::min(b, high);
      if (from <= to) alts.push_back({g_.ref(digits(std::to_string(from), std::to_string(to)))});
      if (high >= kMaxInteger) break;
    }
    return alts;
  }

  // Integers lo..hi, written the shortest way ("-" only before a non-zero magnitude).
  std::vector<Sequence> integers(int64_t lo, int64_t hi) {
    std::vector<Sequence> alts;
    if (hi >= 0)
      for (Sequence& s : magnitudes(std::max<int64_t>(lo, 0), hi)) alts.push_back(std::move(s));
    if (lo < 0) {
      const uint32_t neg = g_.rule(magnitudes(std::max<int64_t>(hi < 0 ? -hi : 1, 1), -lo));
      alts.push_back({g_.byte('-'), g_.ref(neg)});
    }
    return alts;
  }

  struct Bounds {
    int64_t lo = -kMaxInteger, hi = kMaxInteger;  // the integers inside the schema's bounds
  };
  static Bounds integer_bounds(const json& s) {
    Bounds b;
    auto number = [&](const char* key) -> std::optional<double> {
      if (!s.contains(key) || s[key].is_boolean()) return std::nullopt;
      if (!s[key].is_number()) throw Error(std::string("schema: ") + key + " must be a number");
      return s[key].get<double>();
    };
    auto flag = [&](const char* key) { return s.contains(key) && s[key].is_boolean() && s[key].get<bool>(); };
    auto clamp = [](double v) { return int64_t(std::max<double>(-kMaxInteger, std::min<double>(kMaxInteger, v))); };
    if (auto v = number("minimum")) {
      const double c = std::ceil(*v);
      b.lo = std::max(b.lo, clamp(flag("exclusiveMinimum") && c == *v ? c + 1 : c));  // draft 4's boolean form
    }
    if (auto v = number("exclusiveMinimum")) b.lo = std::max(b.lo, clamp(std::floor(*v) + 1));
    if (auto v = number("maximum")) {
      const double f = std::floor(*v);
      b.hi = std::min(b.hi, clamp(flag("exclusiveMaximum") && f == *v ? f - 1 : f));
    }
    if (auto v = number("exclusiveMaximum")) b.hi = std::min(b.hi, clamp(std::ceil(*v) - 1));
    return b;
  }
  static bool bounded(const json& s) {
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
      if (s.contains(k)) return true;
    return false;
  }

  uint32_t integer_rule(const json& s) {
    const Bounds b = integer_bounds(s);
    if (b.lo > b.hi) throw Error("schema: no integer lies within minimum and maximum");
    return g_.rule(integers(b.lo, b.hi));
  }

  uint32_t number_rule(const json& s) {
    const Symbol digit = g_.bytes(range('0', '9'));
    const uint32_t fraction = g_.rule({{g_.byte('.'), digit, g_.ref(g_.repeat({digit}, 0, 14))}});
    if (!bounded(s)) {
      const uint32_t exponent = g_.rule({{g_.bytes(range('e', 'e') | range('E', 'E')),
                                          g_.ref(g_.rule({{}, {g_.byte('+')}, {g_.byte('-')}})), digit,
                                          g_.ref(g_.repeat({digit}, 0, 2))}});
      const uint32_t magnitude = g_.rule(magnitudes(0, kMaxInteger));  // "-0.5" needs "-0"
      const uint32_t integer = g_.rule({{g_.ref(magnitude)}, {g_.byte('-'), g_.ref(magnitude)}});
      return g_.rule({{g_.ref(integer), g_.ref(g_.rule({{}, {g_.ref(fraction)}})), g_.ref(g_.rule({{}, {g_.ref(exponent)}}))}});
    }
    // Whole numbers within the bounds; a fraction only after an integer part where no
    // fraction can cross a bound: k.xxx lies in (k, k+1), -k.xxx in (-k-1, -k).
    const Bounds b = integer_bounds(s);
    if (b.lo > b.hi) throw Error("schema: minimum and maximum leave no room for a number ember can write (no integer between them)");
    std::vector<Sequence> alts = integers(b.lo, b.hi);
    if (std::max<int64_t>(b.lo, 0) <= b.hi - 1)
      alts.push_back({g_.ref(g_.rule(integers(std::max<int64_t>(b.lo, 0), b.hi - 1))), g_.ref(fraction)});
    if (b.lo + 1 <= std::min<int64_t>(b.hi, -1))
      alts.push_back({g_.ref(g_.rule(integers(b.lo + 1, std::min<int64_t>(b.hi, -1)))), g_.ref(fraction)});
    return g_.rule(std::move(alts));
  }

  // "key" ws ":" ws value
  Sequence member(const Sequence& key, uint32_t value_rule) {
    Sequence m = key;
    for (Symbol s : {g_.ref(ws()), g_.byte(':'), g_.ref(ws()), g_.ref(value_rule)}) m.push_back(s);
    return m;
  }
  Sequence comma() { return {g_.ref(ws()), g_.byte(','), g_.ref(ws())}; }

  uint32_t object_rule(const json& s, int depth) {
    struct Prop {
      std::string name;
      uint32_t rule;
      bool required;
    };
    std::vector<Prop> props;
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) throw Error("schema: required must be an array of names");
      for (const json& r : s["required"]) {
        if (!r.is_string()) throw Error("schema: required must be an array of names");
        required.insert(r.get<std::string>());
      }
    }
    if (s.contains("properties")) {
      const json& p = s["properties"];
      if (!p.is_object()) throw Error("schema: properties must be an object");
      for (auto it = p.begin(); it != p.end(); ++it)
        props.push_back({it.key(), value(it.value(), depth + 1), required.count(it.key()) > 0});
    }
    for (const std::string& r : required) {  // required names without a schema of their own
      bool listed = false;
      for (const Prop& p : props) listed = listed || p.name == r;
      if (!listed) props.push_back({r, any_value(), true});
    }
    std::optional<uint32_t> extra;  // the value rule of other properties, when allowed
    if (s.contains("additionalProperties")) {
      const json& a = s["additionalProperties"];
      if (!(a.is_boolean() && !a.get<bool>())) extra = value(a, depth + 1);
    }
    // members[i][first]: properties i.. in order, `first` when nothing was written before them.
    const size_t n = props.size();
    std::vector<std::array<uint32_t, 2>> members(n + 1);
    for (int first = 0; first < 2; ++first) {
      std::vector<Sequence> end{{}};
      if (extra) {
        const Sequence kv = member({g_.ref(any_string())}, *extra);
        Sequence more = comma();
        more.insert(more.end(), kv.begin(), kv.end());
        const uint32_t rest = g_.repeat(more, 0, -1);
        if (first) {
          Sequence seq = kv;
          seq.push_back(g_.ref(rest));
          end.push_back(std::move(seq));
        } else {
          end.push_back({g_.ref(rest)});
        }
      }
      members[n][size_t(first)] = g_.rule(std::move(end));
    }
    for (size_t i = n; i-- > 0;) {
      const Sequence kv = member(g_.literal(json(props[i].name).dump()), props[i].rule);
      for (int first = 0; first < 2; ++first) {
        Sequence with = first ? Sequence{} : comma();
        with.insert(with.end(), kv.begin(), kv.end());
        with.push_back(g_.ref(members[i + 1][0]));
        std::vector<Sequence> alts{std::move(with)};
        if (!props[i].required) alts.push_back({g_.ref(members[i + 1][size_t(first)])});
        members[i][size_t(first)] = g_.rule(std::move(alts));
      }
    }
    return g_.rule({{g_.byte('{'), g_.ref(ws()), g_.ref(members[0][1]), g_.ref(ws()), g_.byte('}')}});
  }

  uint32_t array_rule(const json& s, int depth) {
    const uint32_t item = s.contains("items") ? value(s["items"], depth + 1) : any_value();
    const int64_t min = count(s, "minItems").value_or(0);
    const auto max = count(s, "maxItems");
    if (max && *max < min) throw Error("schema: maxItems is below minItems");
    return array_of(item, min, max ? *max : -1);
  }

  uint32_t array_of(uint32_t item, int64_t min, int64_t max) {
    if (max == 0) return g_.rule({{g_.byte('['), g_.ref(ws()), g_.byte(']')}});
    Sequence more = comma();
    more.push_back(g_.ref(item));
    const uint32_t rest = g_.repeat(more, int(std::max<int64_t>(min - 1, 0)), max < 0 ? -1 : int(max - 1));
    const uint32_t body = g_.rule({{g_.ref(item), g_.ref(rest)}});
    const uint32_t inside = min == 0 ? g_.rule({{}, {g_.ref(body)}}) : body;
    return g_.rule({{g_.byte('['), g_.ref(ws()), g_.ref(inside), g_.ref(ws()), g_.byte(']')}});
  }

  uint32_t any_string() { return string_rule(json::object()); }

  // Any JSON value: built once, recursive through objects and arrays.
  uint32_t any_value() {
    if (any_) return *any_;
    any_ = g_.new_rule();
    const uint32_t kv = g_.rule({member({g_.ref(any_string())}, *any_)});
    Sequence more = comma();
    more.push_back(g_.ref(kv));
    const uint32_t members = g_.rule({{}, {g_.ref(kv), g_.ref(g_.repeat(more, 0, -1))}});
    any_object_ = g_.rule({{g_.byte('{'), g_.ref(ws()), g_.ref(members), g_.ref(ws()), g_.byte('}')}});
    const uint32_t array = array_of(*any_, 0, -1);
    const uint32_t number = number_rule(json::object());
    for (Sequence alt : std::vector<Sequence>{{g_.ref(any_object_)}, {g_.ref(array)}, {g_.ref(any_string())},
                                              {g_.ref(number)}, g_.literal("true"), g_.literal("false"), g_.literal("null")})
      g_.add_alternative(*any_, std::move(alt));
    return *any_;
  }

  GrammarBuilder& g_;
  const json& root_;
  std::map<std::string, uint32_t> refs_;
  std::map<std::pair<int64_t, int64_t>, uint32_t> strings_;  // (minLength, maxLength or -1) -> rule
  std::optional<uint32_t> ws_, char_, any_;
  uint32_t any_object_ = 0;
};

}  // namespace

Grammar json_schema_grammar(const json& schema, std::string_view prefix, std::string_view suffix) {
  GrammarBuilder g;
  SchemaCompiler c(g, schema);
  Sequence root = g.literal(prefix);
  root.push_back(g.ref(c.value(schema, 0)));
  for (Symbol s : g.literal(suffix)) root.push_back(s);
  return g.finish(g.rule({std::move(root)}));
}

Grammar json_object_grammar() {
  GrammarBuilder g;
  SchemaCompiler c(g, json::object());
  return g.finish(c.any_object());
}

}  // namespace ember::grammar
