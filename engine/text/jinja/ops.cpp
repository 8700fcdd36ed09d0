// Arithmetic, concatenation, membership and printf-style formatting with Python semantics.
// Integers are int64: results that would need a bigint are errors, never undefined behavior.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/eval.h"
#include "engine/text/jinja/text.h"

namespace engine::jinja {
namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  throw RuntimeError("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) +
                     "' and '" + type_name(b) + "'");
}

[[noreturn]] void overflow() { throw RuntimeError("integer overflow (result exceeds 64 bits)"); }

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}

int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw RuntimeError("integer division or modulo by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) throw RuntimeError("integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double float_mod(double a, double b) {
  if (b == 0) throw RuntimeError("float modulo");
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

Value int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) throw RuntimeError("0.0 cannot be raised to a negative power");
    return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = checked_mul(result, base);
    exp >>= 1;
    if (exp > 0) base = checked_mul(base, base);
  }
  return Value(result);
}

Value float_pow(double a, double b) {
  if (a == 0 && b < 0) throw RuntimeError("0.0 cannot be raised to a negative power");
  if (a < 0 && b != std::floor(b))
    throw RuntimeError("negative number cannot be raised to a fractional power");
  return Value(std::pow(a, b));
}

// seq * count for strings and lists.
Value repeat(Interpreter& in, const Value& seq, int64_t count) {
  if (count <= 0) return seq.is_string() ? Value("") : in.heap().array();
  const auto n = static_cast<uint64_t>(count);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && n > in.budget().max_string_bytes() / s.size())
      in.budget().check_size(SIZE_MAX);
    in.budget().charge_bytes(s.size() * n);
    std::string out;
    out.reserve(s.size() * n);
    for (uint64_t i = 0; i < n; ++i) out += s;
    return Value(std::move(out));
  }
  const auto& items = seq.as_array().items;
  if (!items.empty() && n > in.budget().max_string_bytes() / items.size()) {
    throw RuntimeError("list repetition too large");
  }
  in.budget().charge(items.size() * n);
  std::vector<Value> out;
  out.reserve(items.size() * n);
  for (uint64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.as_array().is_tuple ? in.heap().tuple(std::move(out))
                                 : in.heap().array(std::move(out));
}

Value add(Interpreter& in, const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) {
    in.budget().check_size(a.as_string().size() + b.as_string().size());
    in.budget().charge_bytes(a.as_string().size() + b.as_string().size());
    return Value(a.as_string() + b.as_string());
  }
  if (a.is_array() && b.is_array() && a.as_array().is_tuple == b.as_array().is_tuple) {
    std::vector<Value> items = a.as_array().items;
    const auto& more = b.as_array().items;
    in.budget().charge(items.size() + more.size());
    items.insert(items.end(), more.begin(), more.end());
    return a.as_array().is_tuple ? in.heap().tuple(std::move(items))
                                 : in.heap().array(std::move(items));
  }
  if (a.is_string() || a.is_array()) {
    throw RuntimeError("can only concatenate " + type_name(a) + " (not \"" + type_name(b) +
                       "\") to " + type_name(a));
  }
  unsupported("+", a, b);
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  static constexpr const char* kSymbols[] = {"+", "-", "*", "/", "//", "%", "**"};
  const char* symbol = kSymbols[static_cast<int>(op)];
  if (!a.is_number() || !b.is_number()) unsupported(symbol, a, b);
  const bool ints = is_integer(a) && is_integer(b);
  if (ints) {
    const int64_t x = int_of(a);
    const int64_t y = int_of(b);
    switch (op) {
      case BinaryOp::kAdd: return Value(checked_add(x, y));
      case BinaryOp::kSub: return Value(checked_sub(x, y));
      case BinaryOp::kMul: return Value(checked_mul(x, y));
      case BinaryOp::kFloorDiv: return Value(floor_div(x, y));
      case BinaryOp::kMod: return Value(floor_mod(x, y));
      case BinaryOp::kPow: return int_pow(x, y);
      default: break;  // true division is float
    }
  }
  const double x = a.as_number();
  const double y = b.as_number();
  switch (op) {
    case BinaryOp::kAdd: return Value(x + y);
    case BinaryOp::kSub: return Value(x - y);
    case BinaryOp::kMul: return Value(x * y);
    case BinaryOp::kDiv:
      if (y == 0) throw RuntimeError("division by zero");
      return Value(x / y);
    case BinaryOp::kFloorDiv:
      if (y == 0) throw RuntimeError("float floor division by zero");
      return Value(std::floor(x / y));
    case BinaryOp::kMod: return Value(float_mod(x, y));
    default: return float_pow(x, y);
  }
}

}  // namespace

Value binary_op(Interpreter& in, BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::kConcat) {
    std::string left = in.str(a);
    const std::string right = in.str(b);
    in.budget().check_size(left.size() + right.size());
    in.budget().charge_bytes(left.size() + right.size());
    return Value(left + right);
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  switch (op) {
    case BinaryOp::kAdd:
      if (!a.is_number() || !b.is_number()) return add(in, a, b);
      break;
    case BinaryOp::kMul:
      if ((a.is_string() || a.is_array()) && is_integer(b)) return repeat(in, a, int_of(b));
      if ((b.is_string() || b.is_array()) && is_integer(a)) return repeat(in, b, int_of(a));
      break;
    case BinaryOp::kMod:
      if (a.is_string()) {
        if (b.is_array()) return Value(percent_format(in, a.as_string(), b.as_array().items));
        return Value(percent_format(in, a.as_string(), std::span<const Value>(&b, 1)));
      }
      break;
    default: break;
  }
  return arithmetic(op, a, b);
}

Value unary_op(UnaryOp op, const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) {
    throw RuntimeError(std::string("bad operand type for unary ") +
                       (op == UnaryOp::kNeg ? "-" : "+") + ": '" + type_name(v) + "'");
  }
  if (op == UnaryOp::kPos) return v.is_bool() ? Value(int_of(v)) : v;
  if (v.is_float()) return Value(-v.as_float());
  const int64_t i = int_of(v);
  if (i == std::numeric_limits<int64_t>::min()) overflow();
  return Value(-i);
}

bool contains(Interpreter& in, const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kUndefined: return false;
    case Kind::kString:
      if (!item.is_string()) {
        throw RuntimeError("'in <string>' requires string as left operand, not " + type_name(item));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::kArray:
      for (const Value& v : container.as_array().items) {
        if (equals(v, item, in.budget())) return true;
      }
      return false;
    case Kind::kObject: return container.as_object().find(key_string(item, in.budget())) != nullptr;
    default: throw RuntimeError("argument of type '" + type_name(container) + "' is not iterable");
  }
}

std::string percent_format(Interpreter& in, std::string_view fmt, std::span<const Value> args) {
  std::string out;
  size_t next = 0;
  auto take = [&]() -> const Value& {
    if (next >= args.size()) throw RuntimeError("not enough arguments for format string");
    return args[next++];
  };
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    // %[flags][width][.precision]conversion (no mapping keys or '*').
    size_t j = i + 1;
    while (j < fmt.size() && std::string_view("-+ #0").find(fmt[j]) != std::string_view::npos) ++j;
    while (j < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[j]))) ++j;
    if (j < fmt.size() && fmt[j] == '.') {
      ++j;
      while (j < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[j]))) ++j;
    }
    if (j >= fmt.size()) throw RuntimeError("incomplete format");
    const std::string spec(fmt.substr(i, j - i));
    const char conv = fmt[j];
    i = j;
    if (spec.size() > 12) throw RuntimeError("format specification too long");
    char buf[512];
    switch (conv) {
      case '%': out += '%'; break;
      case 's': out += in.str(take()); break;
      case 'r': out += to_repr(take(), in.budget()); break;
      case 'd':
      case 'i': {
        const Value& v = take();
        if (!v.is_number())
          throw RuntimeError("%d format: a number is required, not " + type_name(v));
        const double d = v.as_number();
        const bool fits = is_integer(v) || (std::isfinite(d) && std::fabs(d) < 9.2e18);
        if (!fits) throw RuntimeError("cannot convert float to integer");
        const long long n = is_integer(v) ? int_of(v) : static_cast<long long>(d);
        std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), n);
        out += buf;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G': {
        const Value& v = take();
        if (!v.is_number()) throw RuntimeError("must be real number, not " + type_name(v));
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v.as_number());
        out += buf;
        break;
      }
      default: throw RuntimeError(std::string("unsupported format character '") + conv + "'");
    }
    in.budget().check_size(out.size());
  }
  if (next < args.size() && !(args.size() == 1 && args[0].is_object())) {
    throw RuntimeError("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace engine::jinja
