#include "grammar/schema_disjoint.h"

#include <cmath>
#include <vector>

namespace ember::grammar {

namespace {

using json = nlohmann::ordered_json;

// JSON kinds, one bit each; a number is "whole" when its value is an integer (JSON Schema's integer).
enum Kind : unsigned { Null = 1, Boolean = 2, Whole = 4, Fraction = 8, String = 16, Array = 32, Object = 64 };
constexpr unsigned kAnyKind = 127;
constexpr int kMaxDepth = 16;          // deeper $ref / combinator chains count as "anything"
// Comparisons (value pairs, required-list entries, branch pairs) per oneOf, at
// most: past it the branches count as overlapping and the oneOf is refused,
// so one request cannot buy quadratic time with many large branches.
constexpr size_t kMaxWork = 2000000;
// Schemas looked at per oneOf: past it every shape is "anything" (so the oneOf is
// refused), which bounds the work of a schema whose $refs and anyOfs fan out.
constexpr int kMaxShapes = 20000;

unsigned kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return Null;
    case json::value_t::boolean: return Boolean;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return Whole;
    case json::value_t::number_float: {
      const double d = v.get<double>();
      return std::isfinite(d) && d == std::floor(d) ? Whole : Fraction;
    }
    case json::value_t::string: return String;
    case json::value_t::array: return Array;
    default: return Object;
  }
}

unsigned kinds_of_type(const std::string& t) {
  if (t == "null") return Null;
  if (t == "boolean") return Boolean;
  if (t == "integer") return Whole;
  if (t == "number") return Whole | Fraction;
  if (t == "string") return String;
  if (t == "array") return Array;
  if (t == "object") return Object;
  return kAnyKind;  // unknown: the compiler refuses it anyway
}

// What a schema allows, over-approximated: the kinds, and the values when const / enum list them.
struct Shape {
  unsigned kinds = kAnyKind;
  bool finite = false;
  std::vector<const json*> values;  // when finite
};

class Analyser {
 public:
  explicit Analyser(const json& root) : root_(root) {}

  // Counts n steps of work; false once the budget is spent.
  bool spend(size_t n) const {
    work_ += n;
    return work_ <= kMaxWork;
  }

  // The schema `s` after following $ref (nullptr when it cannot be followed).
  const json* resolve(const json* s, int depth) const {
    while (s && s->is_object() && s->contains("$ref")) {
      if (++depth > kMaxDepth) return nullptr;
      const json& ref = (*s)["$ref"];
      if (!ref.is_string()) return nullptr;
      const std::string r = ref.get<std::string>();
      if (r.empty() || r[0] != '#') return nullptr;
      try {
        s = r.size() > 1 ? &root_.at(json::json_pointer(r.substr(1))) : &root_;
      } catch (const std::exception&) {
        return nullptr;
      }
    }
    return s;
  }

  Shape shape(const json& schema, int depth) const {
    Shape out;
    if (++shapes_ > kMaxShapes) return out;
    const json* s = depth > kMaxDepth ? nullptr : resolve(&schema, depth);
    if (!s) return out;
    if (s->is_boolean()) {
      if (!s->get<bool>()) out.kinds = 0, out.finite = true;
      return out;
    }
    if (!s->is_object()) return out;
    if (const auto it = s->find("type"); it != s->end()) {
      if (it->is_string()) out.kinds = kinds_of_type(it->get<std::string>());
      else if (it->is_array()) {
        unsigned k = 0;
        for (const json& t : *it) k |= t.is_string() ? kinds_of_type(t.get<std::string>()) : kAnyKind;
        out.kinds = k;
      }
    }
    if (const auto it = s->find("enum"); it != s->end() && it->is_array())
      meet_values(out, [&] {
        std::vector<const json*> v;
        for (const json& e : *it) v.push_back(&e);
        return v;
      }());
    if (const auto it = s->find("const"); it != s->end()) meet_values(out, {&*it});
    for (const char* key : {"anyOf", "oneOf"})
      if (const auto it = s->find(key); it != s->end() && it->is_array() && !it->empty()) {
        Shape u;
        u.kinds = 0;
        u.finite = true;
        for (const json& b : *it) {
          Shape bs = shape(b, depth + 1);
          u.kinds |= bs.kinds;
          u.finite = u.finite && bs.finite;
          u.values.insert(u.values.end(), bs.values.begin(), bs.values.end());
        }
        if (!u.finite) u.values.clear();
        meet(out, u);
      }
    if (const auto it = s->find("allOf"); it != s->end() && it->is_array())
      for (const json& b : *it) meet(out, shape(b, depth + 1));
    return out;
  }

  // True when no value can match both `a` and `b` (with shapes sa and sb).
  bool disjoint(const json& a, const Shape& sa, const json& b, const Shape& sb) const {
    const unsigned common = sa.kinds & sb.kinds;
    if (common == 0) return true;
    if (sa.finite && sb.finite && values_disjoint(sa.values, sb.values)) return true;
    return common == Object && discriminated(a, b);
  }

 private:
  // Keeps the values of `v` that the shape's kinds allow; the shape becomes finite.
  static void meet_values(Shape& s, const std::vector<const json*>& v) {
    std::vector<const json*> kept;
    unsigned kinds = 0;
    for (const json* x : v)
      if (s.kinds & kind_of(*x)) {
        if (!s.finite || contains(s.values, *x)) kept.push_back(x), kinds |= kind_of(*x);
      }
    s.finite = true;
    s.values = std::move(kept);
    s.kinds = kinds;
  }

  static void meet(Shape& s, const Shape& t) {
    s.kinds &= t.kinds;
    if (t.finite) meet_values(s, t.values);
  }

  static bool contains(const std::vector<const json*>& v, const json& x) {
    for (const json* y : v)
      if (*y == x) return true;  // nlohmann compares numbers by value: 1 == 1.0
    return false;
  }


  bool values_disjoint(const std::vector<const json*>& a, const std::vector<const json*>& b) const {
    if (!spend(a.size() * b.size())) return false;
    for (const json* x : a)
      if (contains(b, *x)) return false;
    return true;
  }

  // A property that both (object) schemas require, with const / enum values that share none.
  bool discriminated(const json& a, const json& b) const {
    const json* ra = resolve(&a, 0);
    const json* rb = resolve(&b, 0);
    if (!ra || !rb || !ra->is_object() || !rb->is_object()) return false;
    // With additional properties allowed, a branch may repeat the discriminator
    // as an extra member ({"kind": "a", "kind": "b"}), and parsers keep the last.
    for (const json* r : {ra, rb})
      if (const auto ap = r->find("additionalProperties"); ap != r->end() && *ap != false) return false;
    const auto required = [this](const json& s, const std::string& name) {
      const auto it = s.find("required");
      if (it == s.end() || !it->is_array() || !spend(it->size())) return false;
      for (const json& r : *it)
        if (r == name) return true;
      return false;
    };
    const auto pa = ra->find("properties"), pb = rb->find("properties");
    if (pa == ra->end() || pb == rb->end() || !pa->is_object() || !pb->is_object()) return false;
    for (auto it = pa->begin(); it != pa->end(); ++it) {
      const auto other = pb->find(it.key());
      if (other == pb->end() || !required(*ra, it.key()) || !required(*rb, it.key())) continue;
      const Shape x = shape(it.value(), 1), y = shape(*other, 1);
      if ((x.kinds & y.kinds) == 0 || (x.finite && y.finite && values_disjoint(x.values, y.values))) return true;
    }
    return false;
  }

  const json& root_;
  mutable int shapes_ = 0;
  mutable size_t work_ = 0;
};

}  // namespace

std::optional<std::string> oneof_overlap(const json& branches, const json& root) {
  const Analyser an(root);
  std::vector<Shape> shapes;
  for (const json& b : branches) shapes.push_back(an.shape(b, 0));
  for (size_t i = 0; i < branches.size(); ++i)
    for (size_t j = i + 1; j < branches.size(); ++j)
      if (!an.spend(1) || !an.disjoint(branches[i], shapes[i], branches[j], shapes[j]))
        return std::to_string(i) + " and " + std::to_string(j);
  return std::nullopt;
}

}  // namespace ember::grammar
