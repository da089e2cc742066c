#include "chat/parser.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <set>

#include "util/error.h"

namespace ember::chat {

bool is_known_filter(const std::string& name) {
  static const std::set<std::string> names = {
      "abs", "attr", "batch", "bool", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
      "filesizeformat", "first", "float", "forceescape", "format", "get", "groupby", "indent", "int", "items",
      "join", "keys", "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject",
      "rejectattr", "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string",
      "striptags", "sum", "title", "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "values",
      "wordcount", "wordwrap", "xmlattr"};
  return names.count(name) > 0;
}

bool is_known_test(const std::string& name) {
  static const std::set<std::string> names = {
      "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "filter",
      "float", "ge", "greaterthan", "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping",
      "ne", "none", "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper"};
  return names.count(name) > 0;
}

namespace {

constexpr int kMaxNesting = 200;  // statements inside statements, and expression tree height

using EK = Expr::Kind;
using SK = Stmt::Kind;
using TT = TokenType;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  std::vector<StmtPtr> program() {
    std::vector<StmtPtr> out;
    while (cur_ < t_.size()) out.push_back(parse_any());
    return out;
  }

 private:
  const std::vector<Token>& t_;
  size_t cur_ = 0;
  int depth_ = 0;
  Token end_{TT::End, "", 0};

  const Token& peek(size_t ahead = 0) const {
    if (cur_ + ahead < t_.size()) return t_[cur_ + ahead];
    return end_;
  }
  int line() const {
    if (cur_ < t_.size()) return t_[cur_].line;
    return t_.empty() ? 1 : t_.back().line;
  }
  [[noreturn]] void fail(const std::string& what, int at_line = -1) const {
    throw Error("template syntax error at line " + std::to_string(at_line < 0 ? line() : at_line) + ": " + what);
  }
  std::string describe(const Token& tok) const {
    if (tok.type == TT::Identifier) return "'" + tok.value + "'";
    if (tok.type == TT::String) return "string";
    if (tok.type == TT::Number) return "number " + tok.value;
    return token_type_name(tok.type);
  }
  const Token& expect(TT type, const char* what) {
    const Token& tok = peek();
    if (tok.type != type) fail(std::string("expected ") + what + ", got " + describe(tok));
    ++cur_;
    return tok;
  }
  bool is(TT type) const { return peek().type == type; }
  bool is_ident(const char* name, size_t ahead = 0) const {
    return peek(ahead).type == TT::Identifier && peek(ahead).value == name;
  }
  bool is_statement(std::initializer_list<const char*> names) const {
    if (peek().type != TT::OpenStatement || peek(1).type != TT::Identifier) return false;
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return peek(1).value == n; });
  }
  void expect_end_tag(const char* name, const char* opened, int opened_line) {
    if (!is_statement({name}))
      fail(std::string("'{% ") + opened + " %}' from line " + std::to_string(opened_line) + " is not closed with '{% " +
           name + " %}'");
    cur_ += 2;
    expect(TT::CloseStatement, "'%}'");
  }
  // Statements until one of `names`; running out of tokens means the block was never closed.
  void parse_body(std::vector<StmtPtr>& out, std::initializer_list<const char*> names, const char* opened, int opened_line) {
    while (!is_statement(names)) {
      if (cur_ >= t_.size())
        fail(std::string("'{% ") + opened + " %}' from line " + std::to_string(opened_line) + " is not closed");
      out.push_back(parse_any());
    }
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.fail("template nests too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  ExprPtr node(EK kind, int ln) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = ln;
    return e;
  }
  ExprPtr add(ExprPtr parent, ExprPtr child) {
    if (child) parent->height = std::max(parent->height, child->height + 1);
    if (parent->height > kMaxNesting) fail("expression nests too deeply", parent->line);
    parent->children.push_back(std::move(child));
    return parent;
  }
  ExprPtr binary(EK kind, std::string op, ExprPtr l, ExprPtr r, int ln) {
    auto e = node(kind, ln);
    e->name = std::move(op);
    e = add(std::move(e), std::move(l));
    return add(std::move(e), std::move(r));
  }

  StmtPtr stmt(SK kind, int ln) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = ln;
    return s;
  }

  StmtPtr parse_any() {
    DepthGuard guard(*this);
    const Token& tok = peek();
    switch (tok.type) {
      case TT::Comment: {
        ++cur_;
        return stmt(SK::Comment, tok.line);
      }
      case TT::Text: {
        ++cur_;
        auto s = stmt(SK::Output, tok.line);
        s->expr = node(EK::Literal, tok.line);
        s->expr->literal = Value::string(tok.value);
        return s;
      }
      case TT::OpenStatement: return parse_statement();
      case TT::OpenExpression: {
        ++cur_;
        auto s = stmt(SK::Output, tok.line);
        s->expr = parse_expression();
        expect(TT::CloseExpression, "'}}'");
        return s;
      }
      default: fail("unexpected " + describe(tok));
    }
  }

  StmtPtr parse_statement() {
    expect(TT::OpenStatement, "'{%'");
    const Token& name_tok = peek();
    if (name_tok.type != TT::Identifier) fail("expected a statement name after '{%', got " + describe(name_tok));
    const std::string name = name_tok.value;
    int ln = name_tok.line;
    ++cur_;
    if (name == "set") return parse_set(ln);
    if (name == "if") {
      auto s = parse_if(ln);
      expect_end_tag("endif", "if", ln);
      return s;
    }
    if (name == "for") {
      auto s = parse_for(ln);
      expect_end_tag("endfor", "for", ln);
      return s;
    }
    if (name == "macro") {
      auto s = stmt(SK::Macro, ln);
      auto id = parse_primary();
      if (id->kind != EK::Identifier) fail("expected a macro name");
      s->name = id->name;
      s->params = parse_args(true);
      expect(TT::CloseStatement, "'%}'");
      parse_body(s->body, {"endmacro"}, "macro", ln);
      expect_end_tag("endmacro", "macro", ln);
      return s;
    }
    if (name == "call") {
      auto s = stmt(SK::CallBlock, ln);
      if (is(TT::OpenParen)) s->params = parse_args(true);
      auto callee = parse_primary();
      if (callee->kind != EK::Identifier) fail("expected a macro name after 'call'");
      auto call = node(EK::Call, ln);
      call = add(std::move(call), std::move(callee));
      for (auto& a : parse_args(false)) call = add(std::move(call), std::move(a));
      s->expr = std::move(call);
      expect(TT::CloseStatement, "'%}'");
      parse_body(s->body, {"endcall"}, "call", ln);
      expect_end_tag("endcall", "call", ln);
      return s;
    }
    if (name == "break" || name == "continue") {
      expect(TT::CloseStatement, "'%}'");
      return stmt(name == "break" ? SK::Break : SK::Continue, ln);
    }
    if (name == "filter") {
      auto s = stmt(SK::FilterBlock, ln);
      auto f = parse_primary();
      if (f->kind == EK::Identifier && is(TT::OpenParen)) f = parse_call(std::move(f));
      check_filter_name(*f);
      s->expr = std::move(f);
      expect(TT::CloseStatement, "'%}'");
      parse_body(s->body, {"endfilter"}, "filter", ln);
      expect_end_tag("endfilter", "filter", ln);
      return s;
    }
    fail("unsupported statement '{% " + name + " %}'", ln);
  }

  StmtPtr parse_set(int ln) {
    auto s = stmt(SK::Set, ln);
    s->target = parse_sequence(false);
    if (is(TT::Equals)) {
      ++cur_;
      s->expr = parse_sequence(false);
    } else {
      expect(TT::CloseStatement, "'=' or '%}'");
      parse_body(s->body, {"endset"}, "set", ln);
      cur_ += 2;  // {% endset
    }
    expect(TT::CloseStatement, "'%}'");
    return s;
  }

  StmtPtr parse_if(int ln) {
    DepthGuard guard(*this);  // each elif nests one level deeper
    auto s = stmt(SK::If, ln);
    s->expr = parse_expression();
    expect(TT::CloseStatement, "'%}'");
    parse_body(s->body, {"elif", "else", "endif"}, "if", ln);
    if (is_statement({"elif"})) {
      int elif_line = peek(1).line;
      cur_ += 2;
      s->alternate.push_back(parse_if(elif_line));
    } else if (is_statement({"else"})) {
      cur_ += 2;
      expect(TT::CloseStatement, "'%}'");
      parse_body(s->alternate, {"endif"}, "if", ln);
    }
    return s;
  }

  StmtPtr parse_for(int ln) {
    auto s = stmt(SK::For, ln);
    s->target = parse_sequence(true);
    if (s->target->kind != EK::Identifier && s->target->kind != EK::Tuple)
      fail("expected a name or names for the loop variable");
    if (!is_ident("in")) fail("expected 'in' after the loop variable");
    ++cur_;
    s->expr = parse_expression();
    expect(TT::CloseStatement, "'%}'");
    parse_body(s->body, {"endfor", "else"}, "for", ln);
    if (is_statement({"else"})) {
      cur_ += 2;
      expect(TT::CloseStatement, "'%}'");
      parse_body(s->alternate, {"endfor"}, "for", ln);
    }
    return s;
  }

  // a, b, c -> tuple; a single expression stays itself.
  ExprPtr parse_sequence(bool primary) {
    int ln = line();
    ExprPtr first = primary ? parse_primary() : parse_expression();
    if (!is(TT::Comma)) return first;
    auto tuple = node(EK::Tuple, ln);
    tuple = add(std::move(tuple), std::move(first));
    while (is(TT::Comma)) {
      ++cur_;
      tuple = add(std::move(tuple), primary ? parse_primary() : parse_expression());
    }
    return tuple;
  }

  ExprPtr parse_expression() {
    DepthGuard guard(*this);
    return parse_if_expression();
  }

  ExprPtr parse_if_expression() {
    ExprPtr a = parse_or();
    if (!is_ident("if")) return a;
    int ln = line();
    ++cur_;
    ExprPtr test = parse_or();
    if (is_ident("else")) {
      ++cur_;
      DepthGuard guard(*this);
      ExprPtr b = parse_if_expression();
      auto e = node(EK::Ternary, ln);
      e = add(std::move(e), std::move(test));
      e = add(std::move(e), std::move(a));
      return add(std::move(e), std::move(b));
    }
    return binary(EK::Select, "", std::move(a), std::move(test), ln);
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_ident("or")) {
      int ln = line();
      ++cur_;
      left = binary(EK::Binary, "or", std::move(left), parse_and(), ln);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_ident("and")) {
      int ln = line();
      ++cur_;
      left = binary(EK::Binary, "and", std::move(left), parse_not(), ln);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (!is_ident("not")) return parse_comparison();
    DepthGuard guard(*this);
    int ln = line();
    ++cur_;
    auto e = node(EK::Unary, ln);
    e->name = "not";
    return add(std::move(e), parse_not());
  }

  ExprPtr parse_comparison() {
    ExprPtr left = parse_additive();
    while (true) {
      int ln = line();
      std::string op;
      if (is_ident("not") && is_ident("in", 1)) {
        op = "not in";
        cur_ += 2;
      } else if (is_ident("in")) {
        op = "in";
        ++cur_;
      } else if (is(TT::Comparison)) {
        op = peek().value;
        ++cur_;
      } else {
        break;
      }
      left = binary(EK::Binary, op, std::move(left), parse_additive(), ln);
    }
    return left;
  }

  ExprPtr parse_additive() {
    ExprPtr left = parse_multiplicative();
    while (is(TT::Additive)) {
      int ln = line();
      std::string op = peek().value;
      ++cur_;
      left = binary(EK::Binary, op, std::move(left), parse_multiplicative(), ln);
    }
    return left;
  }

  ExprPtr parse_multiplicative() {
    ExprPtr left = parse_power();
    while (is(TT::Multiplicative)) {
      int ln = line();
      std::string op = peek().value;
      ++cur_;
      left = binary(EK::Binary, op, std::move(left), parse_power(), ln);
    }
    return left;
  }

  ExprPtr parse_power() {
    ExprPtr left = parse_test();
    while (is(TT::Power)) {
      int ln = line();
      ++cur_;
      left = binary(EK::Binary, "**", std::move(left), parse_test(), ln);
    }
    return left;
  }

  ExprPtr parse_test() {
    ExprPtr operand = parse_filter();
    while (is_ident("is")) {
      int ln = line();
      ++cur_;
      bool negate = is_ident("not");
      if (negate) ++cur_;
      auto name = parse_primary();
      if (name->kind != EK::Identifier) fail("expected a test name after 'is'");
      if (!is_known_test(name->name)) fail("unknown test '" + name->name + "'", ln);
      auto e = node(EK::Test, ln);
      e->name = name->name;
      e->flag = negate;
      operand = add(std::move(e), std::move(operand));
    }
    return operand;
  }

  void check_filter_name(const Expr& f) {
    const Expr& id = f.kind == EK::Call ? *f.children[0] : f;
    if (id.kind != EK::Identifier) fail("expected a filter name", f.line);
    if (!is_known_filter(id.name)) fail("unknown filter '" + id.name + "'", f.line);
  }

  ExprPtr parse_filter() {
    ExprPtr operand = parse_unary_sign();
    while (is(TT::Pipe)) {
      int ln = line();
      ++cur_;
      auto f = parse_primary();
      if (f->kind != EK::Identifier) fail("expected a filter name after '|'");
      if (is(TT::OpenParen)) f = parse_call(std::move(f));
      check_filter_name(*f);
      operand = binary(EK::Filter, "", std::move(operand), std::move(f), ln);
    }
    return operand;
  }

  ExprPtr parse_unary_sign() {
    const Token& tok = peek();
    if ((tok.type == TT::UnarySign || tok.type == TT::Additive) && (tok.value == "-" || tok.value == "+")) {
      DepthGuard guard(*this);
      ++cur_;
      auto e = node(EK::Unary, tok.line);
      e->name = tok.value;
      return add(std::move(e), parse_unary_sign());
    }
    ExprPtr member = parse_member(parse_primary());
    if (is(TT::OpenParen)) return parse_call(std::move(member));
    return member;
  }

  ExprPtr parse_call(ExprPtr callee) {
    while (true) {
      auto call = node(EK::Call, callee->line);
      call = add(std::move(call), std::move(callee));
      for (auto& a : parse_args(false)) call = add(std::move(call), std::move(a));
      callee = parse_member(std::move(call));
      if (!is(TT::OpenParen)) return callee;
    }
  }

  std::vector<ExprPtr> parse_args(bool parameters) {
    expect(TT::OpenParen, "'('");
    std::vector<ExprPtr> args;
    std::set<std::string> names;
    bool saw_keyword = false, saw_spread = false;
    while (!is(TT::CloseParen)) {
      if (is(TT::End)) fail("argument list is not closed with ')'");
      int ln = line();
      bool kw_spread = is(TT::Power);
      bool spread = is(TT::Multiplicative) && peek().value == "*";
      if (parameters && (kw_spread || spread)) fail("argument unpacking is not allowed in parameter declarations");
      if (kw_spread) {
        ++cur_;
        auto e = node(EK::KwSpread, ln);
        args.push_back(add(std::move(e), parse_expression()));
        if (is(TT::Comma)) ++cur_;
        if (!is(TT::CloseParen)) fail("'**' must be applied to the last argument");
        break;
      }
      ExprPtr arg;
      if (spread) {
        if (saw_spread) fail("only one '*' argument unpacking is allowed");
        saw_spread = true;
        ++cur_;
        arg = add(node(EK::Spread, ln), parse_expression());
      } else {
        arg = parse_expression();
        if (is(TT::Equals)) {
          ++cur_;
          if (arg->kind != EK::Identifier) fail("expected a name before '='");
          auto kw = node(EK::KwArg, ln);
          kw->name = arg->name;
          arg = add(std::move(kw), parse_expression());
        }
        if (parameters) {
          if (arg->kind != EK::Identifier && arg->kind != EK::KwArg) fail("expected a parameter name");
          if (!names.insert(arg->name).second) fail("duplicate parameter '" + arg->name + "'");
        }
        if (arg->kind == EK::KwArg) saw_keyword = true;
        else if (saw_keyword)
          fail(parameters ? "parameter without default follows one with a default"
                          : "positional argument follows keyword argument");
        else if (saw_spread) fail("positional argument follows '*' unpacking");
      }
      args.push_back(std::move(arg));
      if (is(TT::Comma)) ++cur_;
    }
    ++cur_;  // ')'
    return args;
  }

  // Inside [...]: an index, or a slice start:stop:step with any part left out.
  ExprPtr parse_subscript(int ln) {
    std::vector<ExprPtr> parts;
    bool is_slice = false;
    while (!is(TT::CloseBracket)) {
      if (is(TT::End)) fail("'[' is not closed with ']'");
      if (is(TT::Colon)) {
        parts.push_back(nullptr);
        ++cur_;
        is_slice = true;
      } else {
        parts.push_back(parse_expression());
        if (is(TT::Colon)) {
          ++cur_;
          is_slice = true;
        }
      }
    }
    if (parts.empty()) fail("expected an index or slice inside '[]'");
    if (!is_slice) return std::move(parts[0]);
    if (parts.size() > 3) fail("a slice has at most three parts");
    auto e = node(EK::Slice, ln);
    parts.resize(3);
    for (auto& p : parts) e = add(std::move(e), std::move(p));
    return e;
  }

  ExprPtr parse_member(ExprPtr object) {
    while (is(TT::Dot) || is(TT::OpenBracket)) {
      int ln = line();
      bool computed = is(TT::OpenBracket);
      ++cur_;
      ExprPtr prop;
      if (computed) {
        prop = parse_subscript(ln);
        expect(TT::CloseBracket, "']'");
      } else {
        prop = parse_primary();
        bool int_literal = prop->kind == EK::Literal && prop->literal.is_int();
        if (prop->kind != EK::Identifier && !int_literal) fail("expected a name or integer after '.'");
      }
      auto e = node(EK::Member, ln);
      e->flag = computed;
      e = add(std::move(e), std::move(object));
      object = add(std::move(e), std::move(prop));
    }
    return object;
  }

  ExprPtr parse_primary() {
    const Token& tok = peek();
    int ln = tok.line;
    ++cur_;
    switch (tok.type) {
      case TT::Number: {
        auto e = node(EK::Literal, ln);
        e->literal = number_literal(tok.value);
        return e;
      }
      case TT::String: {
        std::string value = tok.value;
        while (is(TT::String)) value += t_[cur_++].value;  // 'a' 'b' is "ab"
        auto e = node(EK::Literal, ln);
        e->literal = Value::string(std::move(value));
        return e;
      }
      case TT::Identifier: {
        auto e = node(EK::Identifier, ln);
        e->name = tok.value;
        return e;
      }
      case TT::OpenParen: {
        DepthGuard guard(*this);
        ExprPtr e = parse_sequence(false);
        expect(TT::CloseParen, "')'");
        return e;
      }
      case TT::OpenBracket: {
        DepthGuard guard(*this);
        auto e = node(EK::List, ln);
        while (!is(TT::CloseBracket)) {
          if (is(TT::End)) fail("list is not closed with ']'");
          e = add(std::move(e), parse_expression());
          if (is(TT::Comma)) ++cur_;
        }
        ++cur_;
        return e;
      }
      case TT::OpenBrace: {
        DepthGuard guard(*this);
        auto e = node(EK::Dict, ln);
        while (!is(TT::CloseBrace)) {
          if (is(TT::End)) fail("dict is not closed with '}'");
          e = add(std::move(e), parse_expression());
          expect(TT::Colon, "':' between key and value");
          e = add(std::move(e), parse_expression());
          if (is(TT::Comma)) ++cur_;
        }
        ++cur_;
        return e;
      }
      default:
        --cur_;
        fail("expected a value, got " + describe(tok));
    }
  }

  Value number_literal(const std::string& s) {
    if (s.find('.') != std::string::npos) return Value::floating(std::strtod(s.c_str(), nullptr));
    const char* b = s.data();
    const char* e = s.data() + s.size();
    if (b != e && *b == '+') ++b;
    int64_t v = 0;
    auto res = std::from_chars(b, e, v);
    if (res.ec != std::errc() || res.ptr != e) return Value::floating(std::strtod(s.c_str(), nullptr));
    return Value::integer(v);
  }
};

}  // namespace

std::vector<StmtPtr> parse(const std::vector<Token>& tokens) { return Parser(tokens).program(); }

}  // namespace ember::chat
