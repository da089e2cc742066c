// Tokenizer::from_hf: reads Hugging Face tokenizer.json (+ tokenizer_config.json)
// into a TokenizerSpec, following the same defaults as the reference tokenizer.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json_bounded.h"
#include "util/limits.h"
#include "util/quote.h"
#include "util/text_file.h"

namespace ember {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error("tokenizer.json: " + excerpt(where, 160) + ": " + excerpt(what, 240));
}

const json* member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return (it == j.end() || it->is_null()) ? nullptr : &*it;
}

std::string get_string(const json& j, const char* key, const std::string& where, const std::string& fallback = "") {
  const json* v = member(j, key);
  if (!v) return fallback;
  if (!v->is_string()) fail(where + "." + key, "expected a string");
  return v->get<std::string>();
}

bool get_bool(const json& j, const char* key, const std::string& where, bool fallback) {
  const json* v = member(j, key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(where + "." + key, "expected true or false");
  return v->get<bool>();
}

// A pattern object: {"String": "..."} or {"Regex": "..."}.
std::pair<std::string, bool> get_pattern(const json& j, const std::string& where) {
  const json* p = member(j, "pattern");
  if (!p || !p->is_object()) fail(where + ".pattern", "expected {\"String\": ...} or {\"Regex\": ...}");
  if (const json* s = member(*p, "String"); s && s->is_string()) return {s->get<std::string>(), false};
  if (const json* r = member(*p, "Regex"); r && r->is_string()) return {r->get<std::string>(), true};
  fail(where + ".pattern", "expected {\"String\": ...} or {\"Regex\": ...}");
}

void add_normalizer(const json& j, const std::string& where, std::vector<NormalizerStep>& out) {
  std::string type = get_string(j, "type", where);
  NormalizerStep n;
  if (type == "Sequence") {
    const json* list = member(j, "normalizers");
    if (!list || !list->is_array()) fail(where + ".normalizers", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) add_normalizer((*list)[i], where + ".normalizers[" + std::to_string(i) + "]", out);
    return;
  }
  if (type == "NFC") n.kind = NormalizerStep::Kind::NFC;
  else if (type == "NFD") n.kind = NormalizerStep::Kind::NFD;
  else if (type == "NFKC") n.kind = NormalizerStep::Kind::NFKC;
  else if (type == "NFKD") n.kind = NormalizerStep::Kind::NFKD;
  else if (type == "Replace") {
    n.kind = NormalizerStep::Kind::Replace;
    std::tie(n.pattern, n.pattern_is_regex) = get_pattern(j, where);
    n.content = get_string(j, "content", where);
  } else if (type == "Prepend") {
    n.kind = NormalizerStep::Kind::Prepend;
    n.content = get_string(j, "prepend", where);
  } else {
    fail(where + ".type", "normalizer type '" + type + "' is not supported");
  }
  out.push_back(std::move(n));
}

void add_pre_tokenizer(const json& j, const std::string& where, std::vector<PreTokenizerStep>& out) {
  std::string type = get_string(j, "type", where);
  PreTokenizerStep p;
  if (type == "Sequence") {
    const json* list = member(j, "pretokenizers");
    if (!list || !list->is_array()) fail(where + ".pretokenizers", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) add_pre_tokenizer((*list)[i], where + ".pretokenizers[" + std::to_string(i) + "]", out);
    return;
  }
  if (type == "Split") {
    p.kind = PreTokenizerStep::Kind::Split;
    std::tie(p.pattern, p.pattern_is_regex) = get_pattern(j, where);
    p.invert = get_bool(j, "invert", where, false);
    p.behavior = get_string(j, "behavior", where, "Isolated");
  } else if (type == "ByteLevel") {
    p.kind = PreTokenizerStep::Kind::ByteLevel;
    p.add_prefix_space = get_bool(j, "add_prefix_space", where, false);
    p.use_regex = get_bool(j, "use_regex", where, true);
  } else if (type == "Metaspace") {
    p.kind = PreTokenizerStep::Kind::Metaspace;
    p.replacement = get_string(j, "replacement", where, "\xE2\x96\x81");
    p.prepend_scheme = get_string(j, "prepend_scheme", where, "always");
  } else if (type == "Digits") {
    p.kind = PreTokenizerStep::Kind::Digits;
    p.individual_digits = get_bool(j, "individual_digits", where, false);
  } else {
    fail(where + ".type", "pre-tokenizer type '" + type + "' is not supported");
  }
  out.push_back(std::move(p));
}

void add_decoder(const json& j, const std::string& where, std::vector<DecoderStep>& out) {
  std::string type = get_string(j, "type", where);
  DecoderStep d;
  if (type == "Sequence") {
    const json* list = member(j, "decoders");
    if (!list || !list->is_array()) fail(where + ".decoders", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) add_decoder((*list)[i], where + ".decoders[" + std::to_string(i) + "]", out);
    return;
  }
  if (type == "ByteLevel") d.kind = DecoderStep::Kind::ByteLevel;
  else if (type == "ByteFallback") d.kind = DecoderStep::Kind::ByteFallback;
  else if (type == "Fuse") d.kind = DecoderStep::Kind::Fuse;
  else if (type == "Replace") {
    d.kind = DecoderStep::Kind::Replace;
    bool is_regex;
    std::tie(d.pattern, is_regex) = get_pattern(j, where);
    if (is_regex) fail(where + ".pattern", "a Regex pattern in a Replace decoder is not supported");
    d.content = get_string(j, "content", where);
  } else if (type == "Strip") {
    d.kind = DecoderStep::Kind::Strip;
    d.content = get_string(j, "content", where, " ");
    d.start = member(j, "start") ? j["start"].get<int>() : 0;
    d.stop = member(j, "stop") ? j["stop"].get<int>() : 0;
  } else if (type == "Metaspace") {
    d.kind = DecoderStep::Kind::Metaspace;
    d.replacement = get_string(j, "replacement", where, "\xE2\x96\x81");
  } else {
    fail(where + ".type", "decoder type '" + type + "' is not supported");
  }
  out.push_back(std::move(d));
}

// bos_token etc. are either a string or {"content": "..."}.
std::string token_name(const json& cfg, const char* key) {
  const json* v = member(cfg, key);
  if (!v) return "";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_object() && member(*v, "content") && (*v)["content"].is_string()) return (*v)["content"].get<std::string>();
  throw Error(std::string("tokenizer_config.json: ") + key + ": expected a string or {\"content\": ...}");
}

json parse(const std::string& text, const char* name) { return parse_json(text, name); }

TokenizerSpec spec_from_json(const json& tj, const json& cfg) {
  TokenizerSpec spec;
  if (!tj.is_object()) fail("(top level)", "expected a JSON object");
  const json* model = member(tj, "model");
  if (!model || !model->is_object()) fail("model", "missing");
  std::string type = get_string(*model, "type", "model", "BPE");
  if (type != "BPE") fail("model.type", "model type '" + type + "' is not supported (only BPE)");
  if (!get_string(*model, "continuing_subword_prefix", "model").empty() ||
      !get_string(*model, "end_of_word_suffix", "model").empty())
    fail("model", "continuing_subword_prefix / end_of_word_suffix are not supported");

  const json* vocab = member(*model, "vocab");
  if (!vocab || !vocab->is_object()) fail("model.vocab", "expected an object mapping tokens to ids");
  int64_t max_id = -1;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() >= limits::kMaxVocab)
      fail("model.vocab[\"" + excerpt(it.key()) + "\"]",
           "expected an integer id in 0 .. " + std::to_string(limits::kMaxVocab - 1));
    max_id = std::max(max_id, it.value().get<int64_t>());
  }
  const json* added = member(tj, "added_tokens");
  if (added && !added->is_array()) fail("added_tokens", "expected an array");
  if (added)
    for (size_t i = 0; i < added->size(); ++i) {
      const json& a = (*added)[i];
      std::string w = "added_tokens[" + std::to_string(i) + "]";
      const json* id = member(a, "id");
      if (!id || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() >= limits::kMaxVocab)
        fail(w + ".id", "expected an integer id in 0 .. " + std::to_string(limits::kMaxVocab - 1));
      AddedToken t;
      t.id = int32_t(id->get<int64_t>());
      t.content = get_string(a, "content", w);
      if (t.content.empty()) fail(w + ".content", "empty");
      t.special = get_bool(a, "special", w, false);
      t.normalized = get_bool(a, "normalized", w, !t.special);
      t.lstrip = get_bool(a, "lstrip", w, false);
      t.rstrip = get_bool(a, "rstrip", w, false);
      t.single_word = get_bool(a, "single_word", w, false);
      max_id = std::max<int64_t>(max_id, t.id);
      spec.added.push_back(std::move(t));
    }
  spec.tokens.assign(size_t(max_id + 1), std::string());
  for (auto it = vocab->begin(); it != vocab->end(); ++it) spec.tokens[size_t(it.value().get<int64_t>())] = it.key();

  const json* merges = member(*model, "merges");
  if (!merges || !merges->is_array()) fail("model.merges", "expected an array");
  spec.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    if (m.is_string()) {
      // "left right": the reference keeps the first two space-separated parts.
      const std::string& s = m.get_ref<const std::string&>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos) fail("model.merges[" + std::to_string(i) + "]", "expected \"left right\", got '" + excerpt(s) + "'");
      size_t end = s.find(' ', sp + 1);
      spec.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1, end == std::string::npos ? end : end - sp - 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail("model.merges[" + std::to_string(i) + "]", "expected \"left right\" or [left, right]");
    }
  }
  spec.model.byte_fallback = get_bool(*model, "byte_fallback", "model", false);
  spec.model.ignore_merges = get_bool(*model, "ignore_merges", "model", false);
  spec.model.fuse_unk = get_bool(*model, "fuse_unk", "model", false);
  std::string unk = get_string(*model, "unk_token", "model");
  if (!unk.empty())
    if (auto it = vocab->find(unk); it != vocab->end()) spec.model.unk_id = int32_t(it->get<int64_t>());

  if (const json* n = member(tj, "normalizer")) add_normalizer(*n, "normalizer", spec.normalizers);
  if (const json* p = member(tj, "pre_tokenizer")) add_pre_tokenizer(*p, "pre_tokenizer", spec.pre_tokenizers);
  if (const json* d = member(tj, "decoder")) add_decoder(*d, "decoder", spec.decoders);
  for (size_t i = 0; i < spec.pre_tokenizers.size(); ++i)
    if (spec.pre_tokenizers[i].kind == PreTokenizerStep::Kind::ByteLevel) spec.model.byte_level = true;
  if (!spec.model.byte_level)
    for (const DecoderStep& d : spec.decoders)
      if (d.kind == DecoderStep::Kind::ByteLevel) spec.model.byte_level = true;

  // Spelling -> id as the reference resolves it (added tokens override the vocabulary).
  auto id_of = [&](const std::string& s) -> int32_t {
    for (auto it = spec.added.rbegin(); it != spec.added.rend(); ++it)
      if (it->content == s) return it->id;
    if (auto it = vocab->find(s); it != vocab->end()) return int32_t(it->get<int64_t>());
    return -1;
  };

  bool have_template = false;
  if (const json* pp = member(tj, "post_processor")) {
    std::vector<const json*> steps{pp};
    if (get_string(*pp, "type", "post_processor") == "Sequence") {
      steps.clear();
      if (const json* list = member(*pp, "processors"); list && list->is_array())
        for (const json& s : *list) steps.push_back(&s);
    }
    for (const json* s : steps) {
      std::string t = get_string(*s, "type", "post_processor");
      if (t == "ByteLevel") continue;
      if (t != "TemplateProcessing") fail("post_processor.type", "post-processor type '" + t + "' is not supported");
      have_template = true;
      const json* single = member(*s, "single");
      if (!single || !single->is_array()) fail("post_processor.single", "expected an array");
      bool after = false;
      for (const json& item : *single) {
        if (const json* st = member(item, "SpecialToken")) {
          std::string name = get_string(*st, "id", "post_processor.single");
          std::vector<int32_t> ids;
          const json* table = member(*s, "special_tokens");
          const json* entry = table ? member(*table, name.c_str()) : nullptr;
          if (entry && member(*entry, "ids") && (*entry)["ids"].is_array())
            for (const json& x : (*entry)["ids"]) ids.push_back(x.get<int32_t>());
          else if (int32_t id = id_of(name); id >= 0) ids.push_back(id);
          else fail("post_processor.single", "special token '" + name + "' is not in the vocabulary");
          auto& dst = after ? spec.suffix : spec.prefix;
          dst.insert(dst.end(), ids.begin(), ids.end());
        } else if (member(item, "Sequence")) {
          after = true;
        }
      }
    }
  }

  // tokenizer_config.json
  auto cfg_id = [&](const char* key) -> int32_t {
    std::string name = token_name(cfg, key);
    return name.empty() ? -1 : id_of(name);
  };
  spec.bos = cfg_id("bos_token");
  spec.eos = cfg_id("eos_token");
  spec.pad = cfg_id("pad_token");
  if (!have_template) {
    // Without a template, the config's add_bos_token / add_eos_token decide.
    if (get_bool(cfg, "add_bos_token", "tokenizer_config.json", false) && spec.bos >= 0) spec.prefix = {spec.bos};
    if (get_bool(cfg, "add_eos_token", "tokenizer_config.json", false) && spec.eos >= 0) spec.suffix = {spec.eos};
  }
  if (spec.bos < 0 && spec.prefix.size() == 1) spec.bos = spec.prefix[0];
  if (const json* extra = member(cfg, "additional_special_tokens"); extra && extra->is_array())
    for (const json& e : *extra) {
      if (e.is_string()) spec.extra_special.push_back(e.get<std::string>());
      else if (e.is_object() && member(e, "content")) spec.extra_special.push_back(e["content"].get<std::string>());
    }
  spec.clean_up_spaces = get_bool(cfg, "clean_up_tokenization_spaces", "tokenizer_config.json", true);
  if (const json* ct = member(cfg, "chat_template")) {
    if (ct->is_string()) spec.chat_template = ct->get<std::string>();
    else if (ct->is_array())
      for (const json& e : *ct)
        if (member(e, "name") && e["name"] == "default" && member(e, "template")) spec.chat_template = e["template"].get<std::string>();
  }
  return spec;
}

std::string read_file(const std::filesystem::path& p) { return read_text_file(p.string(), limits::kMaxJsonFileBytes); }

}  // namespace

Tokenizer Tokenizer::from_hf(const std::string& tokenizer_json, const std::string& tokenizer_config_json) {
  json tj = parse(tokenizer_json, "tokenizer.json");
  json cfg = tokenizer_config_json.empty() ? json::object() : parse(tokenizer_config_json, "tokenizer_config.json");
  if (!cfg.is_object()) throw Error("tokenizer_config.json: expected a JSON object");
  try {
    return from_spec(spec_from_json(tj, cfg));
  } catch (const json::exception& e) {
    throw Error(std::string("tokenizer.json: unexpected value: ") + e.what());
  }
}

Tokenizer Tokenizer::from_hf_path(const std::string& path) {
  std::filesystem::path p(path);
  std::filesystem::path dir = std::filesystem::is_directory(p) ? p : p.parent_path();
  std::filesystem::path tj = std::filesystem::is_directory(p) ? p / "tokenizer.json" : p;
  std::string cfg;
  if (std::filesystem::exists(dir / "tokenizer_config.json")) cfg = read_file(dir / "tokenizer_config.json");
  return from_hf(read_file(tj), cfg);
}

}  // namespace ember
