// Runs a Grammar over bytes, keeping every way the input read so far can
// continue: a set of parse stacks (the grammar may be ambiguous, e.g. anyOf).
//
// A stack is a chain of frames; a frame is a position in the grammar's
// elements and the frame below it. Frames are interned (one id per distinct
// position and frame below), so equal stacks have equal ids, and so are
// stack sets ("states"). A state stepped by a byte is memoised: inside a JSON
// string, reading another letter leads back to the very same state, so the
// token mask's walk over the vocabulary trie is mostly table lookups.
//
// Every live stack's top is a byte set (rules are expanded as soon as they are
// reached); the stack that has finished the root is kAccepted.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace ember::grammar {

class GrammarMatcher {
 public:
  using State = int32_t;
  static constexpr State kDead = -1;  // no stack left: the bytes were refused
  static constexpr State kUnknown = -2;  // a step not computed yet
  static constexpr int32_t kAccepted = -1;  // as a stack top: the root is complete
  static constexpr size_t kMaxStacks = 256;  // ambiguity past this keeps the first ones (each still valid)

  explicit GrammarMatcher(std::shared_ptr<const Grammar> g);

  // Feeds bytes for good; false (and no change) when the grammar rejects them.
  bool advance(std::string_view bytes);
  bool can_end() const { return accepting(current_); }  // the input so far is a whole sentence
  State state() const { return current_; }

  // For the token mask: where `s` goes on `byte` (kDead when nowhere), without committing.
  State step(State s, uint8_t byte);
  bool accepting(State s) const;

 private:
  struct Frame {
    uint32_t pos;   // the next element to match
    int32_t below;  // frame underneath, or kAccepted at the bottom
  };
  int32_t frame(uint32_t pos, int32_t below);
  State intern(std::vector<int32_t>& tops);  // sorts and dedupes `tops`
  void expand(int32_t top, std::vector<int32_t>& out, int depth);  // adds `top`'s ready stacks to out
  void reset_tables();  // forgets everything but the current state (bounds memory)

  std::shared_ptr<const Grammar> g_;
  std::vector<Frame> frames_;
  std::unordered_map<uint64_t, int32_t> frame_ids_;
  std::vector<std::vector<int32_t>> states_;  // each state's stack tops, sorted
  std::map<std::vector<int32_t>, State> state_ids_;
  std::vector<std::array<State, 256>> steps_;  // per state and byte: the next state, kUnknown until computed
  State current_ = kDead;
  std::vector<int32_t> scratch_;
  size_t budget_ = 0;  // expansions left in this step: an ambiguous grammar cannot make a step explode
};

}  // namespace ember::grammar
