// The vocabulary as a trie of byte strings, built once per tokenizer: the
// token mask walks it with the grammar, so a prefix the grammar rejects cuts
// off every token that starts with it at once.
//
// Only ordinary tokens are in the trie. Control tokens (those decoding drops)
// and tokens with no bytes never match a grammar; end-of-generation tokens
// are listed apart, allowed only where the grammar can end.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ember::grammar {

class TokenTrie {
 public:
  struct Node {
    uint32_t first_child = 0;   // 0: none (the root is node 0 and never a child)
    uint32_t next_sibling = 0;  // 0: none
    uint32_t tokens_begin = 0, tokens_end = 0;  // ids ending here: token_ids()[begin, end)
    uint8_t byte = 0;
  };

  explicit TokenTrie(const Tokenizer& tok);
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& token_ids() const { return ids_; }
  const std::vector<int32_t>& end_of_generation() const { return eog_; }
  const std::string& bytes_of(int32_t id) const { return bytes_[size_t(id)]; }  // "" for tokens not in the trie
  int32_t vocab() const { return int32_t(bytes_.size()); }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> ids_;
  std::vector<int32_t> eog_;
  std::vector<std::string> bytes_;
};

}  // namespace ember::grammar
