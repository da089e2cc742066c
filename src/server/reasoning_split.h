// Separates a model's reasoning from its answer in streamed text: what a
// Qwen3-style model writes between <think> and </think> at the start of its
// answer is reasoning (OpenAI "reasoning_content", Anthropic "thinking"
// blocks), the rest is the answer. Text that might be the start of a tag is
// held back until the next piece decides it.
#pragma once
#include <string>

namespace ember::server {

struct SplitText {
  std::string reasoning, content;
};

class ReasoningSplitter {
 public:
  SplitText push(const std::string& text);
  SplitText finish();  // what was held back, at the end of generation

 private:
  enum class State { Start, Thinking, Answer };
  SplitText route(bool at_end);
  State state_ = State::Start;
  std::string held_;
  bool trim_newlines_ = false;  // just after </think>
};

// A whole answer at once.
SplitText split_reasoning(const std::string& text);

}  // namespace ember::server
