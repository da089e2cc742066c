// ember::Tokenizer: text <-> token ids, byte for byte what the Hugging Face
// tokenizers (tokenizer.json) produce for byte-level BPE (Llama 3, Qwen2/3) and
// SentencePiece-style BPE with byte fallback (Gemma 3, Llama 2).
//
// Encoding: invalid UTF-8 in the input is first replaced by U+FFFD (one per
// maximal invalid subsequence, as TextDecoder does); added tokens are matched
// (longest match, leftmost first) before normalisation; the rest is normalised,
// pre-tokenized, and each word is BPE-encoded; finally the post-processor's
// prefix/suffix tokens (e.g. BOS) are added when add_special is true.
//
// parse_special = false leaves special (control) tokens such as <|im_end|> as
// plain text; non-special added tokens (e.g. Qwen's <think>) are still matched.
//
// Sources: from_hf (tokenizer.json + tokenizer_config.json) and from_gguf
// (tokenizer.ggml.* metadata). write_gguf stores the tokenizer so that
// from_gguf gives back one that encodes and decodes identically. Supported
// GGUF forms: model "gpt2" with pre "qwen2" (NFC + Qwen regex), "llama-bpe"
// (Llama 3 regex, whole-word lookup, decode space clean-up), "gpt2"; model
// "llama" (scores and merges; tokenizer.ggml.add_space_prefix false gives the
// Gemma form, true the Llama 2 form).
//
// A Tokenizer is immutable after loading and safe to use from several threads
// (the per-word cache is locked). Copies share the loaded data.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/spec.h"

namespace ember {
namespace gguf { class Reader; class Writer; }

class Tokenizer {
 public:
  // Throws ember::Error naming the file part (e.g. "tokenizer.json: model.merges[12]")
  // on malformed or unsupported input. tokenizer_config_json may be empty.
  static Tokenizer from_hf(const std::string& tokenizer_json, const std::string& tokenizer_config_json);
  // Reads tokenizer.json and, when present, tokenizer_config.json from a folder
  // or from the path of a tokenizer.json file.
  static Tokenizer from_hf_path(const std::string& path);
  static Tokenizer from_gguf(const gguf::Reader& r);
  static Tokenizer from_spec(TokenizerSpec spec);
  // Writes the tokenizer.* keys. Throws ember::Error when the tokenizer uses a
  // feature the GGUF form cannot carry.
  // pad_to_vocab: when the model's embedding has more rows than the tokenizer has
  // tokens, the list is padded with unused "[PAD<id>]" entries (as other GGUF
  // writers do), so the token list and the embedding agree.
  void write_gguf(gguf::Writer& w, int32_t pad_to_vocab = 0) const;

  std::vector<int32_t> encode(std::string_view text, bool add_special = true, bool parse_special = true) const;
  // Special-token parsing on, except inside `plain_zones` (byte ranges of
  // `text`, e.g. where a chat message's own text sits): a special token's
  // spelling there stays text. Elsewhere the result equals encode(text).
  std::vector<int32_t> encode_with_plain_zones(std::string_view text,
                                               std::span<const std::pair<size_t, size_t>> plain_zones,
                                               bool add_special = false) const;
  // Throws ember::Error for an id outside the vocabulary.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;

  int32_t bos_id() const;  // -1 when the model has none
  int32_t eos_id() const;
  int32_t pad_id() const;
  bool is_end_of_generation(int32_t id) const;  // eos and end-of-turn tokens (<|im_end|>, <|eot_id|>, <end_of_turn>, ...)
  bool is_special(int32_t id) const;            // removed by decode(skip_special)
  int32_t vocab_size() const;
  const std::string& chat_template() const;
  std::string bos_token() const;  // "" when none
  std::string eos_token() const;
  const std::string& token_text(int32_t id) const;  // vocabulary spelling
  // The bytes one token adds in the middle of a text: a piece of a UTF-8
  // character stays as it is (no U+FFFD), no space clean-up. What grammars match against.
  std::string token_bytes(int32_t id) const;
  const TokenizerSpec& spec() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// Feeds ids one at a time and returns the text that is final: the
// concatenation of all returned chunks plus finish() equals decode(all ids), and
// no chunk ends inside a UTF-8 sequence.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false);
  std::string feed(int32_t id);
  std::string finish();  // flushes held-back text (an incomplete sequence becomes U+FFFD)
  void reset();

 private:
  std::string take_ready(bool at_end);
  const Tokenizer* tok_;
  bool skip_special_;
  std::vector<int32_t> run_;   // ids since the last point where decode output is final
  std::string run_text_;       // decode(run_) as last computed
  size_t emitted_ = 0;         // bytes of run_text_ already returned
  bool first_ = true;          // nothing decoded yet (position-dependent decoders)
};

}  // namespace ember
