// A context-free grammar over bytes: what the JSON-schema compiler builds and
// the matcher runs. Each rule is a list of alternatives; an alternative is a
// sequence of byte sets and references to rules. Working on bytes, not
// characters, lets a token that ends inside a UTF-8 character be matched.
//
// GrammarBuilder::finish refuses left recursion (a rule that can reach itself
// before reading a byte), so the matcher's expansion always ends.
#pragma once
#include <bitset>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ember::grammar {

using ByteSet = std::bitset<256>;

struct Grammar {
  enum class Kind : uint8_t { Bytes, Rule, End };
  struct Element {
    Kind kind;
    uint32_t arg;  // Bytes: index into `sets`; Rule: rule id; End: unused
  };
  std::vector<Element> elements;             // every alternative's run of elements, each closed by End
  std::vector<std::vector<uint32_t>> rules;  // per rule: where each alternative starts in `elements`
  std::vector<ByteSet> sets;
  uint32_t root = 0;
};

// One item of an alternative while building: a byte set or a rule.
struct Symbol {
  bool is_rule = false;
  uint32_t id = 0;  // rule id, or index of the byte set
};
using Sequence = std::vector<Symbol>;

class GrammarBuilder {
 public:
  uint32_t new_rule();  // an empty rule, to be given alternatives later (allows recursion)
  void add_alternative(uint32_t rule, Sequence seq);
  uint32_t rule(std::vector<Sequence> alternatives);  // a new rule with these alternatives

  Symbol bytes(const ByteSet& set);
  Symbol byte(uint8_t b);
  Symbol ref(uint32_t rule) const { return {true, rule}; }
  Sequence literal(std::string_view text);
  // `item` repeated min..max times (max < 0: no upper bound), as right-recursive rules.
  uint32_t repeat(const Sequence& item, int min, int max);

  // Throws ember::Error for a rule without alternatives or left recursion.
  Grammar finish(uint32_t root) const;

 private:
  std::vector<std::vector<Sequence>> rules_;
  std::vector<ByteSet> sets_;
  std::map<std::string, uint32_t> set_ids_;  // a set's bits as text -> its index (equal sets shared)
};

}  // namespace ember::grammar
