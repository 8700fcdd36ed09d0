// Python str()/repr() and json.dumps() of template values.
#include <algorithm>
#include <cmath>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/text.h"
#include "engine/text/jinja/value.h"

namespace engine::jinja {
namespace {

// Appends to a string while enforcing the string size limit and the step budget, so that
// printing a huge or exponentially shared structure stops early instead of exhausting memory.
class Writer {
 public:
  explicit Writer(Budget& budget) : budget_(budget) {}
  void put(std::string_view s) {
    budget_.check_size(out_.size() + s.size());
    out_ += s;
  }
  void put(char c) { put(std::string_view(&c, 1)); }
  void enter(int depth) {
    budget_.charge(1);
    if (depth > kMaxValueDepth) {
      throw RuntimeError("value nesting exceeds " + std::to_string(kMaxValueDepth) + " levels");
    }
  }
  std::string finish() {
    budget_.charge_bytes(out_.size());
    return std::move(out_);
  }

 private:
  Budget& budget_;
  std::string out_;
};

void write_python(Writer& w, const Value& v, bool repr, int depth);

void write_items(Writer& w, const Value& v, int depth) {
  const Array& array = v.as_array();
  w.put(array.is_tuple ? '(' : '[');
  bool first = true;
  for (const Value& item : array.items) {
    if (!first) w.put(", ");
    first = false;
    write_python(w, item, true, depth + 1);
  }
  if (array.is_tuple && array.items.size() == 1) w.put(',');
  w.put(array.is_tuple ? ')' : ']');
}

void write_entries(Writer& w, const Object& o, int depth) {
  w.put('{');
  bool first = true;
  for (const auto& [key, value] : o.entries()) {
    if (!first) w.put(", ");
    first = false;
    w.put(text::string_repr(key));
    w.put(": ");
    write_python(w, value, true, depth + 1);
  }
  w.put('}');
}

void write_python(Writer& w, const Value& v, bool repr, int depth) {
  w.enter(depth);
  switch (v.kind()) {
    case Kind::kUndefined: return w.put(repr ? "Undefined" : "");
    case Kind::kNone: return w.put("None");
    case Kind::kBool: return w.put(v.as_bool() ? "True" : "False");
    case Kind::kInt: return w.put(std::to_string(v.as_int()));
    case Kind::kFloat: return w.put(text::float_repr(v.as_float()));
    case Kind::kString: return w.put(repr ? text::string_repr(v.as_string()) : v.as_string());
    case Kind::kArray: return write_items(w, v, depth);
    case Kind::kObject: return write_entries(w, v.as_object(), depth);
    case Kind::kNamespace:
      w.put("<Namespace ");
      write_entries(w, v.as_object(), depth);
      return w.put('>');
    case Kind::kCallable: return w.put(v.as_callable().repr());
  }
}

void write_json(Writer& w, const Value& v, const JsonOptions& opt, int depth);

void json_newline(Writer& w, const JsonOptions& opt, int level) {
  w.put('\n');
  for (int i = 0; i < level; ++i) w.put(opt.indent);
}

void write_json_string(Writer& w, std::string_view s, const JsonOptions& opt) {
  std::string escaped = "\"";
  text::append_json_escaped(escaped, s, opt.ensure_ascii);
  escaped += '"';
  w.put(escaped);
}

void write_json_array(Writer& w, const std::vector<Value>& items, const JsonOptions& opt,
                      int depth) {
  if (items.empty()) return w.put("[]");
  w.put('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) w.put(opt.item_separator);
    if (opt.pretty) json_newline(w, opt, depth + 1);
    write_json(w, items[i], opt, depth + 1);
  }
  if (opt.pretty) json_newline(w, opt, depth);
  w.put(']');
}

void write_json_object(Writer& w, const Object& o, const JsonOptions& opt, int depth) {
  if (o.size() == 0) return w.put("{}");
  std::vector<const Object::Entry*> entries;
  for (const auto& e : o.entries()) entries.push_back(&e);
  if (opt.sort_keys) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  w.put('{');
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) w.put(opt.item_separator);
    if (opt.pretty) json_newline(w, opt, depth + 1);
    write_json_string(w, entries[i]->first, opt);
    w.put(opt.key_separator);
    write_json(w, entries[i]->second, opt, depth + 1);
  }
  if (opt.pretty) json_newline(w, opt, depth);
  w.put('}');
}

void write_json(Writer& w, const Value& v, const JsonOptions& opt, int depth) {
  w.enter(depth);
  switch (v.kind()) {
    case Kind::kNone: return w.put("null");
    case Kind::kBool: return w.put(v.as_bool() ? "true" : "false");
    case Kind::kInt: return w.put(std::to_string(v.as_int()));
    case Kind::kFloat: {
      const double d = v.as_float();
      if (std::isnan(d)) return w.put("NaN");
      if (std::isinf(d)) return w.put(d < 0 ? "-Infinity" : "Infinity");
      return w.put(text::float_repr(d));
    }
    case Kind::kString: return write_json_string(w, v.as_string(), opt);
    case Kind::kArray: return write_json_array(w, v.as_array().items, opt, depth);
    case Kind::kObject: return write_json_object(w, v.as_object(), opt, depth);
    default: throw RuntimeError("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_str(const Value& v, Budget& budget) {
  if (v.is_string()) return v.as_string();
  Writer w(budget);
  write_python(w, v, false, 0);
  return w.finish();
}

std::string to_repr(const Value& v, Budget& budget) {
  Writer w(budget);
  write_python(w, v, true, 0);
  return w.finish();
}

std::string to_json(const Value& v, const JsonOptions& options, Budget& budget) {
  Writer w(budget);
  write_json(w, v, options, 0);
  return w.finish();
}

}  // namespace engine::jinja
