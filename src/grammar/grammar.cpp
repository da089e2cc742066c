#include "grammar/grammar.h"

#include "util/error.h"

namespace ember::grammar {

namespace {
// Schemas come from clients: one that multiplies out into millions of rules is refused, not built.
constexpr size_t kMaxRules = size_t(1) << 18;
}  // namespace

uint32_t GrammarBuilder::new_rule() {
  if (rules_.size() >= kMaxRules) throw Error("grammar: too large (over " + std::to_string(kMaxRules) + " rules)");
  rules_.emplace_back();
  return uint32_t(rules_.size() - 1);
}

void GrammarBuilder::add_alternative(uint32_t rule, Sequence seq) { rules_.at(rule).push_back(std::move(seq)); }

uint32_t GrammarBuilder::rule(std::vector<Sequence> alternatives) {
  const uint32_t r = new_rule();
  rules_[r] = std::move(alternatives);
  return r;
}

Symbol GrammarBuilder::bytes(const ByteSet& set) {
  auto [it, added] = set_ids_.emplace(set.to_string(), uint32_t(sets_.size()));
  if (added) sets_.push_back(set);
  return {false, it->second};
}

Symbol GrammarBuilder::byte(uint8_t b) {
  ByteSet s;
  s.set(b);
  return bytes(s);
}

Sequence GrammarBuilder::literal(std::string_view text) {
  Sequence seq;
  for (char c : text) seq.push_back(byte(uint8_t(c)));
  return seq;
}

uint32_t GrammarBuilder::repeat(const Sequence& item, int min, int max) {
  // The optional tail first: tail_k = "" | item tail_(k-1), or tail = "" | item tail when unbounded.
  uint32_t tail = new_rule();
  if (max < 0) {
    Sequence again = item;
    again.push_back(ref(tail));
    add_alternative(tail, {});
    add_alternative(tail, std::move(again));
  } else {
    add_alternative(tail, {});
    for (int k = min; k < max; ++k) {
      Sequence more = item;
      more.push_back(ref(tail));
      tail = rule({{}, std::move(more)});
    }
  }
  // Then the required items in front of it.
  Sequence seq;
  for (int k = 0; k < min; ++k) seq.insert(seq.end(), item.begin(), item.end());
  seq.push_back(ref(tail));
  return rule({std::move(seq)});
}

Grammar GrammarBuilder::finish(uint32_t root) const {
  const size_t n = rules_.size();
  if (root >= n) throw Error("grammar: no root rule");
  for (size_t r = 0; r < n; ++r)
    if (rules_[r].empty()) throw Error("grammar: rule " + std::to_string(r) + " has no alternatives");

  // Which rules can match the empty string (a fixpoint), then which rules each rule can start with.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : rules_[r]) {
        bool all = true;
        for (const Symbol& s : alt) all = all && s.is_rule && nullable[s.id];
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<uint32_t>> starts(n);
  for (size_t r = 0; r < n; ++r)
    for (const Sequence& alt : rules_[r])
      for (const Symbol& s : alt) {
        if (!s.is_rule) break;
        starts[r].push_back(s.id);
        if (!nullable[s.id]) break;
      }
  // A cycle among "starts with" edges is left recursion: iterative depth-first search, white/grey/black.
  std::vector<uint8_t> color(n, 0);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (size_t r0 = 0; r0 < n; ++r0) {
    if (color[r0]) continue;
    stack.push_back({uint32_t(r0), 0});
    color[r0] = 1;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == starts[r].size()) {
        color[r] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t to = starts[r][next++];
      if (color[to] == 1) throw Error("grammar: left recursion (a rule can reach itself before reading anything)");
      if (color[to] == 0) {
        color[to] = 1;
        stack.push_back({to, 0});
      }
    }
  }

  Grammar g;
  g.sets = sets_;
  g.root = root;
  g.rules.resize(n);
  for (size_t r = 0; r < n; ++r)
    for (const Sequence& alt : rules_[r]) {
      g.rules[r].push_back(uint32_t(g.elements.size()));
      for (const Symbol& s : alt)
        g.elements.push_back({s.is_rule ? Grammar::Kind::Rule : Grammar::Kind::Bytes, s.id});
      g.elements.push_back({Grammar::Kind::End, 0});
    }
  return g;
}

}  // namespace ember::grammar
