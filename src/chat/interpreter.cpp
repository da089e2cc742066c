#include "chat/interpreter.h"

#include <cmath>
#include <functional>
#include <optional>

#include "chat/text.h"
#include "util/error.h"

namespace ember::chat {

using EK = Expr::Kind;
using SK = Stmt::Kind;
using K = Value::Kind;

namespace {
// `break` and `continue` unwind to the innermost loop.
struct BreakSignal {
  int line;
};
struct ContinueSignal {
  int line;
};
}  // namespace

Value Env::lookup(const std::string& name) const {
  for (const Env* e = this; e; e = e->parent_.get())
    for (const auto& [k, v] : e->vars_)
      if (k == name) return v;
  return Value();
}

void Env::set(const std::string& name, Value v) {
  for (auto& [k, old] : vars_)
    if (k == name) {
      old = std::move(v);
      return;
    }
  vars_.emplace_back(name, std::move(v));
}

bool Env::has_own(const std::string& name) const {
  for (const auto& [k, v] : vars_)
    if (k == name) return true;
  return false;
}

Interpreter::~Interpreter() {
  // A namespace can hold itself (set ns.x = ns); clear them so the memory is returned.
  for (auto& weak : namespaces_)
    if (auto ns = weak.lock()) ns->entries.clear();
}

void Interpreter::fail(int line, const std::string& what) {
  throw Error("template error at line " + std::to_string(line) + ": " + what);
}

void Interpreter::count_iteration(int line) {
  if (++iterations_ > limits_.max_iterations)
    fail(line, "template runs too long (more than " + std::to_string(limits_.max_iterations) + " loop iterations and calls)");
}

void Interpreter::check_size(size_t bytes, int line) {
  if (bytes > limits_.max_output_bytes)
    fail(line, "template output or string exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
}

void Interpreter::count_built(size_t bytes, int line) {
  check_size(bytes, line);
  built_bytes_ += bytes;
  if (built_bytes_ > limits_.max_built_bytes)
    fail(line, "template builds more than " + std::to_string(limits_.max_built_bytes) +
                   " bytes of strings in all (a runaway loop?)");
}

Value Interpreter::counted(Value v, int line) {
  if (v.is_string()) count_built(v.as_string().size(), line);
  else if (v.is_list_like()) check_list_size(v.as_list().size(), line);
  return v;
}

void Interpreter::check_list_size(size_t items, int line) {
  if (items > limits_.max_list_items) fail(line, "list exceeds " + std::to_string(limits_.max_list_items) + " items");
}

Value Interpreter::make_namespace(Dict d) {
  Value v = Value::name_space(std::move(d));
  // keep a weak handle: the destructor clears namespaces that are still alive
  namespaces_.push_back(v.dict_ptr());
  return v;
}

void Interpreter::run(const std::vector<StmtPtr>& program, Env& env, std::string& out) {
  try {
    exec_block(program, env, out);
  } catch (const BreakSignal& b) {
    fail(b.line, "'break' outside a loop");
  } catch (const ContinueSignal& c) {
    fail(c.line, "'continue' outside a loop");
  }
}

void Interpreter::exec_block(const std::vector<StmtPtr>& body, Env& env, std::string& out) {
  for (const auto& s : body) exec(*s, env, out);
}

void Interpreter::exec(const Stmt& s, Env& env, std::string& out) {
  switch (s.kind) {
    case SK::Output: {
      Value v = eval(*s.expr, env);
      if (v.is_none() || v.is_undefined()) return;
      if (v.is_string()) out += v.as_string();
      else out += to_output_string(v, limits_.max_output_bytes);
      check_size(out.size(), s.line);
      return;
    }
    case SK::If:
      exec_block(eval(*s.expr, env).truthy() ? s.body : s.alternate, env, out);
      return;
    case SK::For: exec_for(s, env, out); return;
    case SK::Set: exec_set(s, env, out); return;
    case SK::Macro: env.set(s.name, define_macro(s.name, s.params, s.body, nullptr)); return;
    case SK::CallBlock: exec_call_block(s, env, out); return;
    case SK::FilterBlock: {
      std::string body;
      exec_block(s.body, env, body);
      Value v = apply_filter(Value::string(std::move(body)), *s.expr, env);
      if (!v.is_none() && !v.is_undefined()) out += to_output_string(v, limits_.max_output_bytes);
      check_size(out.size(), s.line);
      return;
    }
    case SK::Break: throw BreakSignal{s.line};
    case SK::Continue: throw ContinueSignal{s.line};
    case SK::Comment: return;
  }
}

static void bind_loop_target(const Expr& target, const Value& item, Env& scope, int line) {
  if (target.kind == EK::Identifier) {
    scope.set(target.name, item);
    return;
  }
  // for a, b in pairs: each item must be a list of exactly that many values
  if (item.kind() != K::List) Interpreter::fail(line, std::string("cannot unpack ") + item.type_name() + " in a for loop");
  const List& parts = item.as_list();
  if (parts.size() != target.children.size())
    Interpreter::fail(line, std::string("too ") + (target.children.size() > parts.size() ? "few" : "many") + " items to unpack");
  for (size_t j = 0; j < parts.size(); ++j) {
    if (target.children[j]->kind != EK::Identifier) Interpreter::fail(line, "loop variables must be names");
    scope.set(target.children[j]->name, parts[j]);
  }
}

void Interpreter::exec_for(const Stmt& s, Env& env, std::string& out) {
  auto scope = std::make_shared<Env>(env.shared_from_this());
  const Expr* test = nullptr;
  Value iterable;
  if (s.expr->kind == EK::Select) {  // for x in xs if cond
    iterable = eval(*s.expr->children[0], *scope);
    test = s.expr->children[1].get();
  } else {
    iterable = eval(*s.expr, *scope);
  }
  List items_source;
  if (iterable.is_list_like()) {
    items_source = iterable.as_list();
  } else if (iterable.kind() == K::Dict) {
    for (const auto& [k, v] : iterable.as_dict().entries) items_source.push_back(Value::string(k));
  } else {
    fail(s.line, std::string("cannot loop over ") + iterable.type_name() + " (a list or dict is needed)");
  }
  List items;
  for (const Value& item : items_source) {
    if (test) {
      count_iteration(s.line);
      auto loop_scope = std::make_shared<Env>(scope);
      bind_loop_target(*s.target, item, *loop_scope, s.line);
      if (!eval(*test, *loop_scope).truthy()) continue;
    }
    items.push_back(item);
  }
  bool no_iteration = true;
  const int64_t n = int64_t(items.size());
  for (int64_t i = 0; i < n; ++i) {
    count_iteration(s.line);
    Dict loop;
    loop.entries = {{"index", Value::integer(i + 1)},
                    {"index0", Value::integer(i)},
                    {"revindex", Value::integer(n - i)},
                    {"revindex0", Value::integer(n - i - 1)},
                    {"first", Value::boolean(i == 0)},
                    {"last", Value::boolean(i == n - 1)},
                    {"length", Value::integer(n)},
                    {"previtem", i > 0 ? items[size_t(i - 1)] : Value()},
                    {"nextitem", i < n - 1 ? items[size_t(i + 1)] : Value()}};
    scope->set("loop", Value::dict(std::move(loop)));
    bind_loop_target(*s.target, items[size_t(i)], *scope, s.line);
    // The reference renders an iteration as a whole: break/continue drop that iteration's text.
    size_t mark = out.size();
    try {
      exec_block(s.body, *scope, out);
    } catch (const ContinueSignal&) {
      out.resize(mark);
      continue;
    } catch (const BreakSignal&) {
      out.resize(mark);
      break;
    }
    no_iteration = false;
  }
  if (no_iteration) exec_block(s.alternate, *scope, out);
}

void Interpreter::exec_set(const Stmt& s, Env& env, std::string& out) {
  Value rhs;
  if (s.expr) {
    rhs = eval(*s.expr, env);
  } else {
    std::string body;
    exec_block(s.body, env, body);
    rhs = Value::string(std::move(body));
  }
  const Expr& target = *s.target;
  if (target.kind == EK::Identifier) {
    env.set(target.name, std::move(rhs));
  } else if (target.kind == EK::Tuple) {
    if (!rhs.is_list_like()) fail(s.line, std::string("cannot unpack ") + rhs.type_name() + " in set");
    const List& parts = rhs.as_list();
    if (parts.size() != target.children.size())
      fail(s.line, std::string("too ") + (target.children.size() > parts.size() ? "few" : "many") + " items to unpack in set");
    for (size_t j = 0; j < parts.size(); ++j) {
      if (target.children[j]->kind != EK::Identifier) fail(s.line, "set can only unpack into names");
      env.set(target.children[j]->name, parts[j]);
    }
  } else if (target.kind == EK::Member) {
    Value object = eval(*target.children[0], env);
    if (object.kind() != K::Namespace) fail(s.line, "set can only assign attributes of a namespace()");
    // A namespace counts as half the depth limit wherever it is held (see
    // Value::kMaxDepth), so what it holds may only nest half as deep: then no
    // chain through namespaces can nest deeper than the recorded depths say.
    if (rhs.depth() >= Value::kMaxDepth / 2)
      fail(s.line, "a namespace attribute may not nest deeper than " + std::to_string(Value::kMaxDepth / 2) + " levels");
    if (target.flag || target.children[1]->kind != EK::Identifier) fail(s.line, "set needs ns.name to assign an attribute");
    object.as_dict().set(target.children[1]->name, std::move(rhs));
  } else {
    fail(s.line, "set needs a name, names or namespace attribute on the left of '='");
  }
}

// Does the body read `kwargs` or `varargs`? Only then a macro accepts extra arguments.
static bool mentions(const Expr* e, const std::string& name) {
  if (!e) return false;
  if (e->kind == EK::Identifier && e->name == name) return true;
  for (const auto& c : e->children)
    if (mentions(c.get(), name)) return true;
  return false;
}
static bool mentions(const std::vector<StmtPtr>& body, const std::string& name) {
  for (const auto& s : body) {
    if (mentions(s->expr.get(), name) || mentions(s->target.get(), name)) return true;
    for (const auto& p : s->params)
      if (p->kind == EK::KwArg && mentions(p->children[0].get(), name)) return true;
    if (mentions(s->body, name) || mentions(s->alternate, name)) return true;
  }
  return false;
}

void Interpreter::bind_arguments(const std::string& name, const std::vector<ExprPtr>& params,
                                 const std::vector<StmtPtr>& body, CallArgs& args, Env& scope, int line) {
  std::vector<std::pair<std::string, Value>> keywords = args.keyword;
  std::vector<std::pair<std::string, const Expr*>> pending_defaults;
  for (size_t i = 0; i < params.size(); ++i) {
    const Expr& p = *params[i];
    const std::string& pname = p.name;
    Value v;
    bool have = false;
    if (i < args.positional.size()) {
      v = args.positional[i];
      have = true;
    } else {
      for (auto it = keywords.begin(); it != keywords.end(); ++it)
        if (it->first == pname) {
          v = it->second;
          keywords.erase(it);
          have = true;
          break;
        }
    }
    if (!have && p.kind == EK::KwArg) pending_defaults.emplace_back(pname, p.children[0].get());
    scope.set(pname, v);
  }
  bool is_declared_kwargs = false, is_declared_varargs = false;
  for (const auto& p : params) {
    is_declared_kwargs |= p->name == "kwargs";
    is_declared_varargs |= p->name == "varargs";
  }
  if (!is_declared_kwargs && mentions(body, "kwargs")) {
    Dict d;
    for (auto& [k, v] : keywords) d.entries.emplace_back(k, v);
    scope.set("kwargs", Value::dict(std::move(d)));
  } else if (!keywords.empty()) {
    fail(line, "macro " + name + " takes no keyword argument '" + keywords[0].first + "'");
  }
  if (!is_declared_varargs && mentions(body, "varargs")) {
    List extra;
    for (size_t i = params.size(); i < args.positional.size(); ++i) extra.push_back(args.positional[i]);
    scope.set("varargs", Value::list(std::move(extra)));
  } else if (args.positional.size() > params.size()) {
    fail(line, "macro " + name + " takes not more than " + std::to_string(params.size()) + " argument(s)");
  }
  for (const auto& [pname, def] : pending_defaults) scope.set(pname, eval(*def, scope));
}

// A macro's free names resolve in the scope it is called from (as the reference does); a call
// block's caller() resolves in the scope of the call block, held weakly so no cycle forms.
Value Interpreter::define_macro(const std::string& name, const std::vector<ExprPtr>& params,
                                const std::vector<StmtPtr>& body, std::shared_ptr<Env> lexical_env) {
  std::weak_ptr<Env> weak_lexical = lexical_env;
  bool lexical = lexical_env != nullptr;
  return Value::function(name, [this, name, &params, &body, weak_lexical, lexical](CallArgs& args, Env& caller) -> Value {
    std::shared_ptr<Env> parent;
    if (lexical) {
      parent = weak_lexical.lock();
      if (!parent) throw Error("template error: caller() used after its call block ended");
    } else {
      parent = caller.shared_from_this();
    }
    int line = body.empty() ? 0 : body.front()->line;
    if (++call_depth_ > limits_.max_call_depth) {
      --call_depth_;
      fail(line, "macro calls nest deeper than " + std::to_string(limits_.max_call_depth) + " (runaway recursion?)");
    }
    struct Depth {
      int& d;
      ~Depth() { --d; }
    } depth{call_depth_};
    count_iteration(line);
    auto scope = std::make_shared<Env>(parent);
    bind_arguments(name, params, body, args, *scope, line);
    std::string out;
    exec_block(body, *scope, out);
    return Value::string(std::move(out));
  });
}

void Interpreter::exec_call_block(const Stmt& s, Env& env, std::string& out) {
  auto here = env.shared_from_this();
  Value caller = define_macro("caller", s.params, s.body, here);
  const Expr& call_expr = *s.expr;
  CallArgs args = eval_args(call_expr.children, 1, env);
  Value fn = eval(*call_expr.children[0], env);
  if (fn.kind() != K::Function) fail(s.line, std::string("cannot call ") + fn.type_name() + " in a call block");
  auto call_env = std::make_shared<Env>(here);
  call_env->set("caller", caller);
  Value result = call(fn, args, *call_env, s.line);
  if (!result.is_none() && !result.is_undefined()) out += to_output_string(result, limits_.max_output_bytes);
  check_size(out.size(), s.line);
}

CallArgs Interpreter::eval_args(const std::vector<ExprPtr>& children, size_t first, Env& env) {
  CallArgs args;
  for (size_t i = first; i < children.size(); ++i) {
    const Expr& a = *children[i];
    if (a.kind == EK::Spread) {
      Value v = eval(*a.children[0], env);
      if (!v.is_list_like()) fail(a.line, std::string("cannot unpack ") + v.type_name() + " with '*'");
      for (const Value& item : v.as_list()) args.positional.push_back(item);
    } else if (a.kind != EK::KwArg && a.kind != EK::KwSpread) {
      args.positional.push_back(eval(a, env));
    }
  }
  auto add_keyword = [&](const std::string& key, Value v, int line) {
    if (args.keyword_arg(key)) fail(line, "got multiple values for keyword argument '" + key + "'");
    args.keyword.emplace_back(key, std::move(v));
  };
  for (size_t i = first; i < children.size(); ++i) {
    const Expr& a = *children[i];
    if (a.kind == EK::KwArg) {
      add_keyword(a.name, eval(*a.children[0], env), a.line);
    } else if (a.kind == EK::KwSpread) {
      Value v = eval(*a.children[0], env);
      if (v.kind() != K::Dict) fail(a.line, std::string("argument after ** must be a dict, not ") + v.type_name());
      for (const auto& [k, item] : v.as_dict().entries) add_keyword(k, item, a.line);
    }
  }
  return args;
}

Value Interpreter::call(const Value& fn, CallArgs& args, Env& env, int line) {
  if (fn.kind() != K::Function) fail(line, std::string("cannot call ") + fn.type_name() + " (not a function)");
  return fn.as_function().fn(args, env);
}

Value Interpreter::eval(const Expr& e, Env& env) {
  switch (e.kind) {
    case EK::Literal: return e.literal;
    case EK::Identifier: return env.lookup(e.name);
    case EK::List:
    case EK::Tuple: {
      List items;
      items.reserve(e.children.size());
      for (const auto& c : e.children) items.push_back(eval(*c, env));
      return e.kind == EK::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case EK::Dict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        Value key = eval(*e.children[i], env);
        if (!key.is_string()) fail(e.line, std::string("dict keys must be strings, got ") + key.type_name());
        d.set(key.as_string(), eval(*e.children[i + 1], env));
      }
      return Value::dict(std::move(d));
    }
    case EK::Member: return eval_member(e, env);
    case EK::Call: {
      CallArgs args = eval_args(e.children, 1, env);
      Value fn = eval(*e.children[0], env);
      return counted(call(fn, args, env, e.line), e.line);
    }
    case EK::Filter: return counted(apply_filter(eval(*e.children[0], env), *e.children[1], env), e.line);
    case EK::Test: {
      bool r = run_test(e.name, eval(*e.children[0], env), nullptr, e.line);
      return Value::boolean(e.flag ? !r : r);
    }
    case EK::Unary: return eval_unary(e, env);
    case EK::Binary: return eval_binary(e, env);
    case EK::Ternary:
      return eval(*e.children[0], env).truthy() ? eval(*e.children[1], env) : eval(*e.children[2], env);
    case EK::Select:
      if (!eval(*e.children[1], env).truthy()) return Value();
      return eval(*e.children[0], env);
    case EK::Slice:
    case EK::KwArg:
    case EK::Spread:
    case EK::KwSpread: break;
  }
  fail(e.line, "this expression is only allowed in a call's argument list");
}

Value Interpreter::eval_member(const Expr& e, Env& env) {
  Value object = eval(*e.children[0], env);
  const Expr& prop_expr = *e.children[1];
  Value prop;
  if (e.flag) {
    if (prop_expr.kind == EK::Slice) return eval_slice(object, prop_expr, env);
    prop = eval(prop_expr, env);
  } else if (prop_expr.kind == EK::Literal) {
    prop = prop_expr.literal;
  } else {
    prop = Value::string(prop_expr.name);
  }
  if (object.is_attribute_container()) {
    if (!prop.is_string()) fail(e.line, std::string("cannot look up a ") + prop.type_name() + " key in a dict");
    if (const Value* v = object.as_dict().find(prop.as_string())) return *v;
    if (object.kind() == K::Dict) return dict_attribute(object, prop.as_string());
    return Value();
  }
  if (object.is_list_like() || object.is_string()) {
    if (prop.is_int()) {
      int64_t i = prop.as_int();
      if (object.is_string()) {
        std::vector<std::string> chars = text::characters(object.as_string());
        int64_t n = int64_t(chars.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value();
        return Value::string(chars[size_t(i)]);
      }
      const List& items = object.as_list();
      int64_t n = int64_t(items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value();
      return items[size_t(i)];
    }
    if (prop.is_string()) {
      if (object.is_string())
        return string_attribute(object, prop.as_string(), limits_.max_output_bytes, limits_.max_list_items);
      if (prop.as_string() == "length") return Value::integer(int64_t(object.as_list().size()));
      return Value();
    }
    fail(e.line, std::string("cannot index with ") + prop.type_name());
  }
  if (!prop.is_string()) fail(e.line, std::string("cannot look up a ") + prop.type_name() + " key");
  return Value();  // attributes of numbers, booleans, none and undefined are undefined
}

Value Interpreter::eval_slice(const Value& object, const Expr& slice, Env& env) {
  if (!object.is_list_like() && !object.is_string()) fail(slice.line, std::string("cannot slice ") + object.type_name());
  auto part = [&](int idx, const char* what) -> std::optional<int64_t> {
    const Expr* p = slice.children[size_t(idx)].get();
    if (!p) return std::nullopt;
    Value v = eval(*p, env);
    if (v.is_undefined()) return std::nullopt;
    if (!v.is_int()) fail(slice.line, std::string("slice ") + what + " must be an integer");
    return v.as_int();
  };
  auto start_opt = part(0, "start"), stop_opt = part(1, "stop"), step_opt = part(2, "step");
  std::vector<std::string> chars;
  int64_t len;
  if (object.is_string()) {
    chars = text::characters(object.as_string());
    len = int64_t(chars.size());
  } else {
    len = int64_t(object.as_list().size());
  }
  int64_t step = step_opt.value_or(1);
  int64_t start, stop;
  if (step >= 0) {
    start = start_opt.value_or(0);
    start = start < 0 ? std::max(len + start, int64_t(0)) : std::min(start, len);
    stop = stop_opt.value_or(len);
    stop = stop < 0 ? std::max(len + stop, int64_t(0)) : std::min(stop, len);
  } else {
    start = start_opt.value_or(len - 1);
    start = start < 0 ? std::max(len + start, int64_t(-1)) : std::min(start, len - 1);
    stop = stop_opt.value_or(-1);
    stop = stop < -1 ? std::max(len + stop, int64_t(-1)) : std::min(stop, len - 1);
  }
  List items;
  std::string str;
  if (step != 0) {
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
      if (object.is_string()) str += chars[size_t(i)];
      else items.push_back(object.as_list()[size_t(i)]);
      if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
      i += step;
    }
  }
  if (object.is_string()) return Value::string(std::move(str));
  return Value::list(std::move(items));
}

Value Interpreter::eval_unary(const Expr& e, Env& env) {
  Value v = eval(*e.children[0], env);
  if (e.name == "not") return Value::boolean(!v.truthy());
  bool neg = e.name == "-";
  if (v.kind() == K::Float) return Value::floating(neg ? -v.as_float() : v.as_float());
  if (v.kind() == K::Int || v.kind() == K::Bool) {
    int64_t x = v.kind() == K::Bool ? int64_t(v.as_bool()) : v.as_int();
    if (neg && x == INT64_MIN) return Value::floating(-double(x));
    return Value::integer(neg ? -x : x);
  }
  fail(e.line, "unary '" + e.name + "' needs a number, got " + v.type_name());
}

static bool numeric_like(const Value& v) { return v.is_number() || v.kind() == K::Bool; }

Value Interpreter::eval_binary(const Expr& e, Env& env) {
  const std::string& op = e.name;
  Value left = eval(*e.children[0], env);
  if (op == "and") return left.truthy() ? eval(*e.children[1], env) : left;
  if (op == "or") return left.truthy() ? left : eval(*e.children[1], env);
  Value right = eval(*e.children[1], env);
  if (op == "==") return Value::boolean(loose_equal(left, right));
  if (op == "!=") return Value::boolean(!loose_equal(left, right));
  bool in_op = op == "in" || op == "not in";
  if (left.is_undefined() || right.is_undefined()) {
    if (right.is_undefined() && in_op) return Value::boolean(op == "not in");
    fail(e.line, "cannot apply '" + op + "' to an undefined value");
  }
  if (left.is_none() || right.is_none()) fail(e.line, "cannot apply '" + op + "' to none");
  if (op == "~") {
    std::string s = to_concat_string(left, limits_.max_output_bytes);
    s += to_concat_string(right, limits_.max_output_bytes);
    count_built(s.size(), e.line);
    return Value::string(std::move(s));
  }
  if (op == "**" && numeric_like(left) && numeric_like(right)) {
    double a = left.as_number(), b = right.as_number();
    if (a == 0 && b < 0) fail(e.line, "0 cannot be raised to a negative power");
    double r = std::pow(a, b);
    if (!std::isfinite(r)) fail(e.line, "'**' result is not a finite number");
    bool is_float = left.kind() == K::Float || right.kind() == K::Float || b < 0;
    if (!is_float && std::fabs(r) < 9.2e18) return Value::integer(int64_t(r));
    return Value::floating(r);
  }
  if (left.is_number() && right.is_number()) {
    bool both_int = left.is_int() && right.is_int();
    double a = left.as_number(), b = right.as_number();
    if (op == "+" || op == "-" || op == "*") {
      if (both_int) {
        int64_t x = left.as_int(), y = right.as_int(), r;
        bool overflow = op == "+" ? __builtin_add_overflow(x, y, &r)
                        : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                    : __builtin_mul_overflow(x, y, &r);
        if (!overflow) return Value::integer(r);
      }
      return Value::floating(op == "+" ? a + b : op == "-" ? a - b : a * b);
    }
    if (op == "/") return Value::floating(a / b);
    if (op == "//") {
      if (both_int && right.as_int() != 0 && !(left.as_int() == INT64_MIN && right.as_int() == -1)) {
        int64_t x = left.as_int(), y = right.as_int();
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value::integer(q);
      }
      return Value::floating(std::floor(a / b));
    }
    if (op == "%") {
      if (both_int && right.as_int() != 0) {
        if (right.as_int() == -1) return Value::integer(0);
        return Value::integer(left.as_int() % right.as_int());
      }
      return Value::floating(std::fmod(a, b));
    }
    if (op == "<") return Value::boolean(a < b);
    if (op == ">") return Value::boolean(a > b);
    if (op == "<=") return Value::boolean(a <= b);
    if (op == ">=") return Value::boolean(a >= b);
  } else if (left.is_list_like() && right.is_list_like()) {
    if (op == "+") {
      List items = left.as_list();
      check_list_size(items.size() + right.as_list().size(), e.line);
      items.insert(items.end(), right.as_list().begin(), right.as_list().end());
      return Value::list(std::move(items));
    }
  } else if (right.is_list_like() && in_op) {
    bool found = false;
    for (const Value& x : right.as_list())
      if (strict_equal(x, left)) {
        found = true;
        break;
      }
    return Value::boolean(found == (op == "in"));
  }
  if ((left.is_string() || right.is_string()) && op == "+") {
    std::string s = to_concat_string(left, limits_.max_output_bytes);
    s += to_concat_string(right, limits_.max_output_bytes);
    count_built(s.size(), e.line);
    return Value::string(std::move(s));
  }
  if (left.is_string() && right.is_string() && in_op)
    return Value::boolean((right.as_string().find(left.as_string()) != std::string::npos) == (op == "in"));
  if (left.is_string() && right.kind() == K::Dict && in_op)
    return Value::boolean((right.as_dict().find(left.as_string()) != nullptr) == (op == "in"));
  fail(e.line, "operator '" + op + "' is not defined between " + left.type_name() + " and " + right.type_name());
}

}  // namespace ember::chat
