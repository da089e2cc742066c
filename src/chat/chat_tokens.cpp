#include "chat/chat_tokens.h"

#include <string_view>

#include "tokenizer/impl.h"
#include "util/error.h"

namespace ember::chat {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kOpen = "\xEE\x80\x80";   // U+E000
constexpr std::string_view kClose = "\xEE\x80\x81";  // U+E001

// Replaces special-token spellings (and the placeholder characters themselves)
// in request strings by placeholders, and puts them back after rendering.
class Escaper {
 public:
  explicit Escaper(const Tokenizer& tok) {
    for (const AddedToken& a : tok.spec().added)
      if (a.special && !a.content.empty()) add(a.content);
    add(std::string(kOpen));
    add(std::string(kClose));
  }

  void escape_json(ojson& j) {
    if (j.is_string()) {
      std::string& s = j.get_ref<std::string&>();
      if (needs_escape(s)) s = escape(s);
    } else if (j.is_array() || j.is_object()) {
      for (auto& e : j) escape_json(e);
    }
  }

  // Puts the spellings back; returns the byte ranges of the special-token ones.
  std::vector<std::pair<size_t, size_t>> restore(std::string& text) const {
    std::vector<std::pair<size_t, size_t>> zones;
    if (text.find(kOpen) == std::string::npos) return zones;
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
      const size_t at = text.find(kOpen, i);
      if (at == std::string::npos) break;
      out.append(text, i, at - i);
      size_t k = at + kOpen.size(), index = 0, digits = 0;
      while (k < text.size() && text[k] >= '0' && text[k] <= '9' && digits < 9) index = index * 10 + size_t(text[k++] - '0'), ++digits;
      if (digits > 0 && index < table_.size() && text.compare(k, kClose.size(), kClose) == 0) {
        const std::string& original = table_[index];
        if (!is_marker(index)) zones.emplace_back(out.size(), out.size() + original.size());
        out += original;
        i = k + kClose.size();
      } else {  // a placeholder the template cut apart: keep the character as text
        out += kOpen;
        i = at + kOpen.size();
      }
    }
    out.append(text, i, std::string::npos);
    text.swap(out);
    return zones;
  }

 private:
  void add(const std::string& s) {
    trie_.add(s, int32_t(table_.size()));
    table_.push_back(s);
  }
  bool is_marker(size_t index) const { return table_[index] == kOpen || table_[index] == kClose; }
  bool needs_escape(const std::string& s) const {
    for (size_t i = 0; i < s.size(); ++i)
      if (trie_.may_start(uint8_t(s[i])) && trie_.longest_at(s, i).first > 0) return true;
    return false;
  }
  std::string escape(const std::string& s) const {
    std::string out;
    out.reserve(s.size() + 16);
    for (size_t i = 0; i < s.size();) {
      if (trie_.may_start(uint8_t(s[i]))) {
        const auto [len, index] = trie_.longest_at(s, i);
        if (len > 0) {
          out += kOpen;
          out += std::to_string(index);
          out += kClose;
          i += len;
          continue;
        }
      }
      out += s[i++];
    }
    return out;
  }

  AddedTokenTrie trie_;
  std::vector<std::string> table_;
};

}  // namespace

ChatPrompt encode_chat(const Tokenizer& tok, const Template& tmpl, const ChatRequest& req, SpecialTokens mode) {
  ChatPrompt p;
  if (mode == SpecialTokens::Everywhere) {
    p.text = render_chat_template(tmpl, req, tok.bos_token(), tok.eos_token());
    p.ids = tok.encode(p.text, /*add_special=*/false, /*parse_special=*/true);
    return p;
  }
  Escaper esc(tok);
  ChatRequest escaped = req;
  esc.escape_json(escaped.messages);
  esc.escape_json(escaped.tools);
  esc.escape_json(escaped.kwargs);
  p.text = render_chat_template(tmpl, escaped, tok.bos_token(), tok.eos_token());
  p.request_specials = esc.restore(p.text);
  p.ids = tok.encode_with_plain_zones(p.text, p.request_specials, /*add_special=*/false);
  return p;
}

ChatPrompt encode_chat(const Tokenizer& tok, const std::string& template_source, const ChatRequest& req,
                       SpecialTokens mode) {
  if (template_source.find(kOpen) != std::string::npos || template_source.find(kClose) != std::string::npos)
    throw Error("the chat template contains U+E000 or U+E001, which ember reserves to keep message text apart");
  return encode_chat(tok, Template::parse(template_source), req, mode);
}

}  // namespace ember::chat
