#include "bench/prompts.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember::bench {

namespace {

const char* const kWords[] = {
    "the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are", "as", "with",
    "his", "they", "at", "be", "this", "have", "from", "or", "one", "had", "by", "word", "but", "not", "what", "all",
    "were", "we", "when", "your", "can", "said", "there", "use", "an", "each", "which", "she", "do", "how", "their",
    "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so", "some", "her", "would",
    "make", "like", "him", "into", "time", "has", "look", "two", "more", "write", "go", "see", "number", "no", "way",
    "could", "people", "my", "than", "first", "water", "been", "call", "who", "oil", "its", "now", "find", "long",
    "down", "day", "did", "get", "come", "made", "may", "part", "over", "new", "sound", "take", "only", "little",
    "work", "know", "place", "year", "live", "me", "back", "give", "most", "very", "after", "thing", "our", "just",
    "name", "good", "sentence", "man", "think", "say", "great", "where", "help", "through", "much", "before", "line",
    "right", "too", "mean", "old", "any", "same", "tell", "boy", "follow", "came", "want", "show", "also", "around",
    "form", "three", "small", "set", "put", "end", "does", "another", "well", "large", "must", "big", "even", "such",
    "because", "turn", "here", "why", "ask", "went", "men", "read", "need", "land", "different", "home", "us", "move",
    "try", "kind", "hand", "picture", "again", "change", "off", "play", "spell", "air", "away", "animal", "house",
    "point", "page", "letter", "mother", "answer", "found", "study", "still", "learn", "should", "America", "world",
    "memory", "bandwidth", "kernel", "cache", "server", "engine", "token", "matrix", "river", "mountain", "garden"};

constexpr int32_t kPlainLo = 1000, kPlainHi = 30000;  // ids used without a tokenizer

}  // namespace

PromptMaker::PromptMaker(const Tokenizer* tok, uint64_t seed) : tok_(tok), rng_(seed) {
  if (tok_) {
    for (int32_t id = 0; id < tok_->vocab_size(); ++id)
      if (!tok_->is_special(id) && !tok_->is_end_of_generation(id) && !tok_->token_text(id).empty()) firsts_.push_back(id);
  } else {
    for (int32_t id = kPlainLo; id < kPlainHi; ++id) firsts_.push_back(id);
  }
  if (firsts_.empty()) throw Error("bench: the tokenizer has no ordinary tokens to start prompts with");
  std::shuffle(firsts_.begin(), firsts_.end(), rng_);
}

int32_t PromptMaker::fresh_first() {
  if (next_first_ == firsts_.size()) throw Error("bench: ran out of distinct first tokens for cold prompts");
  return firsts_[next_first_++];
}

void PromptMaker::append_sentence(std::vector<int32_t>& ids) {
  const size_t n_words = sizeof(kWords) / sizeof(kWords[0]);
  if (!tok_) {
    std::uniform_int_distribution<int32_t> pick(kPlainLo, kPlainHi - 1);
    for (int i = 0; i < 16; ++i) ids.push_back(pick(rng_));
    return;
  }
  std::string s;
  const int len = 6 + int(rng_() % 14);
  for (int i = 0; i < len; ++i) {
    std::string w = kWords[rng_() % n_words];
    if (i == 0 && w[0] >= 'a' && w[0] <= 'z') w[0] = char(w[0] - 'a' + 'A');
    s += ' ';
    s += w;
  }
  s += (rng_() % 5 == 0) ? "?" : ".";
  const std::vector<int32_t> t = tok_->encode(s, /*add_special=*/false, /*parse_special=*/false);
  ids.insert(ids.end(), t.begin(), t.end());
}

std::vector<int32_t> PromptMaker::text(int64_t n) {
  std::vector<int32_t> ids;
  ids.reserve(size_t(std::max<int64_t>(n, 0)) + 64);
  while (int64_t(ids.size()) < n) append_sentence(ids);
  ids.resize(size_t(std::max<int64_t>(n, 0)));
  return ids;
}

std::vector<int32_t> PromptMaker::edit(int64_t n) {
  if (!tok_) {
    std::vector<int32_t> ids = document(std::max<int64_t>(n, 10));
    ids.insert(ids.end(), ids.begin(), ids.begin() + ids.size() / 10);
    return ids;
  }
  const size_t n_words = sizeof(kWords) / sizeof(kWords[0]);
  auto word = [&] {
    std::string w = kWords[rng_() % n_words];
    for (char& c : w) c = char(std::tolower(static_cast<unsigned char>(c)));
    return w;
  };
  std::string file = "import math\n\n";
  for (int f = 0; int64_t(tok_->encode(file, false, false).size()) < n; ++f) {
    const std::string a = word(), b = word(), c = word();
    file += "def step_" + a + "_" + std::to_string(f) + "(" + b + ", " + c + "):\n";
    file += "    \"\"\"Return the " + word() + " of " + b + " and " + c + ".\"\"\"\n";
    file += "    total = " + b + " * " + std::to_string(2 + rng_() % 9) + " + " + c + "\n";
    file += "    if total > " + std::to_string(rng_() % 100) + ":\n";
    file += "        return math.sqrt(total)\n";
    file += "    return total - " + std::to_string(rng_() % 50) + "\n\n";
  }
  const std::string prompt = "Here is a Python file:\n\n```python\n" + file +
                             "```\n\nRewrite the whole file with every `step_` prefix renamed to `run_`. Output only the file.\n\n"
                             "```python\nimport math\n\n";
  std::vector<int32_t> ids = {fresh_first()};
  const std::vector<int32_t> t = tok_->encode(prompt, false, false);
  ids.insert(ids.end(), t.begin(), t.end());
  return ids;
}

std::vector<int32_t> PromptMaker::document(int64_t n) {
  if (n < 1) throw Error("bench: a prompt needs at least one token");
  std::vector<int32_t> ids = {fresh_first()};
  const std::vector<int32_t> rest = text(n - 1);
  ids.insert(ids.end(), rest.begin(), rest.end());
  return ids;
}

}  // namespace ember::bench
