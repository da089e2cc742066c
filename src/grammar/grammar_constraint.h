// The engine hook for grammars: a TokenConstraint that lets through exactly
// the tokens whose bytes the grammar can read next, and end-of-generation
// tokens once the grammar may end. When the grammar is complete and can read
// nothing more, only end-of-generation is left, so the answer stops there.
#pragma once
#include <memory>
#include <vector>

#include "engine/token_constraint.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_trie.h"

namespace ember::grammar {

class GrammarConstraint : public TokenConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> trie);
  void mask(float* logits, int64_t vocab) override;
  void accept(int32_t id) override;
  // The ids mask() would let through, ascending (tests).
  std::vector<int32_t> allowed();

 private:
  void fill_allowed();
  void walk(uint32_t node, GrammarMatcher::State state);  // marks the tokens below `node` the grammar accepts
  std::shared_ptr<const TokenTrie> trie_;
  GrammarMatcher matcher_;
  std::vector<uint8_t> allowed_;                       // per id, filled by walk
  bool failed_ = false;                                // a token the grammar rejects was accepted
};

// A factory for GenerationRequest::constraint: each sequence gets its own matcher.
ConstraintFactory grammar_constraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> trie);

}  // namespace ember::grammar
