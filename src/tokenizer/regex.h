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

  // Appends [start, end) byte offsets of every match in `text` (valid UTF-8),
  // left to right; an empty match advances by one character.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  const std::string& source() const { return source_; }

 struct Compiled;  // the PCRE2 code (opaque)

 private:
  std::shared_ptr<const Compiled> re_;
  std::string source_;
};

// The translation Regex applies, exposed for tests.
std::string translate_oniguruma(std::string_view pattern);

}  // namespace ember
