#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "util/error.h"
#include "util/quote.h"

#include <algorithm>
#include <cstdint>

namespace ember {

namespace {
// Unicode White_Space, the set the reference uses for \s (PCRE2's \s differs in
// a few code points depending on version).
const char kWhiteSpaceItems[] =
    "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char other_case(char c) { return (c >= 'a' && c <= 'z') ? char(c - 32) : char(c + 32); }
}  // namespace

std::string translate_oniguruma(std::string_view p) {
  std::string out;
  std::vector<bool> fold_stack;  // case folding state saved at each open group
  bool fold = false;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      if (n == 's') {
        out += in_class ? std::string(kWhiteSpaceItems) : "[" + std::string(kWhiteSpaceItems) + "]";
        ++i;
        continue;
      }
      if (n == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpaceItems) + "]";
        ++i;
        continue;
      }
      // Any other escape (including \p{..}, \x{..}) passes through whole.
      out += c;
      out += n;
      ++i;
      if ((n == 'p' || n == 'P' || n == 'x') && i + 1 < p.size() && p[i + 1] == '{') {
        while (++i < p.size()) { out += p[i]; if (p[i] == '}') break; }
      }
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      if (fold && is_ascii_letter(c)) out += other_case(c);
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') { out += '^'; ++i; }
      if (i + 1 < p.size() && p[i + 1] == ']') { out += "\\]"; ++i; }
      continue;
    }
    if (c == '(') {
      fold_stack.push_back(fold);
      if (p.substr(i, 4) == "(?i:") {
        // ASCII-only case folding, as the reference does (no ſ for s, no K for k).
        fold = true;
        out += "(?:";
        i += 3;
        continue;
      }
      out += c;
      continue;
    }
    if (c == ')') {
      if (!fold_stack.empty()) { fold = fold_stack.back(); fold_stack.pop_back(); }
      out += c;
      continue;
    }
    if (fold && is_ascii_letter(c)) {
      out += '[';
      out += c;
      out += other_case(c);
      out += ']';
      continue;
    }
    out += c;
  }
  return out;
}

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { if (code) pcre2_code_free(code); }
};

static std::shared_ptr<const Regex::Compiled> compile(const std::string& pattern, const std::string& what);

Regex::Regex(std::string_view pattern, const std::string& what) : source_(pattern) {
  re_ = compile(translate_oniguruma(pattern), what);
}

Regex Regex::literal(std::string_view lit, const std::string& what) {
  std::string quoted = "\\Q";
  for (size_t i = 0; i < lit.size(); ++i) {
    // \E inside \Q..\E would end the quote early: split it.
    if (lit[i] == '\\' && i + 1 < lit.size() && lit[i + 1] == 'E') { quoted += "\\E\\\\\\QE"; ++i; continue; }
    quoted += lit[i];
  }
  quoted += "\\E";
  Regex r("", what);
  r.re_ = compile(quoted, what);
  r.source_ = std::string(lit);
  return r;
}

static std::shared_ptr<const Regex::Compiled> compile(const std::string& pattern, const std::string& what) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(what + ": cannot compile regex '" + excerpt(pattern) + "' at offset " + std::to_string(off) + ": " +
                reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD);  // falls back to the interpreter if JIT is unavailable
  auto c = std::make_shared<Regex::Compiled>();
  c->code = code;
  return c;
}

namespace {
// Match-step ceiling for a subject of `bytes` bytes. PCRE2's default (10^7 steps
// per match) is reached by the shipped patterns on one long run of whitespace
// (`\s*[\r\n]+` first takes the whole run, then backs off one character at a
// time). Those patterns stay linear, so the limit grows with the text the match
// sees: a 10 MB run still tokenizes, while a pathological pattern from a hostile
// tokenizer.json still fails with an error instead of running for hours.
uint32_t match_limit(size_t bytes) {
  return uint32_t(std::min<uint64_t>(UINT32_MAX, std::max<uint64_t>(10'000'000, 8 * uint64_t(bytes))));
}

// `pos` moved forward to the start of a UTF-8 character.
size_t char_boundary(std::string_view text, size_t pos) {
  while (pos < text.size() && (uint8_t(text[pos]) & 0xC0) == 0x80) ++pos;
  return pos;
}
}  // namespace

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out, size_t window) const {
  // One match-data block and match context per thread, freed when the thread ends
  // (a server's connection threads come and go).
  struct Scratch {
    pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
    pcre2_match_context* mc = pcre2_match_context_create(nullptr);
    ~Scratch() {
      pcre2_match_data_free(md);
      pcre2_match_context_free(mc);
    }
  };
  thread_local Scratch scratch;
  pcre2_match_data* md = scratch.md;
  pcre2_match_context* mc = scratch.mc;
  // The subject always starts at the text's start, so lookbehinds see what they
  // would in the whole text; only its end moves.
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  window = std::max<size_t>(window, 1);
  size_t pos = 0;
  while (pos <= text.size()) {
    // Match from `pos` within [pos, end): a complete match or "no match" under
    // PCRE2_PARTIAL_HARD never read the end of the subject (reaching it returns
    // PCRE2_ERROR_PARTIAL at once, and so do \z, \Z, \b, \B and $ there), so
    // it is what the whole text gives. On a partial result the window doubles.
    size_t span = window, end = 0;
    int rc = 0;
    for (;;) {
      end = span >= text.size() - pos ? text.size() : char_boundary(text, pos + span);
      const bool whole = end == text.size();
      pcre2_set_match_limit(mc, match_limit(end - pos));
      rc = pcre2_match(re_->code, subject, end, pos, PCRE2_NO_UTF_CHECK | (whole ? 0 : PCRE2_PARTIAL_HARD), md, mc);
      if (rc != PCRE2_ERROR_PARTIAL) break;
      span = span > text.size() ? text.size() : span * 2;
    }
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (end == text.size()) break;
      pos = end;  // no match starts before `end`
      continue;
    }
    if (rc < 0) throw Error("regex '" + excerpt(source_) + "': match failed (PCRE2 error " + std::to_string(rc) + ")");
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (e == s) {
      // Empty match: step over one character, as JavaScript's matchAll does.
      if (s >= text.size()) break;
      pos = char_boundary(text, s + 1);
      continue;
    }
    out.emplace_back(s, e);
    pos = e;
  }
}

}  // namespace ember
