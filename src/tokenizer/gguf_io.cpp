// Tokenizer <-> GGUF tokenizer.ggml.* metadata.
//
// GGUF names the pre-tokenizer instead of storing it; the names written here and
// the behaviour each stands for:
//   model "gpt2",  pre "qwen2":     NFC, Qwen2 split regex, byte-level BPE
//   model "gpt2",  pre "llama-bpe": Llama 3 split regex, whole-word vocabulary
//                                   lookup (ignore_merges), decode removes spaces
//                                   before punctuation (clean_up_tokenization_spaces)
//   model "llama", add_space_prefix false: Gemma form (spaces become U+2581,
//                                   character BPE with merges, byte fallback)
//   model "llama", add_space_prefix true:  Llama 2 form (also prepends U+2581,
//                                   decode strips the first space)
// Token types: 1 normal, 2 unknown, 3 control (special added token), 4 user
// defined (non-special added token), 6 byte (<0xXX>).
#include <algorithm>
#include <unordered_set>

#include "gguf/gguf.h"
#include "tokenizer/impl.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/limits.h"
#include "util/quote.h"

namespace ember {
namespace {

const char kQwen2Regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
const char kLlama3Regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char kMeta[] = "\xE2\x96\x81";

struct BytePreset { const char* name; const char* regex; bool nfc; bool ignore_merges; bool clean_up; };
const BytePreset kBytePresets[] = {
    {"qwen2", kQwen2Regex, true, false, false},
    {"llama-bpe", kLlama3Regex, false, true, true},
};

enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

bool is_byte_token(const std::string& s) {
  return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && s[5] == '>' && std::isxdigit(uint8_t(s[3])) &&
         std::isxdigit(uint8_t(s[4]));
}

void byte_level_steps(TokenizerSpec& spec, const BytePreset& p) {
  if (p.nfc) spec.normalizers.push_back(NormalizerStep{NormalizerStep::Kind::NFC, "", false, ""});
  PreTokenizerStep split;
  split.kind = PreTokenizerStep::Kind::Split;
  split.pattern = p.regex;
  PreTokenizerStep bl;
  bl.kind = PreTokenizerStep::Kind::ByteLevel;
  bl.use_regex = false;
  spec.pre_tokenizers = {split, bl};
  spec.decoders = {DecoderStep{DecoderStep::Kind::ByteLevel}};
  spec.model.byte_level = true;
  spec.model.ignore_merges = p.ignore_merges;
  spec.clean_up_spaces = p.clean_up;
}

void sentencepiece_steps(TokenizerSpec& spec, bool add_space_prefix) {
  if (add_space_prefix) spec.normalizers.push_back(NormalizerStep{NormalizerStep::Kind::Prepend, "", false, kMeta});
  spec.normalizers.push_back(NormalizerStep{NormalizerStep::Kind::Replace, " ", false, kMeta});
  DecoderStep rep{DecoderStep::Kind::Replace};
  rep.pattern = kMeta;
  rep.content = " ";
  spec.decoders = {rep, DecoderStep{DecoderStep::Kind::ByteFallback}, DecoderStep{DecoderStep::Kind::Fuse}};
  if (add_space_prefix) {
    DecoderStep strip{DecoderStep::Kind::Strip};
    strip.content = " ";
    strip.start = 1;
    spec.decoders.push_back(strip);
  }
  spec.model.byte_level = false;
  spec.model.byte_fallback = true;
  spec.model.fuse_unk = true;
}

// Which GGUF form a spec matches: the preset name for byte-level BPE, or
// "llama:0"/"llama:1" (add_space_prefix) for the SentencePiece forms.
std::string gguf_form(const TokenizerSpec& s) {
  auto same_steps = [](const TokenizerSpec& a, const TokenizerSpec& b) {
    if (a.normalizers.size() != b.normalizers.size() || a.decoders.size() != b.decoders.size()) return false;
    for (size_t i = 0; i < a.normalizers.size(); ++i) {
      const auto &x = a.normalizers[i], &y = b.normalizers[i];
      if (x.kind != y.kind || x.pattern != y.pattern || x.pattern_is_regex != y.pattern_is_regex || x.content != y.content)
        return false;
    }
    for (size_t i = 0; i < a.decoders.size(); ++i) {
      const auto &x = a.decoders[i], &y = b.decoders[i];
      if (x.kind != y.kind || x.pattern != y.pattern || x.content != y.content || x.start != y.start || x.stop != y.stop)
        return false;
    }
    return a.model.byte_level == b.model.byte_level && a.model.byte_fallback == b.model.byte_fallback &&
           a.model.ignore_merges == b.model.ignore_merges && a.clean_up_spaces == b.clean_up_spaces;
  };
  if (s.model.byte_level) {
    for (const BytePreset& p : kBytePresets) {
      TokenizerSpec want;
      byte_level_steps(want, p);
      if (!same_steps(s, want) || s.pre_tokenizers.size() != 2) continue;
      const auto &a = s.pre_tokenizers[0], &b = s.pre_tokenizers[1];
      if (a.kind == PreTokenizerStep::Kind::Split && a.pattern_is_regex && a.pattern == p.regex && !a.invert &&
          a.behavior == "Isolated" && b.kind == PreTokenizerStep::Kind::ByteLevel && !b.add_prefix_space && !b.use_regex)
        return p.name;
    }
    return "";
  }
  for (bool prefix : {false, true}) {
    TokenizerSpec want;
    sentencepiece_steps(want, prefix);
    want.model.fuse_unk = s.model.fuse_unk;
    // A Split on " " after spaces became U+2581 never splits anything.
    bool pre_ok = s.pre_tokenizers.empty() ||
                  (s.pre_tokenizers.size() == 1 && s.pre_tokenizers[0].kind == PreTokenizerStep::Kind::Split &&
                   !s.pre_tokenizers[0].pattern_is_regex && s.pre_tokenizers[0].pattern == " ");
    if (pre_ok && same_steps(s, want)) return prefix ? "llama:1" : "llama:0";
  }
  return "";
}

}  // namespace

void Tokenizer::write_gguf(gguf::Writer& w, int32_t pad_to_vocab) const {
  const TokenizerSpec& s = impl_->spec;
  std::string form = gguf_form(s);
  if (form.empty())
    throw Error("write_gguf: this tokenizer's normalizer/pre-tokenizer/decoder combination has no GGUF name "
                "(supported: Qwen2 and Llama 3 byte-level BPE, Gemma and Llama 2 SentencePiece BPE)");
  bool spm = form.rfind("llama:", 0) == 0;
  if (!(s.prefix.empty() || (s.prefix.size() == 1 && s.prefix[0] == s.bos)) ||
      !(s.suffix.empty() || (s.suffix.size() == 1 && s.suffix[0] == s.eos)))
    throw Error("write_gguf: the post-processor adds tokens other than BOS/EOS, which GGUF cannot express");

  std::vector<int32_t> types(s.tokens.size(), kNormal);
  for (size_t id = 0; id < s.tokens.size(); ++id) {
    if (s.tokens[id].empty()) types[id] = kUnused;
    else if (spm && is_byte_token(s.tokens[id])) types[id] = kByte;
  }
  if (s.model.unk_id >= 0) types[size_t(s.model.unk_id)] = kUnknown;
  for (const AddedToken& a : s.added) {
    if (a.normalized || a.lstrip || a.rstrip)
      throw Error("write_gguf: added token '" + a.content + "' uses normalized/lstrip/rstrip, which GGUF cannot express");
    types[size_t(a.id)] = a.special ? kControl : kUserDefined;
  }
  std::vector<std::string> merges;
  const auto& toks = impl_->model.tokens();
  for (auto [a, b] : impl_->model.merge_list()) {
    if (toks[size_t(a)].find(' ') != std::string::npos)
      throw Error("write_gguf: merge left part '" + toks[size_t(a)] + "' contains a space");
    merges.push_back(toks[size_t(a)] + " " + toks[size_t(b)]);
  }
  w.set("tokenizer.ggml.model", gguf::Value::str(spm ? "llama" : "gpt2"));
  w.set("tokenizer.ggml.pre", gguf::Value::str(spm ? "default" : form));
  std::vector<std::string> tokens = s.tokens;
  for (int32_t id = int32_t(tokens.size()); id < pad_to_vocab; ++id) {
    tokens.push_back("[PAD" + std::to_string(id) + "]");
    types.push_back(kUnused);
  }
  w.set("tokenizer.ggml.tokens", gguf::Value::str_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::Value::i32_array(types));
  if (spm) {
    // The merges carry the ranking; scores follow id order for readers that want them.
    std::vector<float> scores(s.tokens.size());
    for (size_t id = 0; id < scores.size(); ++id) scores[id] = -float(id);
    w.set("tokenizer.ggml.scores", gguf::Value::f32_array(scores));
    w.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(form == "llama:1"));
  }
  w.set("tokenizer.ggml.merges", gguf::Value::str_array(merges));
  if (s.bos >= 0) w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(uint32_t(s.bos)));
  if (s.eos >= 0) w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(uint32_t(s.eos)));
  if (s.pad >= 0) w.set("tokenizer.ggml.padding_token_id", gguf::Value::u32(uint32_t(s.pad)));
  if (s.model.unk_id >= 0) w.set("tokenizer.ggml.unknown_token_id", gguf::Value::u32(uint32_t(s.model.unk_id)));
  w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(!s.prefix.empty()));
  w.set("tokenizer.ggml.add_eos_token", gguf::Value::boolean(!s.suffix.empty()));
  if (!s.chat_template.empty()) w.set("tokenizer.chat_template", gguf::Value::str(s.chat_template));
}

Tokenizer Tokenizer::from_gguf(const gguf::Reader& r) {
  TokenizerSpec spec;
  std::string model = r.get_string("tokenizer.ggml.model");
  std::string pre = r.get_string("tokenizer.ggml.pre", "default");
  spec.tokens = r.get_string_array("tokenizer.ggml.tokens");
  if (spec.tokens.empty() || spec.tokens.size() > size_t(limits::kMaxVocab))
    throw Error(r.path() + ": tokenizer.ggml.tokens has " + std::to_string(spec.tokens.size()) +
                " entries, outside 1 .. " + std::to_string(limits::kMaxVocab));
  std::vector<int64_t> types;
  if (r.find("tokenizer.ggml.token_type")) types = r.get_int_array("tokenizer.ggml.token_type");
  if (!types.empty() && types.size() != spec.tokens.size())
    throw Error(r.path() + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries but there are " +
                std::to_string(spec.tokens.size()) + " tokens");
  bool spm;
  if (model == "gpt2") {
    spm = false;
    const BytePreset* preset = nullptr;
    for (const BytePreset& p : kBytePresets)
      if (pre == p.name) preset = &p;
    if (!preset) {
      if (pre != "default" && pre != "gpt2")
        throw Error(r.path() + ": tokenizer.ggml.pre '" + pre + "' is not supported (known: qwen2, llama-bpe, gpt2)");
      PreTokenizerStep bl;
      bl.kind = PreTokenizerStep::Kind::ByteLevel;
      spec.pre_tokenizers = {bl};
      spec.decoders = {DecoderStep{DecoderStep::Kind::ByteLevel}};
      spec.model.byte_level = true;
    } else {
      byte_level_steps(spec, *preset);
    }
  } else if (model == "llama") {
    spm = true;
    sentencepiece_steps(spec, r.get_bool("tokenizer.ggml.add_space_prefix", true));
  } else {
    throw Error(r.path() + ": tokenizer.ggml.model '" + model + "' is not supported (gpt2, llama)");
  }

  TokenMap spelling;
  for (size_t i = 0; i < spec.tokens.size(); ++i) spelling.emplace(spec.tokens[i], int32_t(i));
  if (!r.find("tokenizer.ggml.merges")) {
    if (spm)
      throw Error(r.path() + ": tokenizer model 'llama' without tokenizer.ggml.merges (score-only SentencePiece) "
                             "is not supported yet");
    throw Error(r.path() + ": tokenizer.ggml.merges is missing");
  }
  std::vector<std::string> merges = r.get_string_array("tokenizer.ggml.merges");
  spec.merges.reserve(merges.size());
  size_t longest_token = 0;
  for (const std::string& t : spec.tokens) longest_token = std::max(longest_token, t.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    // Split at the first space where both sides are tokens (a side may contain
    // spaces). Only split points where both sides are no longer than the
    // longest token can work, and real merges have one or two candidates: a
    // few are tried, so a merge made of spaces costs linear time, not
    // quadratic.
    const size_t lo = m.size() > longest_token + 1 ? m.size() - longest_token - 1 : 0;
    size_t chosen = std::string::npos, first = std::string::npos;
    int tried = 0;
    for (size_t k = m.find(' ', lo); k != std::string::npos && k <= longest_token && tried < 8;
         k = m.find(' ', k + 1), ++tried) {
      if (first == std::string::npos) first = k;
      if (spelling.count(std::string_view(m).substr(0, k)) && spelling.count(std::string_view(m).substr(k + 1))) {
        chosen = k;
        break;
      }
    }
    if (chosen == std::string::npos) chosen = first;  // BpeModel names the side that is not a token
    if (chosen == std::string::npos)
      throw Error(r.path() + ": tokenizer.ggml.merges[" + std::to_string(i) + "] '" + excerpt(m) +
                  "' is not 'left right' with both sides tokens");
    spec.merges.emplace_back(m.substr(0, chosen), m.substr(chosen + 1));
  }

  for (size_t id = 0; id < types.size(); ++id) {
    int64_t t = types[id];
    if (t == kUnused) spec.tokens[id].clear();  // a slot without a token (padding)
    if (t == kControl || t == kUserDefined || t == kUnknown) {
      AddedToken a;
      a.id = int32_t(id);
      a.content = spec.tokens[id];
      a.special = t != kUserDefined;
      if (!a.content.empty()) spec.added.push_back(std::move(a));
    }
    if (t == kUnknown && spec.model.unk_id < 0) spec.model.unk_id = int32_t(id);
  }
  // Ids are read at their declared width and must name a token: a 64-bit id is
  // never truncated into a valid-looking one.
  auto id_key = [&](const char* key) {
    const int64_t id = r.get_int(key, -1);
    if (id < -1 || id >= int64_t(spec.tokens.size()))
      throw Error(r.path() + ": " + key + " = " + std::to_string(id) + " is not a token id (0 .. " +
                  std::to_string(spec.tokens.size() - 1) + ")");
    return int32_t(id);
  };
  if (int32_t unk = id_key("tokenizer.ggml.unknown_token_id"); unk >= 0 && spm) spec.model.unk_id = unk;
  if (!spm) spec.model.unk_id = -1;
  spec.bos = id_key("tokenizer.ggml.bos_token_id");
  spec.eos = id_key("tokenizer.ggml.eos_token_id");
  spec.pad = id_key("tokenizer.ggml.padding_token_id");
  if (r.get_bool("tokenizer.ggml.add_bos_token", spm) && spec.bos >= 0) spec.prefix = {spec.bos};
  if (r.get_bool("tokenizer.ggml.add_eos_token", false) && spec.eos >= 0) spec.suffix = {spec.eos};
  spec.chat_template = r.get_string("tokenizer.chat_template", "");
  try {
    return from_spec(std::move(spec));
  } catch (const Error& e) {
    throw Error(r.path() + ": " + e.what());
  }
}

}  // namespace ember
