#include "grammar/token_trie.h"

#include <algorithm>

namespace ember::grammar {

TokenTrie::TokenTrie(const Tokenizer& tok) {
  const int32_t n = tok.vocab_size();
  bytes_.resize(size_t(n));
  std::vector<int32_t> order;
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_end_of_generation(id)) eog_.push_back(id);
    if (tok.is_special(id)) continue;
    bytes_[size_t(id)] = tok.token_bytes(id);
    if (!bytes_[size_t(id)].empty()) order.push_back(id);
  }
  // In byte order, each token shares a path with the one before it up to their common
  // prefix, and a new child always sorts after its siblings: one pass builds the trie.
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes_[size_t(a)] != bytes_[size_t(b)] ? bytes_[size_t(a)] < bytes_[size_t(b)] : a < b;
  });
  nodes_.emplace_back();
  std::vector<uint32_t> path{0};      // node of each prefix length of the previous token
  std::vector<uint32_t> last_child{0};  // per node: its newest child (0: none)
  const std::string* prev = nullptr;
  ids_.reserve(order.size());
  for (int32_t id : order) {
    const std::string& b = bytes_[size_t(id)];
    size_t common = 0;
    if (prev)
      while (common < b.size() && common < prev->size() && b[common] == (*prev)[common]) ++common;
    path.resize(common + 1);
    for (size_t i = common; i < b.size(); ++i) {
      const uint32_t parent = path.back();
      const uint32_t child = uint32_t(nodes_.size());
      nodes_.push_back({});
      nodes_.back().byte = uint8_t(b[i]);
      last_child.push_back(0);
      if (last_child[parent]) nodes_[last_child[parent]].next_sibling = child;
      else nodes_[parent].first_child = child;
      last_child[parent] = child;
      path.push_back(child);
    }
    Node& end = nodes_[path.back()];
    if (end.tokens_begin == end.tokens_end) end.tokens_begin = end.tokens_end = uint32_t(ids_.size());
    ids_.push_back(id);
    ++end.tokens_end;
    prev = &b;
  }
}

}  // namespace ember::grammar
