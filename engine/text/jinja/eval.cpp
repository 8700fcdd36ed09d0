// Statement execution and the render entry point.
#include "engine/text/jinja/eval.h"

#include <algorithm>
#include <chrono>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/lexer.h"

namespace engine::jinja {

// ---- Scope and ArgReader ------------------------------------------------------------------

Scope::~Scope() { dispose_children(); }

void Scope::take_children(std::vector<std::shared_ptr<Container>>& out) {
  if (parent_) out.push_back(std::move(parent_));
  vars_.take_children(out);
}

const Value* Scope::find(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent_.get()) {
    if (const Value* v = s->vars_.find(name)) return v;
  }
  return nullptr;
}

ArgReader::ArgReader(std::string_view function, const CallArgs& args,
                     std::initializer_list<std::string_view> params)
    : bound_(params.size(), nullptr) {
  if (args.positional.size() > params.size()) {
    throw RuntimeError(std::string(function) + "() takes at most " + std::to_string(params.size()) +
                       " argument(s), " + std::to_string(args.positional.size()) + " given");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    const auto* p = std::find(params.begin(), params.end(), key);
    if (p == params.end()) {
      throw RuntimeError(std::string(function) + "() got an unexpected keyword argument '" + key +
                         "'");
    }
    bound_[static_cast<size_t>(p - params.begin())] = &value;
  }
}

Value ArgReader::get_or(size_t index, Value fallback) const {
  const Value* v = get(index);
  return v ? *v : std::move(fallback);
}

// ---- Interpreter core ---------------------------------------------------------------------

Interpreter::Interpreter(const Template& tmpl, const Limits& limits, std::function<std::tm()> clock)
    : tmpl_(tmpl),
      limits_(limits),
      clock_(std::move(clock)),
      budget_(limits.max_steps, limits.max_output_bytes) {}

Interpreter::~Interpreter() = default;

std::tm Interpreter::now() const {
  if (clock_) return clock_();
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&t, &local);
  return local;
}

std::string Interpreter::render(const std::vector<std::pair<std::string, Value>>& variables) {
  try {
    auto globals = heap_.make<Scope>(nullptr);
    install_globals(*this, *globals);
    auto root = heap_.make<Scope>(globals);
    for (const auto& [name, value] : variables) root->set(name, value);
    ScopeSwitch switch_to(*this, root);
    std::string out;
    exec_body(tmpl_.body, out);
    return out;
  } catch (const RuntimeError& e) {
    rethrow_at(e, e.raised_by_template(), 0);
  }
}

void Interpreter::fail_too_deep(int limit) {
  throw RuntimeError("template nesting exceeds " + std::to_string(limit) +
                     " levels (runaway recursion?)");
}

void Interpreter::rethrow_at(const std::exception& error, bool raised, uint32_t offset) const {
  auto [line, column] = line_column(tmpl_.source, offset);
  if (raised) throw TemplateRaise(error.what(), line, column);
  throw TemplateError(error.what(), line, column);
}

void Interpreter::emit(std::string& out, std::string_view text) {
  budget_.check_size(out.size() + text.size());
  budget_.charge_bytes(text.size());
  out += text;
}

// ---- Statements ---------------------------------------------------------------------------

Interpreter::Flow Interpreter::exec_body(const Body& body, std::string& out) {
  for (const StmtPtr& stmt : body) {
    const Flow flow = exec(*stmt, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt, std::string& out) {
  DepthGuard guard(*this);
  try {
    return exec_node(stmt, out);
  } catch (const RuntimeError& e) {
    rethrow_at(e, e.raised_by_template(), stmt.offset);
  }
}

Interpreter::Flow Interpreter::exec_node(const Stmt& stmt, std::string& out) {
  switch (stmt.kind) {
    case StmtKind::kText: emit(out, static_cast<const TextStmt&>(stmt).text); break;
    case StmtKind::kOutput: emit(out, str(eval(*static_cast<const OutputStmt&>(stmt).expr))); break;
    case StmtKind::kIf: return exec_if(static_cast<const IfStmt&>(stmt), out);
    case StmtKind::kFor: exec_for(static_cast<const ForStmt&>(stmt), out); break;
    case StmtKind::kSet: exec_set(static_cast<const SetStmt&>(stmt)); break;
    case StmtKind::kSetBlock: exec_set_block(static_cast<const SetBlockStmt&>(stmt)); break;
    case StmtKind::kMacro: {
      const auto& macro = static_cast<const MacroStmt&>(stmt);
      scope_->set(macro.name, make_macro(*this, macro, scope_));
      break;
    }
    case StmtKind::kCallBlock: exec_call_block(static_cast<const CallBlockStmt&>(stmt), out); break;
    case StmtKind::kFilterBlock: {
      const auto& block = static_cast<const FilterBlockStmt&>(stmt);
      const Value body(render_body(block.body, scope_));
      emit(out, str(eval_filter(static_cast<const FilterExpr&>(*block.filters), &body)));
      break;
    }
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
    case StmtKind::kDo: eval(*static_cast<const DoStmt&>(stmt).expr); break;
    case StmtKind::kWith: exec_with(static_cast<const WithStmt&>(stmt), out); break;
    case StmtKind::kPlainBlock:
      return exec_body(static_cast<const PlainBlockStmt&>(stmt).body, out);
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_if(const IfStmt& stmt, std::string& out) {
  for (const auto& [condition, body] : stmt.branches) {
    if (truthy(eval(*condition))) return exec_body(body, out);
  }
  return exec_body(stmt.else_body, out);
}

Value Interpreter::loop_object(size_t index, const std::vector<Value>& items) {
  const size_t n = items.size();
  const auto i = static_cast<int64_t>(index);
  const auto len = static_cast<int64_t>(n);
  Value loop = heap_.object();
  Object& o = loop.as_object();
  o.reserve(12);
  o.set("index", Value(i + 1));
  o.set("index0", Value(i));
  o.set("revindex", Value(len - i));
  o.set("revindex0", Value(len - i - 1));
  o.set("first", Value(index == 0));
  o.set("last", Value(index + 1 == n));
  o.set("length", Value(len));
  o.set("depth", Value(1));
  o.set("depth0", Value(0));
  o.set("previtem", index > 0 ? items[index - 1] : Value::undefined("there is no previous item"));
  o.set("nextitem", index + 1 < n ? items[index + 1] : Value::undefined("there is no next item"));
  o.set("cycle", make_native(*this, "cycle", [index](Interpreter&, CallArgs& args) {
          if (args.positional.empty()) throw RuntimeError("no items for cycling given");
          return args.positional[index % args.positional.size()];
        }));
  return loop;
}

Interpreter::Flow Interpreter::exec_for(const ForStmt& stmt, std::string& out) {
  std::vector<Value> items = iterate(eval(*stmt.iterable));
  if (stmt.filter) {  // "for x in xs if cond": filter first, so loop.length/last see the result
    std::vector<Value> kept;
    for (Value& item : items) {
      ScopeSwitch switch_to(*this, heap_.make<Scope>(scope_));
      assign(stmt.target, item);
      if (truthy(eval(*stmt.filter))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(stmt.else_body, out);
  for (size_t i = 0; i < items.size(); ++i) {
    ScopeSwitch switch_to(*this, heap_.make<Scope>(scope_));
    assign(stmt.target, items[i]);
    scope_->set("loop", loop_object(i, items));
    if (exec_body(stmt.body, out) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::assign(const AssignTarget& target, const Value& value) {
  if (!target.attribute.empty()) {
    const Value* ns = scope_->find(target.names[0]);
    if (!ns || !ns->is_namespace()) {
      throw RuntimeError("cannot assign attribute '" + target.attribute + "' on '" +
                         target.names[0] + "': only namespace() objects accept assignments");
    }
    ns->as_object().set(target.attribute, value);
    return;
  }
  if (!target.is_tuple) {
    scope_->set(target.names[0], value);
    return;
  }
  const std::vector<Value> parts = iterate(value);
  if (parts.size() != target.names.size()) {
    throw RuntimeError("cannot unpack " + std::to_string(parts.size()) + " value(s) into " +
                       std::to_string(target.names.size()) + " names");
  }
  for (size_t i = 0; i < parts.size(); ++i) scope_->set(target.names[i], parts[i]);
}

void Interpreter::exec_set(const SetStmt& stmt) { assign(stmt.target, eval(*stmt.value)); }

void Interpreter::exec_set_block(const SetBlockStmt& stmt) {
  Value body(render_body(stmt.body, scope_));
  if (stmt.filters) body = eval_filter(static_cast<const FilterExpr&>(*stmt.filters), &body);
  assign(stmt.target, body);
}

void Interpreter::exec_call_block(const CallBlockStmt& stmt, std::string& out) {
  CallArgs extra;
  extra.keyword.emplace_back("caller", make_caller(*this, stmt, scope_));
  emit(out, str(eval_call(static_cast<const CallExpr&>(*stmt.call), &extra)));
}

void Interpreter::exec_with(const WithStmt& stmt, std::string& out) {
  auto scope = heap_.make<Scope>(scope_);
  std::vector<Value> values;  // evaluated in the outer scope, as Jinja does
  for (const auto& [target, expr] : stmt.assignments) values.push_back(eval(*expr));
  ScopeSwitch switch_to(*this, std::move(scope));
  for (size_t i = 0; i < values.size(); ++i) assign(stmt.assignments[i].first, values[i]);
  exec_body(stmt.body, out);
}

std::string Interpreter::render_body(const Body& body, const std::shared_ptr<Scope>& scope) {
  ScopeSwitch switch_to(*this, scope);
  std::string out;
  exec_body(body, out);
  return out;
}

Value Interpreter::call_macro(const MacroStmt& macro, const std::shared_ptr<Scope>& closure,
                              CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth) {
    throw RuntimeError("macro calls nested deeper than " + std::to_string(limits_.max_call_depth) +
                       " levels (runaway recursion?)");
  }
  ++call_depth_;
  struct Unwind {
    int& depth;
    ~Unwind() { --depth; }
  } unwind{call_depth_};
  auto scope = heap_.make<Scope>(closure);
  ScopeSwitch switch_to(*this, scope);
  // Python-like binding: positional in order, then keywords; extras go to varargs/kwargs,
  // and parameters left over take their default (evaluated in the macro's scope).
  std::vector<bool> bound(macro.params.size(), false);
  Value varargs = heap_.array();
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < macro.params.size()) {
      scope->set(macro.params[i].name, args.positional[i]);
      bound[i] = true;
    } else {
      varargs.as_array().items.push_back(args.positional[i]);
    }
  }
  Value kwargs = heap_.object();
  for (auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < macro.params.size() && macro.params[i].name != key) ++i;
    if (i < macro.params.size()) {
      scope->set(key, value);
      bound[i] = true;
    } else if (key == "caller") {
      scope->set(key, value);
    } else {
      kwargs.as_object().set(key, value);
    }
  }
  for (size_t i = 0; i < macro.params.size(); ++i) {
    if (bound[i]) continue;
    const Parameter& p = macro.params[i];
    scope->set(p.name, p.default_value
                           ? eval(*p.default_value)
                           : Value::undefined("parameter '" + p.name + "' was not provided"));
  }
  scope->set("varargs", heap_.tuple(std::move(varargs.as_array().items)));
  scope->set("kwargs", kwargs);
  std::string out;
  exec_body(macro.body, out);
  return Value(std::move(out));
}

Value Interpreter::call_caller(const CallBlockStmt& block, const std::shared_ptr<Scope>& closure,
                               CallArgs& args) {
  auto scope = heap_.make<Scope>(closure);
  for (size_t i = 0; i < block.caller_params.size(); ++i) {
    const Parameter& p = block.caller_params[i];
    Value v;
    if (i < args.positional.size()) {
      v = args.positional[i];
    } else {
      bool found = false;
      for (const auto& kv : args.keyword) {
        if (kv.first == p.name) v = kv.second, found = true;
      }
      if (!found && p.default_value) {
        ScopeSwitch switch_to(*this, scope);
        v = eval(*p.default_value);
      }
    }
    scope->set(p.name, v);
  }
  return Value(render_body(block.body, scope));
}

}  // namespace engine::jinja
