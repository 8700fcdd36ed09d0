// Tree-walking evaluator: renders a parsed Template with a set of variables.
#pragma once

#include <ctime>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/text/jinja/ast.h"
#include "engine/text/jinja/limits.h"
#include "engine/text/jinja/value.h"

namespace engine::jinja {

// Variables visible to a block of template code. A scope reads through to its parent; `set`
// writes to the scope itself (as Jinja does: assignments in a loop body do not leak out).
// Template-owned, reference-counted (macros keep their defining scope alive).
class Scope final : public Container {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  ~Scope() override;
  void take_children(std::vector<std::shared_ptr<Container>>& out) override;

  const Value* find(std::string_view name) const;
  void set(std::string name, Value value) { vars_.set(std::move(name), std::move(value)); }

 private:
  std::shared_ptr<Scope> parent_;
  Object vars_;
};

// Binds call arguments to a simple Python-style signature: positional first, then by keyword.
// Throws RuntimeError for unknown keywords or too many positional arguments. Points into `args`,
// which must outlive the reader.
class ArgReader {
 public:
  ArgReader(std::string_view function, const CallArgs& args,
            std::initializer_list<std::string_view> params);
  // The argument bound to parameter `index`, or nullptr when it was not given.
  const Value* get(size_t index) const { return index < bound_.size() ? bound_[index] : nullptr; }
  Value get_or(size_t index, Value fallback) const;

 private:
  std::vector<const Value*> bound_;
};

// Renders one template once. Owns everything the render allocates; not thread-safe, but any
// number of Interpreters may render the same (immutable) Template concurrently.
class Interpreter {
 public:
  Interpreter(const Template& tmpl, const Limits& limits, std::function<std::tm()> clock);
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;
  ~Interpreter();

  // Renders the template with the given top-level variables (on top of the built-in globals).
  // Throws engine::TemplateError / engine::TemplateRaise.
  std::string render(const std::vector<std::pair<std::string, Value>>& variables);

  // ---- Services for filters, tests, methods and callables ----
  Heap& heap() { return heap_; }
  Budget& budget() { return budget_; }
  const Limits& limits() const { return limits_; }
  std::tm now() const;
  std::string str(const Value& v) { return to_str(v, budget_); }
  // Python iteration: list items, dict keys, string characters; Undefined is empty.
  std::vector<Value> iterate(const Value& v);
  Value get_attr(const Value& object, std::string_view name);
  Value get_item(const Value& object, const Value& key);
  Value invoke(const Value& callee, CallArgs& args);
  Value apply_filter(std::string_view name, const Value& input, CallArgs& args);
  bool apply_test(std::string_view name, const Value& input, CallArgs& args);
  Value call_macro(const MacroStmt& macro, const std::shared_ptr<Scope>& closure, CallArgs& args);
  Value call_caller(const CallBlockStmt& block, const std::shared_ptr<Scope>& closure,
                    CallArgs& args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  class DepthGuard;
  class ScopeSwitch;

  [[noreturn]] static void fail_too_deep(int limit);
  [[noreturn]] void rethrow_at(const std::exception& error, bool raised, uint32_t offset) const;
  void emit(std::string& out, std::string_view text);

  // Statements (eval.cpp).
  Flow exec_body(const Body& body, std::string& out);
  Flow exec(const Stmt& stmt, std::string& out);
  Flow exec_node(const Stmt& stmt, std::string& out);
  Flow exec_if(const IfStmt& stmt, std::string& out);
  Flow exec_for(const ForStmt& stmt, std::string& out);
  void exec_set(const SetStmt& stmt);
  void exec_set_block(const SetBlockStmt& stmt);
  void exec_call_block(const CallBlockStmt& stmt, std::string& out);
  void exec_with(const WithStmt& stmt, std::string& out);
  void assign(const AssignTarget& target, const Value& value);
  std::string render_body(const Body& body, const std::shared_ptr<Scope>& scope);
  Value loop_object(size_t index, const std::vector<Value>& items);

  // Expressions (eval_expr.cpp).
  Value eval(const Expr& expr);
  Value eval_node(const Expr& expr);
  Value eval_name(const NameExpr& expr);
  Value eval_list(const ListExpr& expr);
  Value eval_dict(const DictExpr& expr);
  Value eval_slice(const SliceExpr& expr);
  Value eval_call(const CallExpr& expr, CallArgs* extra = nullptr);
  Value eval_filter(const FilterExpr& expr, const Value* block_input);
  Value eval_test(const TestExpr& expr);
  Value eval_unary(const UnaryExpr& expr);
  Value eval_binary(const BinaryExpr& expr);
  Value eval_compare(const CompareExpr& expr);
  CallArgs eval_args(const Arguments& args);

  const Template& tmpl_;
  Limits limits_;
  std::function<std::tm()> clock_;
  Heap heap_;  // declared before everything holding Values: destroyed last
  Budget budget_;
  std::shared_ptr<Scope> scope_;  // current innermost scope
  int depth_ = 0;
  int call_depth_ = 0;
};

// Counts nesting of eval/exec (and charges one step per node) so that deep recursion becomes a
// TemplateError long before the C++ stack runs out.
class Interpreter::DepthGuard {
 public:
  explicit DepthGuard(Interpreter& in) : in_(in) {
    in_.budget_.charge(1);
    if (++in_.depth_ > in_.limits_.max_eval_depth) {
      --in_.depth_;
      fail_too_deep(in_.limits_.max_eval_depth);
    }
  }
  ~DepthGuard() { --in_.depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  Interpreter& in_;
};

// Makes `scope` current until destruction.
class Interpreter::ScopeSwitch {
 public:
  ScopeSwitch(Interpreter& in, std::shared_ptr<Scope> scope)
      : in_(in), saved_(std::move(in.scope_)) {
    in_.scope_ = std::move(scope);
  }
  ~ScopeSwitch() { in_.scope_ = std::move(saved_); }
  ScopeSwitch(const ScopeSwitch&) = delete;
  ScopeSwitch& operator=(const ScopeSwitch&) = delete;

 private:
  Interpreter& in_;
  std::shared_ptr<Scope> saved_;
};

// Filters (filters.cpp), tests (tests.cpp), methods of str/list/dict (methods.cpp), globals and
// callables (builtins.cpp), operators (ops.cpp).
Value apply_filter(Interpreter& in, std::string_view name, const Value& input, CallArgs& args);
bool apply_test(Interpreter& in, std::string_view name, const Value& input, CallArgs& args);
bool has_method(const Value& receiver, std::string_view name);
Value call_method(Interpreter& in, const Value& receiver, std::string_view name, CallArgs& args);
void install_globals(Interpreter& in, Scope& scope);
Value make_native(Interpreter& in, std::string name,
                  std::function<Value(Interpreter&, CallArgs&)> fn);
Value make_bound_method(Interpreter& in, const Value& receiver, std::string name);
Value make_macro(Interpreter& in, const MacroStmt& macro, std::shared_ptr<Scope> closure);
Value make_caller(Interpreter& in, const CallBlockStmt& block, std::shared_ptr<Scope> closure);
Value binary_op(Interpreter& in, BinaryOp op, const Value& a, const Value& b);
Value unary_op(UnaryOp op, const Value& v);
bool contains(Interpreter& in, const Value& container, const Value& item);
// Python's "fmt % args" (printf-style), also the `format` filter.
std::string percent_format(Interpreter& in, std::string_view fmt, std::span<const Value> args);
// Attribute path "a.b.0" as used by map/selectattr/sort(attribute=...).
Value get_attribute_path(Interpreter& in, const Value& item, std::string_view path);
// Raises the error an Undefined carries when it is used in a way that needs a value.
[[noreturn]] void fail_undefined(const Value& undefined);
// Integer value of a bool or int (Python treats bool as int).
inline int64_t int_of(const Value& v) { return v.is_bool() ? int64_t{v.as_bool()} : v.as_int(); }
inline bool is_integer(const Value& v) { return v.is_bool() || v.is_int(); }

}  // namespace engine::jinja
