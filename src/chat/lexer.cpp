#include "chat/lexer.h"

#include "chat/text.h"
#include "util/error.h"

namespace ember::chat {

const char* token_type_name(TokenType t) {
  switch (t) {
    case TokenType::Text: return "text";
    case TokenType::Number: return "number";
    case TokenType::String: return "string";
    case TokenType::Identifier: return "identifier";
    case TokenType::Equals: return "'='";
    case TokenType::OpenParen: return "'('";
    case TokenType::CloseParen: return "')'";
    case TokenType::OpenStatement: return "'{%'";
    case TokenType::CloseStatement: return "'%}'";
    case TokenType::OpenExpression: return "'{{'";
    case TokenType::CloseExpression: return "'}}'";
    case TokenType::OpenBracket: return "'['";
    case TokenType::CloseBracket: return "']'";
    case TokenType::OpenBrace: return "'{'";
    case TokenType::CloseBrace: return "'}'";
    case TokenType::Comma: return "','";
    case TokenType::Dot: return "'.'";
    case TokenType::Colon: return "':'";
    case TokenType::Pipe: return "'|'";
    case TokenType::Additive: return "additive operator";
    case TokenType::Multiplicative: return "multiplicative operator";
    case TokenType::Power: return "'**'";
    case TokenType::Comparison: return "comparison operator";
    case TokenType::UnarySign: return "sign";
    case TokenType::Comment: return "comment";
    case TokenType::End: return "end of template";
  }
  return "?";
}

namespace {

// Source text with the original line of every byte, so errors point at the user's template
// even after the whitespace rules have removed newlines.
struct Source {
  std::string s;
  std::vector<int> line;
  void push(char c, int l) {
    s += c;
    line.push_back(l);
  }
  bool starts(size_t i, const char* lit) const { return s.compare(i, std::char_traits<char>::length(lit), lit) == 0; }
};

bool is_line_start(const std::string& s, size_t i) {
  if (i == 0) return true;
  char p = s[i - 1];
  if (p == '\n' || p == '\r') return true;
  // U+2028 / U+2029 also end lines for JavaScript's multiline `^`.
  return i >= 3 && s.compare(i - 3, 2, "\xE2\x80") == 0 && (s[i - 1] == '\xA8' || s[i - 1] == '\xA9');
}

Source preprocess(const std::string& raw) {
  Source src;
  int line = 1;
  for (char c : raw) {
    src.push(c, line);
    if (c == '\n') ++line;
  }
  if (!src.s.empty() && src.s.back() == '\n') {
    src.s.pop_back();
    src.line.pop_back();
  }
  // lstrip_blocks: spaces and tabs at the start of a line before "{%", "{#" or "{-" go.
  Source a;
  for (size_t i = 0; i < src.s.size();) {
    if (is_line_start(src.s, i)) {
      size_t j = i;
      while (j < src.s.size() && (src.s[j] == ' ' || src.s[j] == '\t')) ++j;
      if (j > i && (src.starts(j, "{%") || src.starts(j, "{#") || src.starts(j, "{-"))) {
        i = j;
        // copy the '{' now so this position is not taken as a line start again
        a.push(src.s[i], src.line[i]);
        ++i;
        continue;
      }
    }
    a.push(src.s[i], src.line[i]);
    ++i;
  }
  // trim_blocks: the newline right after "%}", "#}" or "-}" goes.
  Source b;
  for (size_t i = 0; i < a.s.size();) {
    char c = a.s[i];
    if ((c == '%' || c == '#' || c == '-') && a.starts(i + 1, "}\n")) {
      b.push(c, a.line[i]);
      b.push('}', a.line[i + 1]);
      i += 3;
      continue;
    }
    b.push(c, a.line[i]);
    ++i;
  }
  // {% generation %} / {% endgeneration %} only mark assistant text for training masks and
  // render nothing; the whitespace around a tag stays unless a '-' on that side removes it.
  Source out;
  size_t protect = 0;  // output bytes before this belong to an earlier match
  for (size_t i = 0; i < b.s.size();) {
    if (b.starts(i, "{%")) {
      size_t j = i + 2;
      bool lstrip = j < b.s.size() && b.s[j] == '-';
      if (lstrip) ++j;
      while (size_t n = text::space_len(b.s, j)) j += n;
      if (b.starts(j, "end")) j += 3;
      if (b.starts(j, "generation")) {
        j += 10;
        while (size_t n = text::space_len(b.s, j)) j += n;
        bool rstrip = j < b.s.size() && b.s[j] == '-';
        if (rstrip) ++j;
        if (b.starts(j, "%}")) {
          j += 2;
          if (lstrip) {
            size_t start = 0;
            while (out.s.size() > protect && text::space_before(out.s, out.s.size(), &start) && start >= protect) {
              out.s.resize(start);
              out.line.resize(start);
            }
          }
          while (size_t n = text::space_len(b.s, j)) {
            if (!rstrip)
              for (size_t k = 0; k < n; ++k) out.push(b.s[j + k], b.line[j + k]);
            j += n;
          }
          protect = out.s.size();
          i = j;
          continue;
        }
      }
    }
    out.push(b.s[i], b.line[i]);
    ++i;
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : src_(preprocess(source)), s_(src_.s) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) step();
    return std::move(tokens_);
  }

 private:
  Source src_;
  const std::string& s_;
  size_t pos_ = 0;
  int brace_depth_ = 0;
  std::vector<Token> tokens_;

  char at(size_t i) const { return i < s_.size() ? s_[i] : '\0'; }
  int line_at(size_t i) const {
    if (src_.line.empty()) return 1;
    return i < src_.line.size() ? src_.line[i] : src_.line.back();
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("template syntax error at line " + std::to_string(line_at(pos_)) + ": " + what);
  }
  void push(TokenType t, std::string v, size_t start) { tokens_.push_back(Token{t, std::move(v), line_at(start)}); }
  TokenType last_type() const { return tokens_.empty() ? TokenType::End : tokens_.back().type; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  void strip_trailing_whitespace() {
    if (!tokens_.empty() && tokens_.back().type == TokenType::Text) {
      tokens_.back().value = text::trim_end(tokens_.back().value);
      if (tokens_.back().value.empty()) tokens_.pop_back();
    }
  }
  void skip_leading_whitespace() {
    while (size_t n = text::space_len(s_, pos_)) pos_ += n;
  }

  // Characters while `pred` holds; running into the end of the template inside a token is an
  // error (an unterminated string, or an expression tag that never closes).
  template <class Pred>
  std::string consume_while(Pred pred, bool escapes) {
    std::string out;
    while (pos_ >= s_.size() || pred(s_[pos_])) {
      if (pos_ >= s_.size()) fail("unexpected end of template");
      if (escapes && s_[pos_] == '\\') {
        ++pos_;
        if (pos_ >= s_.size()) fail("unexpected end of template");
        char e = s_[pos_++];
        if (e == 'x' || e == 'u') {
          size_t len = e == 'x' ? 2 : 4;
          if (pos_ + len > s_.size()) fail(std::string("invalid \\") + e + " escape");
          unsigned v = 0;
          for (size_t k = 0; k < len; ++k) {
            char h = s_[pos_ + k];
            int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (d < 0) fail(std::string("invalid \\") + e + " escape");
            v = v * 16 + unsigned(d);
          }
          pos_ += len;
          append_code_unit(out, v);
          continue;
        }
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'v': out += '\v'; break;
          case '\'': out += '\''; break;
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          default: fail(std::string("unexpected escaped character '") + e + "'");
        }
        continue;
      }
      out += s_[pos_++];
      if (pos_ >= s_.size()) fail("unexpected end of template");
    }
    return out;
  }

  // \uXXXX gives UTF-16 code units; a high surrogate followed by a low one forms one character.
  unsigned pending_high_ = 0;
  void append_code_unit(std::string& out, unsigned unit) {
    if (unit >= 0xDC00 && unit <= 0xDFFF && out.size() >= 3 && pending_high_ &&
        out.compare(out.size() - 3, 3, "\xEF\xBF\xBD") == 0) {
      out.resize(out.size() - 3);
      text::append_utf8(out, 0x10000 + ((pending_high_ - 0xD800) << 10) + (unit - 0xDC00));
      pending_high_ = 0;
      return;
    }
    pending_high_ = (unit >= 0xD800 && unit <= 0xDBFF) ? unit : 0;
    text::append_utf8(out, unit);  // a lone surrogate becomes U+FFFD
  }

  void step() {
    TokenType last = last_type();
    if (last == TokenType::End || last == TokenType::CloseStatement || last == TokenType::CloseExpression ||
        last == TokenType::Comment) {
      size_t start = pos_;
      while (pos_ < s_.size() && !(s_[pos_] == '{' && (at(pos_ + 1) == '%' || at(pos_ + 1) == '{' || at(pos_ + 1) == '#'))) ++pos_;
      if (pos_ > start) {
        push(TokenType::Text, s_.substr(start, pos_ - start), start);
        return;
      }
    }
    if (at(pos_) == '{' && at(pos_ + 1) == '#') {
      size_t start = pos_;
      pos_ += 2;
      bool strip_before = at(pos_) == '-';
      if (strip_before) ++pos_;
      std::string comment;
      while (at(pos_) != '#' || at(pos_ + 1) != '}') {
        if (pos_ + 2 >= s_.size()) fail("comment is not closed with '#}'");
        comment += s_[pos_++];
      }
      bool strip_after = !comment.empty() && comment.back() == '-';
      if (strip_after) comment.pop_back();
      if (strip_before) strip_trailing_whitespace();
      push(TokenType::Comment, comment, start);
      pos_ += 2;
      if (strip_after) skip_leading_whitespace();
      return;
    }
    if (s_.compare(pos_, 3, "{%-") == 0) {
      strip_trailing_whitespace();
      push(TokenType::OpenStatement, "{%", pos_);
      pos_ += 3;
      return;
    }
    if (s_.compare(pos_, 3, "{{-") == 0) {
      strip_trailing_whitespace();
      push(TokenType::OpenExpression, "{{", pos_);
      brace_depth_ = 0;
      pos_ += 3;
      return;
    }
    consume_while([](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }, false);
    // (multi-byte JavaScript spaces inside tags are rare; they fall through to "unexpected character")
    if (s_.compare(pos_, 3, "-%}") == 0) {
      push(TokenType::CloseStatement, "%}", pos_);
      pos_ += 3;
      skip_leading_whitespace();
      return;
    }
    if (s_.compare(pos_, 3, "-}}") == 0) {
      push(TokenType::CloseExpression, "}}", pos_);
      pos_ += 3;
      skip_leading_whitespace();
      return;
    }
    char c = s_[pos_];
    size_t start = pos_;
    if (c == '-' || c == '+') {
      TokenType prev = last_type();
      if (prev == TokenType::Text || prev == TokenType::End) fail(std::string("unexpected character '") + c + "'");
      bool binary = prev == TokenType::Identifier || prev == TokenType::Number || prev == TokenType::String ||
                    prev == TokenType::CloseParen || prev == TokenType::CloseBracket;
      if (!binary) {
        ++pos_;
        std::string num = consume_while(is_digit, false);
        if (!num.empty() && at(pos_) == '.' && is_digit(at(pos_ + 1))) {
          ++pos_;
          num += "." + consume_while(is_digit, false);
        }
        push(num.empty() ? TokenType::UnarySign : TokenType::Number, std::string(1, c) + num, start);
        return;
      }
    }
    if (match_operator()) return;
    if (c == '\'' || c == '"') {
      ++pos_;
      pending_high_ = 0;
      std::string str = consume_while([c](char x) { return x != c; }, true);
      push(TokenType::String, std::move(str), start);
      ++pos_;
      return;
    }
    if (is_digit(c)) {
      std::string num = consume_while(is_digit, false);
      if (last_type() != TokenType::Dot && at(pos_) == '.' && is_digit(at(pos_ + 1))) {
        ++pos_;
        num += "." + consume_while(is_digit, false);
      }
      push(TokenType::Number, std::move(num), start);
      return;
    }
    if (text::is_word_byte(c)) {
      push(TokenType::Identifier, consume_while(text::is_word_byte, false), start);
      return;
    }
    fail("unexpected character '" + s_.substr(pos_, text::char_len(s_, pos_)) + "'");
  }

  bool match_operator() {
    struct Op {
      const char* text;
      TokenType type;
    };
    static const Op table[] = {
        {"{%", TokenType::OpenStatement}, {"%}", TokenType::CloseStatement}, {"{{", TokenType::OpenExpression},
        {"}}", TokenType::CloseExpression}, {"(", TokenType::OpenParen}, {")", TokenType::CloseParen},
        {"{", TokenType::OpenBrace}, {"}", TokenType::CloseBrace}, {"[", TokenType::OpenBracket},
        {"]", TokenType::CloseBracket}, {",", TokenType::Comma}, {".", TokenType::Dot}, {":", TokenType::Colon},
        {"|", TokenType::Pipe}, {"<=", TokenType::Comparison}, {">=", TokenType::Comparison},
        {"==", TokenType::Comparison}, {"!=", TokenType::Comparison}, {"<", TokenType::Comparison},
        {">", TokenType::Comparison}, {"+", TokenType::Additive}, {"-", TokenType::Additive},
        {"~", TokenType::Additive}, {"**", TokenType::Power}, {"*", TokenType::Multiplicative},
        {"//", TokenType::Multiplicative}, {"/", TokenType::Multiplicative}, {"%", TokenType::Multiplicative},
        {"=", TokenType::Equals},
    };
    for (const Op& op : table) {
      // inside a dict literal "}}" closes two braces rather than the expression
      if (op.type == TokenType::CloseExpression && brace_depth_ > 0) continue;
      size_t len = std::char_traits<char>::length(op.text);
      if (s_.compare(pos_, len, op.text) != 0) continue;
      push(op.type, op.text, pos_);
      if (op.type == TokenType::OpenExpression) brace_depth_ = 0;
      else if (op.type == TokenType::OpenBrace) ++brace_depth_;
      else if (op.type == TokenType::CloseBrace) --brace_depth_;
      pos_ += len;
      return true;
    }
    return false;
  }
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace ember::chat
