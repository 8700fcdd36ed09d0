#include "engine/text/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/text.h"

namespace engine::jinja {

// ---- Containers ---------------------------------------------------------------------------

void Container::dispose_children() noexcept {
  // Work list instead of recursion: a child we hold the last reference to is emptied first, so
  // that its own destructor has nothing left to free.
  std::vector<std::shared_ptr<Container>> work;
  take_children(work);
  while (!work.empty()) {
    std::shared_ptr<Container> child = std::move(work.back());
    work.pop_back();
    if (child.use_count() == 1) child->take_children(work);
  }
}

Array::Array(std::vector<Value> values, bool tuple) : items(std::move(values)), is_tuple(tuple) {}

Array::~Array() { dispose_children(); }

void Array::take_children(std::vector<std::shared_ptr<Container>>& out) {
  for (Value& v : items) {
    if (auto c = v.take_container()) out.push_back(std::move(c));
  }
}

Object::~Object() { dispose_children(); }

void Object::take_children(std::vector<std::shared_ptr<Container>>& out) {
  for (Entry& e : entries_) {
    if (auto c = e.second.take_container()) out.push_back(std::move(c));
  }
}

// Small objects (the common case: messages, loop info) are searched linearly; a hash index is
// built once an object grows past kIndexThreshold entries.
const Value* Object::find(std::string_view key) const {
  if (index_.empty()) {
    for (const Entry& e : entries_) {
      if (e.first == key) return &e.second;
    }
    return nullptr;
  }
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

Value* Object::find(std::string_view key) {
  return const_cast<Value*>(std::as_const(*this).find(key));
}

void Object::set(std::string key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
    return;
  }
  entries_.emplace_back(std::move(key), std::move(value));
  if (!index_.empty()) {
    index_.emplace(entries_.back().first, entries_.size() - 1);
  } else if (entries_.size() > kIndexThreshold) {
    reindex();
  }
}

bool Object::erase(std::string_view key) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.first == key; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  reindex();
  return true;
}

void Object::clear() {
  index_.clear();
  entries_.clear();
}

void Object::reindex() {
  index_.clear();
  if (entries_.size() <= kIndexThreshold) return;
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
}

// ---- Value --------------------------------------------------------------------------------

Value::Value(std::string s) : data_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) {
    std::get<UndefinedTag>(v.data_).hint = std::make_shared<const std::string>(std::move(hint));
  }
  return v;
}

Value Value::none() {
  Value v;
  v.data_ = nullptr;
  return v;
}

Value Value::array(std::vector<Value> items) {
  return from(std::make_shared<Array>(std::move(items)));
}

Value Value::object(std::vector<std::pair<std::string, Value>> entries) {
  auto o = std::make_shared<Object>(false);
  for (auto& [k, v] : entries) o->set(std::move(k), std::move(v));
  return from(std::move(o));
}

Value Value::from(std::shared_ptr<Array> a) {
  Value v;
  v.data_ = std::move(a);
  return v;
}

Value Value::from(std::shared_ptr<Object> o) {
  Value v;
  v.data_ = std::move(o);
  return v;
}

Value Value::from(std::shared_ptr<Callable> c) {
  Value v;
  v.data_ = std::move(c);
  return v;
}

Kind Value::kind() const {
  switch (data_.index()) {
    case 0: return Kind::kUndefined;
    case 1: return Kind::kNone;
    case 2: return Kind::kBool;
    case 3: return Kind::kInt;
    case 4: return Kind::kFloat;
    case 5: return Kind::kString;
    case 6: return Kind::kArray;
    case 7: return as_object().is_namespace() ? Kind::kNamespace : Kind::kObject;
    default: return Kind::kCallable;
  }
}

bool Value::is_number() const {
  const Kind k = kind();
  return k == Kind::kBool || k == Kind::kInt || k == Kind::kFloat;
}

double Value::as_number() const {
  switch (kind()) {
    case Kind::kBool: return as_bool() ? 1.0 : 0.0;
    case Kind::kInt: return static_cast<double>(as_int());
    default: return as_float();
  }
}

const std::string& Value::undefined_hint() const {
  static const std::string kEmpty;  // immutable
  const auto* tag = std::get_if<UndefinedTag>(&data_);
  return tag && tag->hint ? *tag->hint : kEmpty;
}

bool Value::same_container(const Value& other) const {
  if (data_.index() != other.data_.index()) return false;
  switch (data_.index()) {
    case 6: return &as_array() == &other.as_array();
    case 7: return &as_object() == &other.as_object();
    case 8: return &as_callable() == &other.as_callable();
    default: return false;
  }
}

Value& Value::push_back(Value v) {
  auto& items = as_array().items;
  items.push_back(std::move(v));
  return items.back();
}

Value& Value::set(std::string key, Value v) {
  Object& o = as_object();
  o.set(key, std::move(v));
  return *o.find(key);
}

const Value* Value::get(std::string_view key) const {
  return kind() == Kind::kObject || kind() == Kind::kNamespace ? as_object().find(key) : nullptr;
}

std::shared_ptr<Container> Value::take_container() {
  std::shared_ptr<Container> out;
  if (auto* a = std::get_if<std::shared_ptr<Array>>(&data_)) out = std::move(*a);
  if (auto* o = std::get_if<std::shared_ptr<Object>>(&data_)) out = std::move(*o);
  if (auto* c = std::get_if<std::shared_ptr<Callable>>(&data_)) out = std::move(*c);
  if (out) data_ = UndefinedTag{};
  return out;
}

// ---- Budget and Heap ----------------------------------------------------------------------

void Budget::charge(uint64_t steps) {
  steps_ += steps;
  if (steps_ > max_steps_) {
    throw RuntimeError("template exceeded its evaluation budget of " + std::to_string(max_steps_) +
                       " steps");
  }
}

void Budget::check_size(size_t bytes) const {
  if (bytes > max_string_bytes_) {
    throw RuntimeError("template output or string exceeds the limit of " +
                       std::to_string(max_string_bytes_) + " bytes");
  }
}

Heap::~Heap() {
  // Whatever is still alive here is kept alive only by reference cycles (the render is over):
  // cut every container-to-container link, then let the pieces go.
  std::vector<std::shared_ptr<Container>> survivors;
  for (auto& weak : tracked_) {
    if (auto p = weak.lock()) survivors.push_back(std::move(p));
  }
  std::vector<std::shared_ptr<Container>> links;
  for (auto& p : survivors) p->take_children(links);
  links.clear();
  survivors.clear();
}

void Heap::track(std::shared_ptr<Container> p) {
  tracked_.push_back(p);
  if (tracked_.size() >= compact_at_) {
    // Drop entries of containers that already died; amortized O(1) per allocation.
    std::erase_if(tracked_, [](const std::weak_ptr<Container>& w) { return w.expired(); });
    compact_at_ = std::max<size_t>(1024, tracked_.size() * 2);
  }
}

// ---- Python semantics ---------------------------------------------------------------------

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return v.as_bool();
    case Kind::kInt: return v.as_int() != 0;
    case Kind::kFloat: return v.as_float() != 0.0;
    case Kind::kString: return !v.as_string().empty();
    case Kind::kArray: return !v.as_array().items.empty();
    case Kind::kObject: return v.as_object().size() != 0;
    default: return true;
  }
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kArray: return v.as_array().is_tuple ? "tuple" : "list";
    case Kind::kObject: return "dict";
    case Kind::kNamespace: return "Namespace";
    default: return v.as_callable().is_macro() ? "Macro" : "function";
  }
}

namespace {

void check_depth(int depth) {
  if (depth > kMaxValueDepth) {
    throw RuntimeError("value nesting exceeds " + std::to_string(kMaxValueDepth) + " levels");
  }
}

bool equals_at(const Value& a, const Value& b, Budget& budget, int depth) {
  budget.charge(1);
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_number() == b.as_number();
    const int64_t x = a.is_bool() ? int64_t{a.as_bool()} : a.as_int();
    const int64_t y = b.is_bool() ? int64_t{b.as_bool()} : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.as_string() == b.as_string();
    case Kind::kArray: {
      if (a.same_container(b)) return true;
      if (a.as_array().is_tuple != b.as_array().is_tuple) return false;
      const auto& x = a.as_array().items;
      const auto& y = b.as_array().items;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equals_at(x[i], y[i], budget, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kObject: {
      if (a.same_container(b)) return true;
      const Object& x = a.as_object();
      const Object& y = b.as_object();
      if (x.size() != y.size()) return false;
      for (const auto& [key, value] : x.entries()) {
        const Value* other = y.find(key);
        if (!other || !equals_at(value, *other, budget, depth + 1)) return false;
      }
      return true;
    }
    default: return a.same_container(b);
  }
}

template <class T>
bool apply_order(std::string_view op, const T& a, const T& b) {
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  return a >= b;
}

bool compare_at(std::string_view op, const Value& a, const Value& b, Budget& budget, int depth) {
  budget.charge(1);
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return apply_order(op, a.as_number(), b.as_number());
    const int64_t x = a.is_bool() ? int64_t{a.as_bool()} : a.as_int();
    const int64_t y = b.is_bool() ? int64_t{b.as_bool()} : b.as_int();
    return apply_order(op, x, y);
  }
  if (a.is_string() && b.is_string()) return apply_order(op, a.as_string(), b.as_string());
  if (a.is_array() && b.is_array() && a.as_array().is_tuple == b.as_array().is_tuple) {
    // Lexicographic, like Python: the first unequal pair decides, else the lengths do.
    const auto& x = a.as_array().items;
    const auto& y = b.as_array().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals_at(x[i], y[i], budget, depth + 1))
        return compare_at(op, x[i], y[i], budget, depth + 1);
    }
    return apply_order(op, x.size(), y.size());
  }
  throw RuntimeError("'" + std::string(op) + "' not supported between instances of '" +
                     type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

bool equals(const Value& a, const Value& b, Budget& budget) { return equals_at(a, b, budget, 0); }

bool compare(std::string_view op, const Value& a, const Value& b, Budget& budget) {
  return compare_at(op, a, b, budget, 0);
}

std::string key_string(const Value& v, Budget& budget) {
  if (v.is_string()) return v.as_string();
  if (v.is_number() || v.is_none()) return to_str(v, budget);
  throw RuntimeError("unhashable type: '" + type_name(v) + "'");
}

}  // namespace engine::jinja
