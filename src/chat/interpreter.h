// Walks a parsed template and writes its output. Internal to src/chat: the public entry points
// are in template.h and chat_template.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/template.h"
#include "chat/value.h"

namespace ember::chat {

// A scope of variables. Loops, macro calls and call blocks open a child scope; `if` does not.
class Env : public std::enable_shared_from_this<Env> {
 public:
  explicit Env(std::shared_ptr<Env> parent = nullptr) : parent_(std::move(parent)) {}
  Value lookup(const std::string& name) const;  // undefined when no scope has it
  void set(const std::string& name, Value v);
  bool has_own(const std::string& name) const;

 private:
  std::shared_ptr<Env> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}
  ~Interpreter();

  void run(const std::vector<StmtPtr>& program, Env& env, std::string& out);

  Value eval(const Expr& e, Env& env);
  Value call(const Value& fn, CallArgs& args, Env& env, int line);
  CallArgs eval_args(const std::vector<ExprPtr>& children, size_t first, Env& env);

  // Runs one comparison/test by name ("defined", "equalto", ...) as `is` and selectattr do.
  bool run_test(const std::string& name, const Value& operand, const Value* arg, int line);
  Value apply_filter(const Value& operand, const Expr& filter, Env& env);

  // Budget checks shared by loops, range(), concatenation and macro calls.
  void count_iteration(int line);
  void check_size(size_t bytes, int line);
  void check_list_size(size_t items, int line);
  // A string the template built (concatenation, filter, method): bounded alone
  // and, summed over the whole render, by max_built_bytes.
  void count_built(size_t bytes, int line);
  Value counted(Value v, int line);  // count_built / check_list_size for a call's or filter's result
  const RenderLimits& limits() const { return limits_; }
  Value make_namespace(Dict d);

  [[noreturn]] static void fail(int line, const std::string& what);

 private:
  RenderLimits limits_;
  int64_t iterations_ = 0;
  size_t built_bytes_ = 0;
  int call_depth_ = 0;
  std::vector<std::weak_ptr<Dict>> namespaces_;  // cleared at the end to break reference cycles

  void exec_block(const std::vector<StmtPtr>& body, Env& env, std::string& out);
  void exec(const Stmt& s, Env& env, std::string& out);
  void exec_for(const Stmt& s, Env& env, std::string& out);
  void exec_set(const Stmt& s, Env& env, std::string& out);
  void exec_call_block(const Stmt& s, Env& env, std::string& out);
  Value define_macro(const std::string& name, const std::vector<ExprPtr>& params, const std::vector<StmtPtr>& body,
                     std::shared_ptr<Env> lexical_env);
  void bind_arguments(const std::string& name, const std::vector<ExprPtr>& params, const std::vector<StmtPtr>& body,
                      CallArgs& args, Env& scope, int line);

  Value eval_member(const Expr& e, Env& env);
  Value eval_slice(const Value& object, const Expr& slice, Env& env);
  Value eval_binary(const Expr& e, Env& env);
  Value eval_unary(const Expr& e, Env& env);
};

// Methods reachable as attributes (`s.upper()`, `d.items()`, `l.length`); undefined when none.
// max_bytes bounds the strings a method may build (replace), max_items the lists (split).
Value string_attribute(const Value& s, const std::string& name, size_t max_bytes, size_t max_items);
Value dict_attribute(const Value& d, const std::string& name);
// The global functions every template sees (range, namespace, raise_exception, strftime_now).
void install_globals(Env& env, Interpreter& interp);
// Order the reference uses when sorting (numbers, then strings, optionally case-insensitive).
int compare_values(const Value& a, const Value& b, bool case_sensitive, int line);

}  // namespace ember::chat
