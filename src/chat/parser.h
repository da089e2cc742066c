// Tokens -> syntax tree, with the grammar and operator precedence of the reference renderer
// (lowest first: `a if c else b`, or, and, not, comparisons and `in`, + - ~, * / // %, **,
// `is` tests, | filters, unary sign, calls and member access).
#pragma once
#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace ember::chat {

std::vector<StmtPtr> parse(const std::vector<Token>& tokens);

// Filter and test names Jinja knows. An unknown name is a syntax error (as in Python Jinja);
// a known one ember does not implement fails when it is applied.
bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

}  // namespace ember::chat
