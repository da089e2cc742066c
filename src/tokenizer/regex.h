// Pre-tokenizer regular expressions. tokenizer.json patterns are written for
// Oniguruma; the reference tokenizer translates a few constructs (\s as the
// Unicode White_Space set, ASCII-only case folding inside (?i:...)). Regex applies
// the same translation and compiles the result with PCRE2 (UTF + UCP + JIT).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

class Regex {
 public:
  // Throws ember::Error naming `what` (e.g. "pre_tokenizer Split pattern") when the
  // pattern does not compile.
  Regex(std::string_view pattern, const std::string& what);
  // A pattern that matches `literal` exactly.
  static Regex literal(std::string_view literal, const std::string& what);

  // Bytes of text one match sees at first (see find_all).
  static constexpr size_t kWindowBytes = 64 * 1024;

  // Appends [start, end) byte offsets of every match in `text` (valid UTF-8),
  // left to right; an empty match advances by one character.
  //
  // Long texts are matched in pieces: each match sees the text from its start
  // position up to `window` bytes further (plus the rest of a character) and
  // is accepted only when PCRE2's hard partial matching says that no
  // character past the window was needed, looked at or could change it; else
  // the window doubles, up to the whole text. The matches are therefore
  // exactly those of the whole text, for any pattern and any window (tests
  // force small windows), while the regex engine's work per match stays
  // proportional to the text the match depends on, not to the text's length.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out,
                size_t window = kWindowBytes) const;
  const std::string& source() const { return source_; }

 struct Compiled;  // the PCRE2 code (opaque)

 private:
  std::shared_ptr<const Compiled> re_;
  std::string source_;
};

// The translation Regex applies, exposed for tests.
std::string translate_oniguruma(std::string_view pattern);

}  // namespace ember
