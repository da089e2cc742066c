// Prompts of exact token lengths, as token ids for the target's tokenizer.
//
// With the model's tokenizer, a prompt is English-like text (words drawn from
// a fixed list, sentence by sentence) encoded and cut to the exact length,
// behind one leading token drawn without replacement from the vocabulary's
// ordinary tokens: no two documents of a run share even their first token,
// so a cold prompt finds nothing in a prefix cache (a token-exact cache would
// otherwise reuse a shared first word). Without a tokenizer the ids are drawn
// from [1000, 30000), ordinary tokens in every common vocabulary.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace ember {
class Tokenizer;
}

namespace ember::bench {

class PromptMaker {
 public:
  explicit PromptMaker(const Tokenizer* tok, uint64_t seed);

  // A document of exactly n tokens whose first token no earlier document had.
  std::vector<int32_t> document(int64_t n);
  // n tokens of text with no uniqueness rule (a question appended to a document).
  std::vector<int32_t> text(int64_t n);
  // A code-editing prompt (S9): a source file of about n tokens, a line asking
  // for it again with one change, and the start of that answer, so that a
  // model's answer repeats most of its input. Without a tokenizer: n ids, then
  // their first tenth again.
  std::vector<int32_t> edit(int64_t n);

  bool has_tokenizer() const { return tok_ != nullptr; }

 private:
  int32_t fresh_first();
  void append_sentence(std::vector<int32_t>& ids);

  const Tokenizer* tok_;
  std::mt19937_64 rng_;
  std::vector<int32_t> firsts_;  // shuffled candidates for first tokens
  size_t next_first_ = 0;
};

}  // namespace ember::bench
