// The dynamic value type of the template language: a JSON-like tree plus callables.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace engine::jinja {

class Array;
class Callable;
class Container;
class Interpreter;
class Object;

enum class Kind : uint8_t {
  kUndefined,  // a missing variable/attribute: renders as "", is falsy, iterates as empty
  kNone,
  kBool,
  kInt,  // int64; arithmetic that overflows is an error rather than a bigint
  kFloat,
  kString,     // UTF-8, immutable
  kArray,      // Python list (tuples are arrays too)
  kObject,     // Python dict with string keys, insertion-ordered
  kNamespace,  // namespace(): an object whose attributes the template may assign
  kCallable,   // macro, global function or bound method
};

// A template value. Cheap to copy: strings are shared immutable buffers and containers are shared
// by reference. The default-constructed value is Undefined.
// Thread-safety: like std::shared_ptr - distinct Values may be used from different threads even
// when they share storage, as long as nobody mutates shared containers.
class Value {
 public:
  Value() = default;
  static Value undefined(std::string hint = {});  // hint: error message when it is misused
  static Value none();
  Value(bool b) : data_(b) {}  // NOLINT: implicit, like JSON literals
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) Value(T i)
      : data_(to_int64(i)) {}                           // NOLINT
  Value(double d) : data_(d) {}                         // NOLINT
  Value(const char* s) : Value(std::string(s)) {}       // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}  // NOLINT
  Value(std::string s);                                 // NOLINT
  template <class T>
  Value(T*) = delete;  // no accidental pointer -> bool conversions

  // Containers created by the host. Templates can read but not modify them.
  static Value array(std::vector<Value> items = {});
  static Value object(std::vector<std::pair<std::string, Value>> entries = {});
  // Wraps existing storage (used by the interpreter for template-owned containers).
  static Value from(std::shared_ptr<Array> a);
  static Value from(std::shared_ptr<Object> o);
  static Value from(std::shared_ptr<Callable> c);

  Kind kind() const;
  bool is_undefined() const { return data_.index() == 0; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const;  // bool, int or float (Python's numbers.Number)
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }  // dict, not namespace
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_callable() const { return kind() == Kind::kCallable; }

  // Typed access; the caller checks kind() first (wrong kinds are a programming error and throw
  // std::bad_variant_access).
  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  double as_number() const;  // bool, int or float as double
  const std::string& as_string() const { return *std::get<StringPtr>(data_); }
  Array& as_array() const { return *std::get<std::shared_ptr<Array>>(data_); }
  Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }  // or namespace
  Callable& as_callable() const { return *std::get<std::shared_ptr<Callable>>(data_); }
  const std::shared_ptr<Callable>& callable_ptr() const {
    return std::get<std::shared_ptr<Callable>>(data_);
  }
  const std::string& undefined_hint() const;
  // Same container (Python `is`) for container kinds; false otherwise.
  bool same_container(const Value& other) const;

  // Builders for host code (arrays/objects only).
  Value& push_back(Value v);
  Value& set(std::string key, Value v);
  // Object member or array element lookup for host code; nullptr when absent.
  const Value* get(std::string_view key) const;

  // Moves the container reference (if any) out of this value; used by teardown.
  std::shared_ptr<Container> take_container();

 private:
  using StringPtr = std::shared_ptr<const std::string>;
  struct UndefinedTag {
    StringPtr hint;
  };
  template <class T>
  static int64_t to_int64(T i) {
    if constexpr (std::unsigned_integral<T> && sizeof(T) >= sizeof(int64_t)) {
      if (i > static_cast<T>(std::numeric_limits<int64_t>::max())) {
        return std::numeric_limits<int64_t>::max();  // saturate: values past 2^63 are not JSON-safe
      }
    }
    return static_cast<int64_t>(i);
  }

  std::variant<UndefinedTag, std::nullptr_t, bool, int64_t, double, StringPtr,
               std::shared_ptr<Array>, std::shared_ptr<Object>, std::shared_ptr<Callable>>
      data_;
};

// Shared storage behind arrays, objects, namespaces, callables and scopes. Containers have
// reference semantics, as Python objects do: copying a Value shares the container.
//
// Two hazards of shared ownership are handled here rather than by every user:
//  * deep nesting: destructors free nested containers iteratively (never recursively), so a
//    chain of a million nested lists cannot overflow the stack;
//  * cycles (a list appended to itself): every container a render creates is registered with
//    that render's Heap, which breaks all remaining links when the render ends.
// Containers built by the host (template input) are read-only to templates: mutating methods such
// as list.append() are refused unless template_owned(). That keeps input shareable between
// concurrent renders. Thread-safety: a container may be read concurrently; writes need exclusion.
class Container {
 public:
  Container() = default;
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;
  virtual ~Container() = default;

  // Moves every reference to another container out of this one (into out).
  virtual void take_children(std::vector<std::shared_ptr<Container>>& out) = 0;

  bool template_owned() const { return template_owned_; }
  void mark_template_owned() { template_owned_ = true; }

 protected:
  // Every subclass destructor calls this first: frees nested containers without recursion.
  void dispose_children() noexcept;

 private:
  bool template_owned_ = false;
};

// A Python list, or a tuple (which prints as "(a, b)", is never equal to a list and cannot be
// modified by templates).
class Array final : public Container {
 public:
  Array() = default;
  explicit Array(std::vector<Value> values, bool tuple = false);
  ~Array() override;
  void take_children(std::vector<std::shared_ptr<Container>>& out) override;

  std::vector<Value> items;
  bool is_tuple = false;
};

// A Python dict with string keys that keeps insertion order (like json.dumps output), or a
// namespace() object.
class Object final : public Container {
 public:
  using Entry = std::pair<std::string, Value>;
  explicit Object(bool is_namespace = false) : namespace_(is_namespace) {}
  ~Object() override;
  void take_children(std::vector<std::shared_ptr<Container>>& out) override;

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value value);  // a new key goes last; an existing one keeps its place
  bool erase(std::string_view key);
  void clear();
  void reserve(size_t n) { entries_.reserve(n); }
  size_t size() const { return entries_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }
  bool is_namespace() const { return namespace_; }

 private:
  static constexpr size_t kIndexThreshold = 8;
  void reindex();
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index_;
  bool namespace_;
};

// Arguments of a call as written: f(1, 2, key=3).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Anything a template can call. Implementations live with the evaluator.
class Callable : public Container {
 public:
  virtual Value call(Interpreter& interpreter, CallArgs& args) = 0;
  virtual std::string repr() const = 0;  // e.g. "<Macro 'name'>"
  virtual bool is_macro() const { return false; }
  void take_children(std::vector<std::shared_ptr<Container>>&) override {}
};

// Work accounting for one render: evaluation steps and bytes produced are charged against fixed
// limits, and exceeding one aborts the render with a RuntimeError. This is what bounds hostile
// templates (infinite-ish loops, exponential string growth). Not thread-safe: one per render.
class Budget {
 public:
  Budget(uint64_t max_steps, size_t max_string_bytes)
      : max_steps_(max_steps), max_string_bytes_(max_string_bytes) {}
  void charge(uint64_t steps);
  void charge_bytes(size_t bytes) { charge(1 + bytes / 64); }
  // Throws if a string of this many bytes would exceed the string/output size limit.
  void check_size(size_t bytes) const;
  size_t max_string_bytes() const { return max_string_bytes_; }

 private:
  uint64_t max_steps_;
  uint64_t steps_ = 0;
  size_t max_string_bytes_;
};

// Owns the bookkeeping for the containers one render creates (see Container). Create every
// template-owned container through make(); when the Heap is destroyed, every container that is
// still alive (kept alive only by a cycle) has its links cut so that it is freed.
// Not thread-safe: one per render. Must outlive every Value the render creates.
class Heap {
 public:
  Heap() = default;
  Heap(const Heap&) = delete;
  Heap& operator=(const Heap&) = delete;
  ~Heap();

  template <class T, class... Args>
  std::shared_ptr<T> make(Args&&... args) {
    // A separate allocation (not make_shared) so that the tracking weak_ptr does not pin the
    // object's memory after it dies.
    std::shared_ptr<T> p(new T(std::forward<Args>(args)...));
    p->mark_template_owned();
    track(p);
    return p;
  }
  Value array(std::vector<Value> items = {}) { return Value::from(make<Array>(std::move(items))); }
  Value tuple(std::vector<Value> items) { return Value::from(make<Array>(std::move(items), true)); }
  Value object() { return Value::from(make<Object>(false)); }
  Value namespace_object() { return Value::from(make<Object>(true)); }

 private:
  void track(std::shared_ptr<Container> p);
  std::vector<std::weak_ptr<Container>> tracked_;
  size_t compact_at_ = 1024;
};

// Nesting beyond this depth is an error in deep operations (printing, comparing, JSON).
inline constexpr int kMaxValueDepth = 256;

// Python truthiness.
bool truthy(const Value& v);
// Python type name for messages: "str", "int", "list", "dict", "NoneType", ...
std::string type_name(const Value& v);
// Python ==; never throws for well-formed values except when the budget is exhausted.
bool equals(const Value& a, const Value& b, Budget& budget);
// Python ordering comparison; op is one of "<", "<=", ">", ">=". Throws RuntimeError
// ("'<' not supported between instances of ...") for unorderable operands.
bool compare(std::string_view op, const Value& a, const Value& b, Budget& budget);
// Dict key for a value used as a key: strings as is, numbers/bool/None by str().
std::string key_string(const Value& v, Budget& budget);

// Python str() and repr() (lists and dicts always print as repr, e.g. ['a', 1]).
std::string to_str(const Value& v, Budget& budget);
std::string to_repr(const Value& v, Budget& budget);

// json.dumps(v, indent=..., separators=..., sort_keys=..., ensure_ascii=...).
struct JsonOptions {
  bool pretty = false;  // indent given (even 0 or "")
  std::string indent;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
std::string to_json(const Value& v, const JsonOptions& options, Budget& budget);

}  // namespace engine::jinja
