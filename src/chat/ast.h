// Syntax tree of a parsed template. Plain data: the parser builds it, the interpreter walks it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chat/value.h"

namespace ember::chat {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;

struct Expr {
  enum class Kind {
    Literal,     // literal: an int, float or string
    Identifier,  // name
    List,        // children: items
    Tuple,       // children: items
    Dict,        // children: key0, value0, key1, value1, ...
    Member,      // children: object, property; flag: computed (x[...]) rather than x.name
    Slice,       // children: start, stop, step (each may be null)
    Call,        // children: callee, arguments...
    Filter,      // children: operand, filter (an Identifier, or a Call of an Identifier)
    Test,        // name: test; children: operand; flag: negated (is not)
    Unary,       // name: "not", "-" or "+"; children: operand
    Binary,      // name: operator; children: left, right
    Ternary,     // children: condition, value if true, value if false
    Select,      // `a if c` without else (undefined when c is false); children: a, c
    KwArg,       // name=value in a call; name: key; children: value
    Spread,      // *value in a call
    KwSpread,    // **value in a call
  };
  Kind kind;
  int line = 0;
  int height = 1;  // longest path to a leaf, bounded so evaluation cannot exhaust the stack
  bool flag = false;
  std::string name;
  Value literal;
  std::vector<ExprPtr> children;
};

struct Stmt {
  enum class Kind {
    Output,       // expr: value to print (template text is a string literal)
    If,           // expr: test; body; alternate (an elif is a nested If there)
    For,          // target: loop variable(s); expr: iterable (a Select when filtered); body; alternate: else
    Set,          // target; expr: value, or null when the body is the value ({% set x %}...{% endset %})
    Macro,        // name; params; body
    CallBlock,    // expr: the Call; params: caller's parameters; body: caller's body
    FilterBlock,  // expr: filter (Identifier or Call); body
    Break,
    Continue,
    Comment,
  };
  Kind kind;
  int line = 0;
  std::string name;
  ExprPtr expr;
  ExprPtr target;
  std::vector<ExprPtr> params;  // Identifier, or KwArg for a parameter with a default
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> alternate;
};

}  // namespace ember::chat
