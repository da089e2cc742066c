// Tokenizer::Impl: the compiled form of a TokenizerSpec (internal header).
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"

namespace ember {

// Byte trie over added-token spellings: at each position, the longest match.
// Walking it from every position costs up to the longest spelling per byte;
// the tokenizer uses AddedTokenMatcher, this serves callers that test one position.
class AddedTokenTrie {
 public:
  void add(std::string_view s, int32_t index);
  bool empty() const { return nodes_.size() <= 1; }
  // Length and token index of the longest spelling that starts at text[pos]; {0,-1} if none.
  std::pair<size_t, int32_t> longest_at(std::string_view text, size_t pos) const;
  bool may_start(uint8_t b) const { return first_[b]; }

 private:
  struct Node { std::vector<std::pair<uint8_t, int32_t>> next; int32_t token = -1; };  // next sorted by byte
  int32_t child(int32_t node, uint8_t b) const;
  std::vector<Node> nodes_{1};
  bool first_[256] = {};
};

// Finds, for every position of a text, the longest added-token spelling that
// starts there, in time linear in the text whatever the spellings: an
// Aho-Corasick automaton over the reversed spellings, run from the text's end,
// is at position j in the state of the longest reversed spelling that ends
// there, i.e. of the longest spelling that starts at j. The text is scanned in
// blocks so that memory does not grow with its length.
class AddedTokenMatcher {
 public:
  struct Start { size_t pos, len; int32_t index; };
  void add(std::string_view s, int32_t index);  // a later index with the same spelling wins
  void build();                                  // after the last add()
  bool empty() const { return nodes_.size() <= 1; }
  size_t max_len() const { return max_len_; }
  // The longest spelling starting at each position of [begin, end) that has one, positions ascending.
  void starts(std::string_view text, size_t begin, size_t end, std::vector<Start>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    int32_t fail = 0;
    int32_t token = -1;      // a spelling ends here
    int32_t longest = -1;    // node of the longest spelling among this node's suffixes (itself included)
    uint32_t depth = 0;
  };
  int32_t child(int32_t node, uint8_t b) const;
  std::vector<Node> nodes_{1};
  size_t max_len_ = 0;
};

struct DecodeResult {
  std::string text;
  bool pending_tail = false;  // text ends with a U+FFFD standing for an incomplete UTF-8 sequence
};

struct Tokenizer::Impl {
  TokenizerSpec spec;
  BpeModel model;
  std::vector<std::optional<Regex>> split_regex;  // one per pre-tokenizer step (Split/ByteLevel/Digits)
  std::optional<Regex> replace_regex_norm;       // unused unless a Replace normalizer has a regex
  std::vector<std::optional<Regex>> norm_regex;
  AddedTokenMatcher raw_all, raw_plain, normalized_all, normalized_plain;  // *_plain: non-special only
  TokenMap added_by_text;        // content and normalized content -> index in spec.added
  std::vector<int32_t> id_remap;  // model id -> final id (normalized added tokens); empty if identity
  std::vector<uint8_t> skip_on_decode;  // per id: removed by decode(skip_special)
  std::vector<uint8_t> is_added;         // per id: spelling is an added token's content
  std::vector<uint8_t> end_of_generation;
  TokenMap added_spelling;  // spellings of all added tokens (the ByteLevel decoder passes them through)

  // regex_window: the bytes each regex match sees at first (Regex::find_all);
  // the result is the same for every value, tests make it small.
  void encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>& out,
              std::span<const std::pair<size_t, size_t>> plain_zones = {},
              size_t regex_window = Regex::kWindowBytes) const;
  std::string normalize(std::string_view s, size_t regex_window = Regex::kWindowBytes) const;
  void pre_tokenize(std::string_view s, size_t section_index, std::string& arena,
                    std::vector<std::pair<size_t, size_t>>& words, size_t regex_window) const;
  // Runs the decoder chain on `ids` (already filtered). `continuation` means the
  // ids do not start the output (position-dependent decoders act only at the start).
  // raw_bytes: byte runs are kept as they are, invalid UTF-8 included (a token's own bytes).
  DecodeResult decode_raw(const std::vector<int32_t>& ids, bool continuation, bool raw_bytes = false) const;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const;
};

// Removes spaces before punctuation and contractions, as the reference's
// clean_up_tokenization does.
std::string clean_up_tokenization(std::string s);

}  // namespace ember
