#include "grammar/grammar_matcher.h"

#include <algorithm>

namespace ember::grammar {

namespace {
constexpr size_t kStepBudget = size_t(1) << 14;  // real JSON grammars expand a few dozen frames per byte
constexpr int kMaxDepth = 4096;                // frames one expansion may push (there is no left recursion)
constexpr size_t kMaxFrames = size_t(1) << 20;  // tables past these are rebuilt around the current state
constexpr size_t kMaxStates = size_t(1) << 14;  // (a state's step table is 1 KiB)
}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  budget_ = kStepBudget;
  std::vector<int32_t> tops;
  for (uint32_t start : g_->rules.at(g_->root)) expand(frame(start, kAccepted), tops, 0);
  current_ = intern(tops);
}

int32_t GrammarMatcher::frame(uint32_t pos, int32_t below) {
  const uint64_t key = (uint64_t(pos) << 32) | uint32_t(below);
  auto [it, added] = frame_ids_.emplace(key, int32_t(frames_.size()));
  if (added) frames_.push_back({pos, below});
  return it->second;
}

GrammarMatcher::State GrammarMatcher::intern(std::vector<int32_t>& tops) {
  if (tops.empty()) return kDead;
  std::sort(tops.begin(), tops.end());
  tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
  if (tops.size() > kMaxStacks) tops.resize(kMaxStacks);
  auto [it, added] = state_ids_.emplace(tops, State(states_.size()));
  if (added) {
    states_.push_back(tops);
    steps_.emplace_back();
    steps_.back().fill(kUnknown);
  }
  return it->second;
}

void GrammarMatcher::expand(int32_t top, std::vector<int32_t>& out, int depth) {
  for (;;) {
    if (budget_ == 0 || depth > kMaxDepth) return;
    --budget_;
    if (top == kAccepted) return out.push_back(kAccepted);
    const Frame f = frames_[size_t(top)];
    const Grammar::Element& e = g_->elements[f.pos];
    if (e.kind == Grammar::Kind::Bytes) return out.push_back(top);
    if (e.kind == Grammar::Kind::End) {  // this rule is done: continue in the frame below
      top = f.below;
      continue;
    }
    // A rule: its alternatives go on top of what follows it. When nothing
    // follows, the frame below is the continuation (right recursion stays shallow).
    const bool last = g_->elements[f.pos + 1].kind == Grammar::Kind::End;
    const int32_t after = last ? f.below : frame(f.pos + 1, f.below);
    const auto& alts = g_->rules[e.arg];
    for (size_t i = 0; i + 1 < alts.size(); ++i) expand(frame(alts[i], after), out, depth + 1);
    top = frame(alts.back(), after);
    ++depth;
  }
}

GrammarMatcher::State GrammarMatcher::step(State s, uint8_t byte) {
  if (s == kDead) return kDead;
  if (const State known = steps_[size_t(s)][byte]; known != kUnknown) return known;
  scratch_.clear();
  budget_ = kStepBudget;
  for (int32_t top : states_[size_t(s)]) {  // (a copy is not needed: expand never touches states_)
    if (top == kAccepted) continue;
    const Frame f = frames_[size_t(top)];
    if (g_->sets[g_->elements[f.pos].arg].test(byte)) expand(frame(f.pos + 1, f.below), scratch_, 0);
  }
  const State next = intern(scratch_);
  steps_[size_t(s)][byte] = next;
  return next;
}

bool GrammarMatcher::accepting(State s) const {
  if (s == kDead) return false;
  const auto& tops = states_[size_t(s)];
  return std::find(tops.begin(), tops.end(), kAccepted) != tops.end();
}

bool GrammarMatcher::advance(std::string_view bytes) {
  State s = current_;
  for (char c : bytes)
    if ((s = step(s, uint8_t(c))) == kDead) return false;
  current_ = s;
  if (frames_.size() > kMaxFrames || states_.size() > kMaxStates) reset_tables();
  return true;
}

void GrammarMatcher::reset_tables() {
  // Copies the current state's stacks into fresh tables; every other state is forgotten.
  std::vector<Frame> old;
  old.swap(frames_);
  frame_ids_.clear();
  std::vector<int32_t> tops = states_[size_t(current_)];
  states_.clear();
  state_ids_.clear();
  steps_.clear();
  std::vector<int32_t> chain;
  for (int32_t& t : tops) {
    chain.clear();
    for (int32_t f = t; f != kAccepted; f = old[size_t(f)].below) chain.push_back(f);
    int32_t below = kAccepted;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) below = frame(old[size_t(*it)].pos, below);
    t = below;
  }
  current_ = intern(tops);
}

}  // namespace ember::grammar
