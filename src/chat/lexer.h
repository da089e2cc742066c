// Template source -> tokens. Whitespace handling follows the reference renderer, which the
// Hugging Face chat templates are written against: trim_blocks and lstrip_blocks are on, one
// trailing newline of the source is dropped, and `{%-`/`-%}`/`{{-`/`-}}`/`{#-`/`-#}` strip the
// whitespace next to them.
#pragma once
#include <string>
#include <vector>

namespace ember::chat {

enum class TokenType {
  Text,
  Number,  // digits, or a sign followed by digits where a value is expected ("-1")
  String,
  Identifier,
  Equals,
  OpenParen,
  CloseParen,
  OpenStatement,   // {%
  CloseStatement,  // %}
  OpenExpression,  // {{
  CloseExpression, // }}
  OpenBracket,
  CloseBracket,
  OpenBrace,
  CloseBrace,
  Comma,
  Dot,
  Colon,
  Pipe,
  Additive,        // + - ~
  Multiplicative,  // * / // %
  Power,           // **
  Comparison,      // < > <= >= == !=
  UnarySign,       // - or + before a non-number where a value is expected
  Comment,
  End,             // past the last token
};

struct Token {
  TokenType type;
  std::string value;
  int line;  // 1-based line in the original template source
};

const char* token_type_name(TokenType t);

std::vector<Token> tokenize(const std::string& source);

}  // namespace ember::chat
