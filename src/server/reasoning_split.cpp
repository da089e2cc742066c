#include "server/reasoning_split.h"

#include <string_view>

#include "server/partial_tag.h"

namespace ember::server {

namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";

}  // namespace

SplitText ReasoningSplitter::push(const std::string& text) {
  held_ += text;
  return route(false);
}

SplitText ReasoningSplitter::finish() { return route(true); }

SplitText ReasoningSplitter::route(bool at_end) {
  SplitText out;
  for (;;) {
    if (state_ == State::Start) {
      // Reasoning only counts when the answer opens with it (whitespace aside).
      const size_t first = held_.find_first_not_of(" \t\r\n");
      if (first == std::string::npos) {
        if (!at_end) return out;
        state_ = State::Answer;
        continue;
      }
      std::string_view rest = std::string_view(held_).substr(first);
      if (rest.starts_with(kOpen)) {
        held_.erase(0, first + kOpen.size());
        state_ = State::Thinking;
        continue;
      }
      if (!at_end && kOpen.starts_with(rest)) return out;  // "<thi": wait for more
      state_ = State::Answer;
      continue;
    }
    if (state_ == State::Thinking) {
      const size_t close = held_.find(kClose);
      if (close != std::string::npos) {
        out.reasoning += held_.substr(0, close);
        held_.erase(0, close + kClose.size());
        state_ = State::Answer;
        trim_newlines_ = true;
        continue;
      }
      const size_t keep = at_end ? 0 : partial_tag_suffix(held_, kClose);
      out.reasoning += held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    if (trim_newlines_) {  // the blank line a model writes after </think> separates, it is not part of the answer
      const size_t text = held_.find_first_not_of("\r\n");
      held_.erase(0, text == std::string::npos ? held_.size() : text);
      if (held_.empty()) return out;
      trim_newlines_ = false;
    }
    out.content += held_;
    held_.clear();
    return out;
  }
}

SplitText split_reasoning(const std::string& text) {
  ReasoningSplitter s;
  SplitText a = s.push(text), b = s.finish();
  return {a.reasoning + b.reasoning, a.content + b.content};
}

}  // namespace ember::server
