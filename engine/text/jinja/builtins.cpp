// Callable value kinds and the global functions every template sees.
#include <ctime>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/eval.h"

namespace engine::jinja {
namespace {

class NativeFunction final : public Callable {
 public:
  using Fn = std::function<Value(Interpreter&, CallArgs&)>;
  NativeFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  ~NativeFunction() override { dispose_children(); }
  Value call(Interpreter& in, CallArgs& args) override { return fn_(in, args); }
  std::string repr() const override { return "<built-in function " + name_ + ">"; }

 private:
  std::string name_;
  Fn fn_;  // must not capture containers (they would escape cycle breaking)
};

// "text".upper, [1].append, {}.items, ... taken as values rather than called directly.
class BoundMethod final : public Callable {
 public:
  BoundMethod(Value receiver, std::string name)
      : receiver_(std::move(receiver)), name_(std::move(name)) {}
  ~BoundMethod() override { dispose_children(); }
  Value call(Interpreter& in, CallArgs& args) override {
    return call_method(in, receiver_, name_, args);
  }
  std::string repr() const override {
    return "<built-in method " + name_ + " of " + type_name(receiver_) + " object>";
  }
  void take_children(std::vector<std::shared_ptr<Container>>& out) override {
    if (auto c = receiver_.take_container()) out.push_back(std::move(c));
  }

 private:
  Value receiver_;
  std::string name_;
};

class Macro final : public Callable {
 public:
  Macro(const MacroStmt& def, std::shared_ptr<Scope> closure)
      : def_(def), closure_(std::move(closure)) {}
  ~Macro() override { dispose_children(); }
  Value call(Interpreter& in, CallArgs& args) override {
    if (!closure_) throw RuntimeError("macro '" + def_.name + "' is no longer available");
    return in.call_macro(def_, closure_, args);
  }
  std::string repr() const override { return "<Macro '" + def_.name + "'>"; }
  bool is_macro() const override { return true; }
  void take_children(std::vector<std::shared_ptr<Container>>& out) override {
    if (closure_) out.push_back(std::move(closure_));
  }

 private:
  const MacroStmt& def_;  // owned by the Template, which outlives the render
  std::shared_ptr<Scope> closure_;
};

// The `caller` passed to a macro by {% call %}: renders the call block's body.
class Caller final : public Callable {
 public:
  Caller(const CallBlockStmt& block, std::shared_ptr<Scope> closure)
      : block_(block), closure_(std::move(closure)) {}
  ~Caller() override { dispose_children(); }
  Value call(Interpreter& in, CallArgs& args) override {
    if (!closure_) throw RuntimeError("caller is no longer available");
    return in.call_caller(block_, closure_, args);
  }
  std::string repr() const override { return "<Macro 'caller'>"; }
  bool is_macro() const override { return true; }
  void take_children(std::vector<std::shared_ptr<Container>>& out) override {
    if (closure_) out.push_back(std::move(closure_));
  }

 private:
  const CallBlockStmt& block_;
  std::shared_ptr<Scope> closure_;
};

int64_t int_arg(const Value& v, const char* function) {
  if (!is_integer(v)) {
    throw RuntimeError(std::string(function) + "() expects integers, got '" + type_name(v) + "'");
  }
  return int_of(v);
}

Value range(Interpreter& in, CallArgs& args) {
  if (!args.keyword.empty()) throw RuntimeError("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) throw RuntimeError("range expected 1 to 3 arguments");
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  if (p.size() == 1) {
    stop = int_arg(p[0], "range");
  } else {
    start = int_arg(p[0], "range");
    stop = int_arg(p[1], "range");
    if (p.size() == 3) step = int_arg(p[2], "range");
  }
  if (step == 0) throw RuntimeError("range() arg 3 must not be zero");
  // Count without overflow: the span fits in unsigned 64-bit arithmetic.
  uint64_t count = 0;
  if (step > 0 && start < stop) {
    count = (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) /
                static_cast<uint64_t>(step) +
            1;
  } else if (step < 0 && start > stop) {
    const uint64_t mag = static_cast<uint64_t>(-(step + 1)) + 1;
    count = (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) / mag + 1;
  }
  if (count > static_cast<uint64_t>(in.limits().max_range)) {
    throw RuntimeError("range() is too large (" + std::to_string(count) + " items, limit " +
                       std::to_string(in.limits().max_range) + ")");
  }
  in.budget().charge(count);
  std::vector<Value> items;
  items.reserve(count);
  int64_t v = start;
  for (uint64_t i = 0; i < count; ++i) {
    items.emplace_back(v);
    if (i + 1 < count) v += step;  // never steps past the last item, so never overflows
  }
  return in.heap().array(std::move(items));
}

// dict(**kwargs), dict(mapping) or dict(pairs).
Value make_dict(Interpreter& in, CallArgs& args, bool is_namespace) {
  Value out = is_namespace ? in.heap().namespace_object() : in.heap().object();
  Object& o = out.as_object();
  if (args.positional.size() > 1) throw RuntimeError("expected at most 1 positional argument");
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_object() || src.is_namespace()) {
      for (const auto& [k, v] : src.as_object().entries()) o.set(k, v);
    } else {
      for (const Value& pair : in.iterate(src)) {
        const std::vector<Value> kv = in.iterate(pair);
        if (kv.size() != 2)
          throw RuntimeError("dictionary update sequence element has wrong length");
        o.set(key_string(kv[0], in.budget()), kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) o.set(k, v);
  return out;
}

Value raise_exception(Interpreter& in, CallArgs& args) {
  ArgReader a("raise_exception", args, {"message"});
  const Value* message = a.get(0);
  throw RuntimeError(message ? in.str(*message) : std::string("raise_exception() called"), true);
}

Value strftime_now(Interpreter& in, CallArgs& args) {
  ArgReader a("strftime_now", args, {"format"});
  const Value* format = a.get(0);
  if (!format || !format->is_string()) throw RuntimeError("strftime_now() expects a format string");
  const std::string& fmt = format->as_string();
  if (fmt.empty()) return Value("");
  if (fmt.size() > 4096) throw RuntimeError("strftime_now() format too long");
  const std::tm now = in.now();
  // strftime returns 0 both for "buffer too small" and for an empty result; grow a few times.
  std::string buf(fmt.size() * 4 + 64, '\0');
  for (int attempt = 0; attempt < 4; ++attempt) {
    const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &now);
    if (n > 0) {
      buf.resize(n);
      return Value(std::move(buf));
    }
    buf.resize(buf.size() * 4);
  }
  return Value("");
}

}  // namespace

Value make_native(Interpreter& in, std::string name,
                  std::function<Value(Interpreter&, CallArgs&)> fn) {
  return Value::from(std::static_pointer_cast<Callable>(
      in.heap().make<NativeFunction>(std::move(name), std::move(fn))));
}

Value make_bound_method(Interpreter& in, const Value& receiver, std::string name) {
  return Value::from(
      std::static_pointer_cast<Callable>(in.heap().make<BoundMethod>(receiver, std::move(name))));
}

Value make_macro(Interpreter& in, const MacroStmt& macro, std::shared_ptr<Scope> closure) {
  return Value::from(
      std::static_pointer_cast<Callable>(in.heap().make<Macro>(macro, std::move(closure))));
}

Value make_caller(Interpreter& in, const CallBlockStmt& block, std::shared_ptr<Scope> closure) {
  return Value::from(
      std::static_pointer_cast<Callable>(in.heap().make<Caller>(block, std::move(closure))));
}

void install_globals(Interpreter& in, Scope& scope) {
  scope.set("range", make_native(in, "range", range));
  scope.set("dict", make_native(in, "dict", [](Interpreter& i, CallArgs& a) {
              return make_dict(i, a, false);
            }));
  scope.set("namespace", make_native(in, "namespace", [](Interpreter& i, CallArgs& a) {
              return make_dict(i, a, true);
            }));
  scope.set("raise_exception", make_native(in, "raise_exception", raise_exception));
  scope.set("strftime_now", make_native(in, "strftime_now", strftime_now));
}

}  // namespace engine::jinja
