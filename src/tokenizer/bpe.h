// The BPE model: turns one pre-tokenized word into token ids by repeatedly
// merging the adjacent pair with the lowest merge rank (leftmost first on ties).
//
// Two symbol alphabets:
//  - byte-level (GPT-2 style: Llama 3, Qwen): words are raw UTF-8 bytes, each
//    byte is one initial symbol (the vocabulary's printable-character spelling of
//    bytes is undone at load, so lookups use raw bytes);
//  - character-level (SentencePiece-style: Gemma, Llama 2): each code point is one
//    initial symbol; a symbol missing from the vocabulary falls back to its UTF-8
//    bytes as <0xXX> tokens when byte_fallback is set, else to the unknown token.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ember {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept;
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// GPT-2's reversible byte <-> printable code point table.
uint32_t byte_to_codepoint(uint8_t b);
// -1 when `cp` is not one of the 256 printable stand-ins.
int codepoint_to_byte(uint32_t cp);

class BpeModel {
 public:
  struct Options {
    bool byte_level = false;
    bool byte_fallback = false;
    bool ignore_merges = false;  // a word that is itself a token is emitted whole
    bool fuse_unk = false;       // consecutive unknown tokens collapse into one
    int32_t unk_id = -1;         // -1: unknown pieces are dropped
  };
  BpeModel() = default;
  // `tokens[id]` is the vocabulary spelling ("" for an id without a token);
  // `merges` are pairs of spellings in rank order. Throws ember::Error when a
  // merge names a token that is not in the vocabulary.
  BpeModel(std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges,
           Options opt);

  // Appends the ids of `word` to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  const Options& options() const { return opt_; }
  int32_t find(std::string_view spelling) const;  // id of a vocabulary spelling, -1 if none
  const std::vector<std::string>& tokens() const { return tokens_; }
  // Merges as (left id, right id), in rank order (for writing GGUF).
  const std::vector<std::pair<int32_t, int32_t>>& merge_list() const { return merge_list_; }

 private:
  struct MergeEntry { uint64_t key; uint32_t rank; int32_t result; };
  const MergeEntry* find_merge(int32_t a, int32_t b) const;
  void bpe(std::string_view word, std::vector<int32_t>& out) const;
  int32_t char_symbol(std::string_view ch) const;

  Options opt_;
  std::vector<std::string> tokens_;
  TokenMap by_spelling_;  // spelling as written in the vocabulary
  TokenMap by_key_;       // byte-level: raw bytes; otherwise the spelling
  int32_t byte_symbol_[256];    // byte-level: id of each single byte
  int32_t byte_fallback_[256];  // id of <0xXX>, -1 when missing
  int32_t ascii_symbol_[128];   // character-level: id of each ASCII character
  std::vector<MergeEntry> table_;  // open addressing, power-of-two size
  uint64_t mask_ = 0;
  std::vector<std::pair<int32_t, int32_t>> merge_list_;

  // Results for short words, shared by all callers.
  struct Cache {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
  };
  std::unique_ptr<Cache> cache_ = std::make_unique<Cache>();
};

}  // namespace ember
