// Runs a Grammar over bytes, keeping every way the input read so far can
// continue: a set of parse stacks (the grammar may be ambiguous, e.g. anyOf).
//
// A stack is a chain of frames in an arena; a frame is a position in the
// grammar's elements and the frame below it, so stacks share their common
// bottoms and a step copies nothing. Every live stack's top is a byte set
// (rules are expanded as soon as they are reached); the stack that has
// finished the root is kept as kAccepted.
//
// Two uses: feed the bytes of an accepted token for good (advance), and try
// a byte on top of the current state without committing (try_byte + rewind),
// which is how the token mask walks the vocabulary's trie.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace ember::grammar {

class GrammarMatcher {
 public:
  using Stacks = std::vector<int32_t>;  // tops of stacks: frame ids, or kAccepted
  static constexpr int32_t kAccepted = -1;
  static constexpr size_t kMaxStacks = 256;  // ambiguity past this keeps the first ones (each still valid)

  explicit GrammarMatcher(std::shared_ptr<const Grammar> g);

  // Feeds bytes for good; false (and no change) when the grammar rejects them.
  bool advance(std::string_view bytes);
  bool can_end() const;            // the input so far is a whole sentence of the grammar
  bool can_continue() const;       // some byte may still follow
  const Stacks& stacks() const { return current_; }

  // Trial steps for the token mask: `from` stepped by `byte` into `to` (cleared
  // first); frames they create are dropped by rewind(mark()).
  void try_byte(const Stacks& from, uint8_t byte, Stacks& to);
  size_t mark() const { return frames_.size(); }
  void rewind(size_t mark) { frames_.resize(mark); }
  static bool has_accepted(const Stacks& s);

 private:
  struct Frame {
    uint32_t pos;    // the next element to match
    int32_t below;   // frame underneath, or kAccepted at the bottom
  };
  int32_t push(uint32_t pos, int32_t below);
  void expand(int32_t top, Stacks& out, int depth);  // adds `top`'s ready stacks (tops on byte sets) to out
  void add_unique(int32_t top, Stacks& out) const;
  bool same(int32_t a, int32_t b) const;
  void compact();  // drops frames no current stack uses

  std::shared_ptr<const Grammar> g_;
  std::vector<Frame> frames_;
  Stacks current_, scratch_;
  std::vector<int32_t> remap_;
  size_t budget_ = 0;  // expansions left in this step: an ambiguous grammar cannot make a step explode
};

}  // namespace ember::grammar
