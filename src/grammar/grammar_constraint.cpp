#include "grammar/grammar_constraint.h"

#include <algorithm>
#include <cmath>

namespace ember::grammar {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> trie)
    : trie_(std::move(trie)), matcher_(std::move(g)) {
  allowed_.resize(size_t(trie_->vocab()));
}

void GrammarConstraint::walk(uint32_t node, GrammarMatcher::State state) {
  const auto& nodes = trie_->nodes();
  for (uint32_t c = nodes[node].first_child; c; c = nodes[c].next_sibling) {
    const GrammarMatcher::State next = matcher_.step(state, nodes[c].byte);
    if (next == GrammarMatcher::kDead) continue;  // no token below this prefix can follow
    for (uint32_t i = nodes[c].tokens_begin; i < nodes[c].tokens_end; ++i) allowed_[size_t(trie_->token_ids()[i])] = 1;
    if (nodes[c].first_child) walk(c, next);
  }
}

void GrammarConstraint::fill_allowed() {
  std::fill(allowed_.begin(), allowed_.end(), 0);
  if (!failed_) {
    walk(0, matcher_.state());
    if (matcher_.can_end())
      for (int32_t id : trie_->end_of_generation()) allowed_[size_t(id)] = 1;
  }
}

std::vector<int32_t> GrammarConstraint::allowed() {
  fill_allowed();
  std::vector<int32_t> ids;
  for (size_t i = 0; i < allowed_.size(); ++i)
    if (allowed_[i]) ids.push_back(int32_t(i));
  return ids;
}

void GrammarConstraint::mask(float* logits, int64_t vocab) {
  fill_allowed();
  // Ids past the tokenizer's vocabulary (embedding padding) are never allowed.
  for (int64_t i = 0; i < vocab; ++i)
    if (i >= int64_t(allowed_.size()) || !allowed_[size_t(i)]) logits[i] = -INFINITY;
}

void GrammarConstraint::accept(int32_t id) {
  if (failed_ || id < 0 || id >= trie_->vocab()) {
    failed_ = true;
    return;
  }
  const auto& eog = trie_->end_of_generation();
  if (std::find(eog.begin(), eog.end(), id) != eog.end()) return;  // the answer ends here
  const std::string& bytes = trie_->bytes_of(id);
  if (bytes.empty() || !matcher_.advance(bytes)) failed_ = true;  // next mask lets nothing through: the request fails
}

ConstraintFactory grammar_constraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> trie) {
  return [g = std::move(g), trie = std::move(trie)]() -> std::unique_ptr<TokenConstraint> {
    return std::make_unique<GrammarConstraint>(g, trie);
  };
}

}  // namespace ember::grammar
