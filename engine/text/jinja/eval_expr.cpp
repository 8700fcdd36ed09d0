// Expression evaluation: names, attribute/item lookup, slices, calls, operators.
#include <algorithm>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/eval.h"
#include "engine/text/jinja/text.h"

namespace engine::jinja {

void fail_undefined(const Value& undefined) {
  const std::string& hint = undefined.undefined_hint();
  throw RuntimeError(hint.empty() ? "undefined value" : hint);
}

namespace {

// How Jinja names an object in "'<x>' has no attribute" messages.
std::string object_description(const Value& v) {
  if (v.is_none()) return "None";
  return type_name(v) + " object";
}

Value missing_attribute(const Value& object, std::string_view name) {
  return Value::undefined("'" + object_description(object) + "' has no attribute '" +
                          std::string(name) + "'");
}

// Python's slice.indices(): clamps start/stop for a sequence of length n.
struct SliceBounds {
  int64_t start, stop, step;
};

int64_t slice_index(const Value& v, const char* what) {
  if (!is_integer(v)) {
    throw RuntimeError(std::string("slice ") + what + " must be an integer or None, not '" +
                       type_name(v) + "'");
  }
  return int_of(v);
}

SliceBounds slice_bounds(const Value& start, const Value& stop, const Value& step, int64_t n) {
  const bool no_step = step.is_undefined() || step.is_none();
  const int64_t st = no_step ? 1 : slice_index(step, "step");
  if (st == 0) throw RuntimeError("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t if_missing) {
    if (v.is_undefined() || v.is_none()) return if_missing;
    int64_t i = slice_index(v, "index");
    if (i < 0) {
      i = i < -n ? (st < 0 ? -1 : 0) : i + n;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  return {clamp(start, st < 0 ? n - 1 : 0), clamp(stop, st < 0 ? -1 : n), st};
}

template <class Fn>
void for_each_slice_index(const SliceBounds& b, Fn fn) {
  if (b.step > 0) {
    for (int64_t i = b.start; i < b.stop; i += b.step) fn(static_cast<size_t>(i));
  } else {
    for (int64_t i = b.start; i > b.stop; i += b.step) fn(static_cast<size_t>(i));
  }
}

}  // namespace

// ---- Lookups ------------------------------------------------------------------------------

Value Interpreter::get_attr(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Kind::kUndefined: return object;  // chainable: keeps the original hint
    case Kind::kObject:
      if (has_method(object, name)) return make_bound_method(*this, object, std::string(name));
      [[fallthrough]];
    case Kind::kNamespace:
      if (const Value* v = object.as_object().find(name)) return *v;
      return missing_attribute(object, name);
    case Kind::kString:
    case Kind::kArray:
      if (has_method(object, name)) return make_bound_method(*this, object, std::string(name));
      return missing_attribute(object, name);
    default: return missing_attribute(object, name);
  }
}

Value Interpreter::get_item(const Value& object, const Value& key) {
  budget_.charge(1);
  switch (object.kind()) {
    case Kind::kUndefined: return object;
    case Kind::kArray: {
      if (!is_integer(key)) break;
      const auto& items = object.as_array().items;
      int64_t i = int_of(key);
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n)
        return Value::undefined("list index " + std::to_string(int_of(key)) + " out of range");
      return items[static_cast<size_t>(i)];
    }
    case Kind::kString: {
      if (!is_integer(key)) break;
      const std::string& s = object.as_string();
      const std::vector<size_t> at = text::code_point_offsets(s);
      const auto n = static_cast<int64_t>(at.size() - 1);
      int64_t i = int_of(key);
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined("string index out of range");
      const auto u = static_cast<size_t>(i);
      return Value(s.substr(at[u], at[u + 1] - at[u]));
    }
    case Kind::kObject:
    case Kind::kNamespace:
      if (key.is_string() || key.is_number() || key.is_none()) {
        if (const Value* v = object.as_object().find(key_string(key, budget_))) return *v;
      }
      break;
    default: break;
  }
  // Like Jinja: obj['name'] falls back to attribute lookup (e.g. a dict method).
  if (key.is_string()) return get_attr(object, key.as_string());
  return Value::undefined("'" + object_description(object) + "' has no item " +
                          to_repr(key, budget_));
}

std::vector<Value> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return {};
    case Kind::kArray: {
      budget_.charge(v.as_array().items.size());
      return v.as_array().items;  // a snapshot: appending while looping cannot loop forever
    }
    case Kind::kObject: {
      std::vector<Value> keys;
      for (const auto& entry : v.as_object().entries()) keys.emplace_back(entry.first);
      budget_.charge(keys.size());
      return keys;
    }
    case Kind::kString: {
      const std::string& s = v.as_string();
      std::vector<Value> chars;
      for (size_t i = 0; i < s.size();) {
        const size_t len = text::decode(s, i).length;
        chars.emplace_back(s.substr(i, len));
        i += len;
      }
      budget_.charge(chars.size());
      return chars;
    }
    default: throw RuntimeError("'" + type_name(v) + "' object is not iterable");
  }
}

Value Interpreter::invoke(const Value& callee, CallArgs& args) {
  if (callee.is_callable()) {
    std::shared_ptr<Callable> keep = callee.callable_ptr();  // the callee may drop its own value
    return keep->call(*this, args);
  }
  if (callee.is_undefined()) fail_undefined(callee);
  throw RuntimeError("'" + type_name(callee) + "' object is not callable");
}

Value Interpreter::apply_filter(std::string_view name, const Value& input, CallArgs& args) {
  return jinja::apply_filter(*this, name, input, args);
}

bool Interpreter::apply_test(std::string_view name, const Value& input, CallArgs& args) {
  return jinja::apply_test(*this, name, input, args);
}

// ---- Expressions --------------------------------------------------------------------------

Value Interpreter::eval(const Expr& expr) {
  DepthGuard guard(*this);
  try {
    return eval_node(expr);
  } catch (const RuntimeError& e) {
    rethrow_at(e, e.raised_by_template(), expr.offset);
  }
}

Value Interpreter::eval_node(const Expr& expr) {
  switch (expr.kind) {
    case ExprKind::kLiteral: return static_cast<const LiteralExpr&>(expr).value;
    case ExprKind::kName: return eval_name(static_cast<const NameExpr&>(expr));
    case ExprKind::kList: return eval_list(static_cast<const ListExpr&>(expr));
    case ExprKind::kDict: return eval_dict(static_cast<const DictExpr&>(expr));
    case ExprKind::kGetAttr: {
      const auto& e = static_cast<const GetAttrExpr&>(expr);
      return get_attr(eval(*e.object), e.name);
    }
    case ExprKind::kGetItem: {
      const auto& e = static_cast<const GetItemExpr&>(expr);
      Value object = eval(*e.object);
      return get_item(object, eval(*e.index));
    }
    case ExprKind::kSlice: return eval_slice(static_cast<const SliceExpr&>(expr));
    case ExprKind::kCall: return eval_call(static_cast<const CallExpr&>(expr));
    case ExprKind::kFilter: return eval_filter(static_cast<const FilterExpr&>(expr), nullptr);
    case ExprKind::kTest: return eval_test(static_cast<const TestExpr&>(expr));
    case ExprKind::kUnary: return eval_unary(static_cast<const UnaryExpr&>(expr));
    case ExprKind::kBinary: return eval_binary(static_cast<const BinaryExpr&>(expr));
    case ExprKind::kCompare: return eval_compare(static_cast<const CompareExpr&>(expr));
    case ExprKind::kConditional: {
      const auto& e = static_cast<const ConditionalExpr&>(expr);
      if (truthy(eval(*e.condition))) return eval(*e.then_expr);
      return e.else_expr ? eval(*e.else_expr) : Value::undefined("the condition was false");
    }
  }
  return Value();
}

Value Interpreter::eval_name(const NameExpr& expr) {
  if (const Value* v = scope_->find(expr.name)) return *v;
  return Value::undefined("'" + expr.name + "' is undefined");
}

Value Interpreter::eval_list(const ListExpr& expr) {
  std::vector<Value> items;
  items.reserve(expr.items.size());
  for (const ExprPtr& e : expr.items) items.push_back(eval(*e));
  return expr.is_tuple ? heap_.tuple(std::move(items)) : heap_.array(std::move(items));
}

Value Interpreter::eval_dict(const DictExpr& expr) {
  Value dict = heap_.object();
  for (const auto& [k, v] : expr.items) {
    Value key = eval(*k);
    Value value = eval(*v);
    dict.as_object().set(key_string(key, budget_), std::move(value));
  }
  return dict;
}

Value Interpreter::eval_slice(const SliceExpr& expr) {
  const Value object = eval(*expr.object);
  const Value start = expr.start ? eval(*expr.start) : Value();
  const Value stop = expr.stop ? eval(*expr.stop) : Value();
  const Value step = expr.step ? eval(*expr.step) : Value();
  if (object.is_undefined()) return object;
  if (object.is_array()) {
    const auto& items = object.as_array().items;
    const SliceBounds b = slice_bounds(start, stop, step, static_cast<int64_t>(items.size()));
    std::vector<Value> out;
    for_each_slice_index(b, [&](size_t i) { out.push_back(items[i]); });
    budget_.charge(out.size());
    return object.as_array().is_tuple ? heap_.tuple(std::move(out)) : heap_.array(std::move(out));
  }
  if (object.is_string()) {
    const std::string& s = object.as_string();
    const std::vector<size_t> at = text::code_point_offsets(s);
    const SliceBounds b = slice_bounds(start, stop, step, static_cast<int64_t>(at.size() - 1));
    std::string out;
    for_each_slice_index(b, [&](size_t i) { out.append(s, at[i], at[i + 1] - at[i]); });
    budget_.charge_bytes(out.size());
    return Value(std::move(out));
  }
  throw RuntimeError("'" + type_name(object) + "' object is not subscriptable");
}

CallArgs Interpreter::eval_args(const Arguments& args) {
  CallArgs out;
  out.positional.reserve(args.positional.size());
  for (const ExprPtr& e : args.positional) out.positional.push_back(eval(*e));
  for (const auto& [key, e] : args.keyword) out.keyword.emplace_back(key, eval(*e));
  return out;
}

Value Interpreter::eval_call(const CallExpr& expr, CallArgs* extra) {
  // obj.method(...) on str/list/dict calls the method directly, without a bound-method object.
  if (expr.callee->kind == ExprKind::kGetAttr) {
    const auto& attr = static_cast<const GetAttrExpr&>(*expr.callee);
    Value object = eval(*attr.object);
    CallArgs args = eval_args(expr.args);
    if (extra) {
      for (auto& kv : extra->keyword) args.keyword.push_back(std::move(kv));
    }
    if (!object.is_namespace() && has_method(object, attr.name)) {
      return call_method(*this, object, attr.name, args);
    }
    return invoke(get_attr(object, attr.name), args);
  }
  Value callee = eval(*expr.callee);
  CallArgs args = eval_args(expr.args);
  if (extra) {
    for (auto& kv : extra->keyword) args.keyword.push_back(std::move(kv));
  }
  return invoke(callee, args);
}

// block_input stands in for the innermost (null) input of {% filter %} chains.
Value Interpreter::eval_filter(const FilterExpr& expr, const Value* block_input) {
  Value input;
  if (!expr.input) {
    if (block_input) input = *block_input;
  } else if (expr.input->kind == ExprKind::kFilter && block_input) {
    input = eval_filter(static_cast<const FilterExpr&>(*expr.input), block_input);
  } else {
    input = eval(*expr.input);
  }
  CallArgs args = eval_args(expr.args);
  return apply_filter(expr.name, input, args);
}

Value Interpreter::eval_test(const TestExpr& expr) {
  const Value input = eval(*expr.input);
  CallArgs args = eval_args(expr.args);
  return Value(apply_test(expr.name, input, args) != expr.negated);
}

Value Interpreter::eval_unary(const UnaryExpr& expr) {
  const Value v = eval(*expr.operand);
  if (expr.op == UnaryOp::kNot) return Value(!truthy(v));
  return unary_op(expr.op, v);
}

Value Interpreter::eval_binary(const BinaryExpr& expr) {
  Value left = eval(*expr.lhs);
  if (expr.op == BinaryOp::kAnd) return truthy(left) ? eval(*expr.rhs) : left;
  if (expr.op == BinaryOp::kOr) return truthy(left) ? left : eval(*expr.rhs);
  const Value right = eval(*expr.rhs);
  return binary_op(*this, expr.op, left, right);
}

Value Interpreter::eval_compare(const CompareExpr& expr) {
  Value left = eval(*expr.first);
  for (const auto& [op, rhs] : expr.rest) {
    Value right = eval(*rhs);
    bool ok = false;
    switch (op) {
      case CompareOp::kEq: ok = equals(left, right, budget_); break;
      case CompareOp::kNe: ok = !equals(left, right, budget_); break;
      case CompareOp::kIn: ok = contains(*this, right, left); break;
      case CompareOp::kNotIn: ok = !contains(*this, right, left); break;
      default: {
        if (left.is_undefined()) fail_undefined(left);
        if (right.is_undefined()) fail_undefined(right);
        static constexpr std::string_view kSymbols[] = {"<", "<=", ">", ">="};
        ok = compare(kSymbols[static_cast<int>(op) - static_cast<int>(CompareOp::kLt)], left, right,
                     budget_);
      }
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

}  // namespace engine::jinja
