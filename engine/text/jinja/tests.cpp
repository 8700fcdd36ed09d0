// Tests: the right-hand side of "x is name(args)".
#include <cmath>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/eval.h"
#include "engine/text/jinja/text.h"

namespace engine::jinja {
namespace {

const Value& required_arg(std::string_view test, const CallArgs& args) {
  if (args.positional.empty()) {
    if (!args.keyword.empty()) return args.keyword.front().second;
    throw RuntimeError("test '" + std::string(test) + "' needs an argument");
  }
  return args.positional.front();
}

// Python's "value % divisor == 0" (value % 2 == 1 for odd) for ints and floats.
bool remainder_is(const Value& v, const Value& divisor, int64_t wanted) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number() || !divisor.is_number()) {
    throw RuntimeError("unsupported operand type(s) for %: '" + type_name(v) + "' and '" +
                       type_name(divisor) + "'");
  }
  if (is_integer(v) && is_integer(divisor)) {
    const int64_t d = int_of(divisor);
    if (d == 0) throw RuntimeError("integer division or modulo by zero");
    if (d == -1) return wanted == 0;
    int64_t r = int_of(v) % d;
    if (r != 0 && ((r < 0) != (d < 0))) r += d;
    return r == wanted;
  }
  const double d = divisor.as_number();
  if (d == 0) throw RuntimeError("float modulo");
  double r = std::fmod(v.as_number(), d);
  if (r != 0 && ((r < 0) != (d < 0))) r += d;
  return r == static_cast<double>(wanted);
}

// str.islower() / str.isupper(): at least one cased character and no cased one of the other kind.
bool has_case(const std::string& s, bool want_lower) {
  bool any = false;
  for (size_t i = 0; i < s.size();) {
    const text::CodePoint cp = text::decode(s, i);
    i += cp.length;
    if (!cp.valid) continue;
    if (text::is_lower_cp(cp.value)) {
      if (!want_lower) return false;
      any = true;
    } else if (text::is_upper_cp(cp.value)) {
      if (want_lower) return false;
      any = true;
    }
  }
  return any;
}

bool same_as(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kBool: return a.as_bool() == b.as_bool();
    case Kind::kInt: return a.as_int() == b.as_int();
    case Kind::kString: return a.as_string() == b.as_string();
    default: return a.same_container(b);
  }
}

}  // namespace

bool apply_test(Interpreter& in, std::string_view name, const Value& v, CallArgs& args) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "mapping") return v.is_object();
  if (name == "callable") return v.is_callable();
  if (name == "iterable") {
    return v.is_undefined() || v.is_string() || v.is_array() || v.is_object();
  }
  if (name == "sequence") {
    return v.is_undefined() || v.is_string() || v.is_array() || v.is_object();
  }
  if (name == "escaped") return false;
  if (name == "lower") return has_case(in.str(v), true);
  if (name == "upper") return has_case(in.str(v), false);
  if (name == "odd") return remainder_is(v, Value(2), 1);
  if (name == "even") return remainder_is(v, Value(2), 0);
  if (name == "divisibleby") return remainder_is(v, required_arg(name, args), 0);
  if (name == "eq" || name == "equalto" || name == "==") {
    return equals(v, required_arg(name, args), in.budget());
  }
  if (name == "ne" || name == "!=") return !equals(v, required_arg(name, args), in.budget());
  if (name == "in") return contains(in, required_arg(name, args), v);
  if (name == "sameas") return same_as(v, required_arg(name, args));
  const std::string_view op = name == "lt" || name == "lessthan" || name == "<"      ? "<"
                              : name == "le" || name == "<="                         ? "<="
                              : name == "gt" || name == "greaterthan" || name == ">" ? ">"
                              : name == "ge" || name == ">="                         ? ">="
                                                                                     : "";
  if (!op.empty()) {
    const Value& other = required_arg(name, args);
    if (v.is_undefined()) fail_undefined(v);
    if (other.is_undefined()) fail_undefined(other);
    return compare(op, v, other, in.budget());
  }
  throw RuntimeError("no test named '" + std::string(name) + "'");
}

}  // namespace engine::jinja
