#include "grammar/grammar_matcher.h"

#include <algorithm>

namespace ember::grammar {

namespace {
constexpr size_t kStepBudget = size_t(1) << 16;
constexpr int kMaxDepth = 4096;  // frames deep one expansion may go (the grammar has no left recursion)
}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  frames_.reserve(1024);
  budget_ = kStepBudget;
  const auto& alts = g_->rules.at(g_->root);
  for (uint32_t start : alts) expand(push(start, kAccepted), current_, 0);
}

int32_t GrammarMatcher::push(uint32_t pos, int32_t below) {
  frames_.push_back({pos, below});
  return int32_t(frames_.size() - 1);
}

bool GrammarMatcher::same(int32_t a, int32_t b) const {
  while (a != b) {
    if (a == kAccepted || b == kAccepted) return false;
    if (frames_[size_t(a)].pos != frames_[size_t(b)].pos) return false;
    a = frames_[size_t(a)].below;
    b = frames_[size_t(b)].below;
  }
  return true;
}

void GrammarMatcher::add_unique(int32_t top, Stacks& out) const {
  if (out.size() >= kMaxStacks) return;
  for (int32_t t : out)
    if (same(t, top)) return;
  out.push_back(top);
}

void GrammarMatcher::expand(int32_t top, Stacks& out, int depth) {
  for (;;) {
    if (budget_ == 0 || depth > kMaxDepth) return;
    --budget_;
    if (top == kAccepted) return add_unique(kAccepted, out);
    const Frame f = frames_[size_t(top)];
    const Grammar::Element& e = g_->elements[f.pos];
    if (e.kind == Grammar::Kind::Bytes) return add_unique(top, out);
    if (e.kind == Grammar::Kind::End) {  // this rule is done: continue in the frame below
      top = f.below;
      continue;
    }
    // A rule: its alternatives go on top of what follows it. When nothing
    // follows, the frame below is the continuation (right recursion stays shallow).
    const bool last = g_->elements[f.pos + 1].kind == Grammar::Kind::End;
    const int32_t after = last ? f.below : push(f.pos + 1, f.below);
    const auto& alts = g_->rules[e.arg];
    for (size_t i = 0; i + 1 < alts.size(); ++i) expand(push(alts[i], after), out, depth + 1);
    top = push(alts.back(), after);
    ++depth;
  }
}

void GrammarMatcher::try_byte(const Stacks& from, uint8_t byte, Stacks& to) {
  to.clear();
  budget_ = kStepBudget;
  for (int32_t top : from) {
    if (top == kAccepted) continue;
    const Frame f = frames_[size_t(top)];
    if (!g_->sets[g_->elements[f.pos].arg].test(byte)) continue;
    expand(push(f.pos + 1, f.below), to, 0);
  }
}

bool GrammarMatcher::has_accepted(const Stacks& s) { return std::find(s.begin(), s.end(), kAccepted) != s.end(); }

bool GrammarMatcher::advance(std::string_view bytes) {
  const size_t start = mark();
  Stacks state = current_;
  for (char c : bytes) {
    try_byte(state, uint8_t(c), scratch_);
    if (scratch_.empty()) {
      rewind(start);
      return false;
    }
    state.swap(scratch_);
  }
  current_.swap(state);
  compact();
  return true;
}

bool GrammarMatcher::can_end() const { return has_accepted(current_); }

bool GrammarMatcher::can_continue() const {
  return std::any_of(current_.begin(), current_.end(), [](int32_t t) { return t != kAccepted; });
}

void GrammarMatcher::compact() {
  // Copies the frames the current stacks reach into a fresh arena, bottoms first.
  std::vector<Frame> kept;
  kept.reserve(std::max<size_t>(frames_.capacity(), 1024));
  remap_.assign(frames_.size(), -2);
  std::vector<int32_t> chain;
  for (int32_t& t : current_) {
    // The frames of this stack not copied yet, top first; then copied bottom first.
    chain.clear();
    for (int32_t f = t; f != kAccepted && remap_[size_t(f)] == -2; f = frames_[size_t(f)].below) chain.push_back(f);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const int32_t below = frames_[size_t(*it)].below;
      kept.push_back({frames_[size_t(*it)].pos, below == kAccepted ? kAccepted : remap_[size_t(below)]});
      remap_[size_t(*it)] = int32_t(kept.size() - 1);
    }
    if (t != kAccepted) t = remap_[size_t(t)];
  }
  frames_.swap(kept);
}

}  // namespace ember::grammar
