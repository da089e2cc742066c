// TokenizerSpec: everything a Tokenizer is built from, as plain data. The
// tokenizer.json loader and the GGUF loader both produce one; the Tokenizer
// compiles it (regexes, tries, merge table) once.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/bpe.h"

namespace ember {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;     // control token: matched only when parsing special tokens, skipped by skip_special
  bool normalized = false;  // matched in normalized text instead of raw text
  bool lstrip = false, rstrip = false, single_word = false;
};

struct NormalizerStep {
  enum class Kind { NFC, NFD, NFKC, NFKD, Replace, Prepend } kind = Kind::NFC;
  std::string pattern;  // Replace: what to replace (a literal string, or a regex when pattern_is_regex)
  bool pattern_is_regex = false;
  std::string content;  // Replace: the replacement; Prepend: the prefix
};

struct PreTokenizerStep {
  enum class Kind { Split, ByteLevel, Metaspace, Digits } kind = Kind::Split;
  // Split
  std::string pattern;
  bool pattern_is_regex = true;
  bool invert = false;
  std::string behavior = "Isolated";
  // ByteLevel
  bool add_prefix_space = false;
  bool use_regex = true;
  // Metaspace
  std::string replacement = "\xE2\x96\x81";
  std::string prepend_scheme = "always";
  // Digits
  bool individual_digits = false;
};

struct DecoderStep {
  enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind = Kind::ByteLevel;
  std::string pattern, content;  // Replace (literal pattern); Strip (content)
  int start = 0, stop = 0;       // Strip
  std::string replacement = "\xE2\x96\x81";  // Metaspace
};

struct TokenizerSpec {
  std::vector<std::string> tokens;  // id -> spelling; added tokens included
  std::vector<std::pair<std::string, std::string>> merges;
  BpeModel::Options model;
  std::vector<AddedToken> added;
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::vector<DecoderStep> decoders;
  std::vector<int32_t> prefix, suffix;  // ids the post-processor adds around the text
  std::vector<std::string> extra_special;  // more spellings that skip_special removes
  bool clean_up_spaces = false;         // decode removes spaces before punctuation
  int32_t bos = -1, eos = -1, pad = -1;
  std::string chat_template;
};

}  // namespace ember
