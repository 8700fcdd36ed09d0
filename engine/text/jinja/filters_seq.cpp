// Filters over sequences and mappings: length, first/last, join, map, select*, sort, unique...
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/filters.h"
#include "engine/text/jinja/text.h"

namespace engine::jinja {

Value get_attribute_path(Interpreter& in, const Value& item, std::string_view path) {
  // Like Jinja's make_attrgetter: "a.b.0" looks up a, then b, then index 0 (item lookup first).
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string_view part =
        path.substr(start, dot == std::string_view::npos ? dot : dot - start);
    const bool numeric =
        !part.empty() && part.size() < 19 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = numeric ? in.get_item(current, Value(std::stoll(std::string(part))))
                      : in.get_item(current, Value(part));
    if (dot == std::string_view::npos) return current;
    start = dot + 1;
  }
}

namespace filters {

Value pick(Interpreter& in, const Value& item, const Value* attribute) {
  if (!attribute || attribute->is_none() || attribute->is_undefined()) return item;
  if (is_integer(*attribute)) return in.get_item(item, *attribute);
  return get_attribute_path(in, item, in.str(*attribute));
}

namespace {

// Sort/min/max/unique key: the picked attribute, lower-cased for strings unless case-sensitive.
Value sort_key(Interpreter& in, const Value& item, const Value* attribute, bool case_sensitive) {
  Value key = pick(in, item, attribute);
  if (!case_sensitive && key.is_string()) return Value(text::to_lower(key.as_string()));
  return key;
}

bool flag(const ArgReader& a, size_t i) { return a.get(i) && truthy(*a.get(i)); }

Value length(Interpreter&, const Value& v, CallArgs&) {
  switch (v.kind()) {
    case Kind::kUndefined: return Value(0);
    case Kind::kString: return Value(static_cast<int64_t>(text::count_code_points(v.as_string())));
    case Kind::kArray: return Value(static_cast<int64_t>(v.as_array().items.size()));
    case Kind::kObject:
    case Kind::kNamespace: return Value(static_cast<int64_t>(v.as_object().size()));
    default: throw RuntimeError("object of type '" + type_name(v) + "' has no len()");
  }
}

Value first(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_array()) {
    const auto& items = v.as_array().items;
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
  }
  std::vector<Value> items = in.iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value last(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_array()) {
    const auto& items = v.as_array().items;
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
  }
  std::vector<Value> items = in.iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value list(Interpreter& in, const Value& v, CallArgs&) { return in.heap().array(in.iterate(v)); }

Value reverse(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_string()) {
    const std::string& s = v.as_string();
    const std::vector<size_t> at = text::code_point_offsets(s);
    std::string out;
    out.reserve(s.size());
    for (size_t i = at.size() - 1; i > 0; --i) out.append(s, at[i - 1], at[i] - at[i - 1]);
    return Value(std::move(out));
  }
  std::vector<Value> items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  return in.heap().array(std::move(items));
}

Value join(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("join", args, {"d", "attribute"});
  const std::string sep = a.get(0) ? in.str(*a.get(0)) : std::string();
  std::string out;
  bool first_item = true;
  for (const Value& item : in.iterate(v)) {
    if (!first_item) out += sep;
    first_item = false;
    out += in.str(pick(in, item, a.get(1)));
    in.budget().check_size(out.size());
  }
  in.budget().charge_bytes(out.size());
  return Value(std::move(out));
}

Value items(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_undefined()) return in.heap().array();
  if (!v.is_object()) throw RuntimeError("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.as_object().entries())
    pairs.push_back(in.heap().tuple({Value(k), val}));
  in.budget().charge(pairs.size());
  return in.heap().array(std::move(pairs));
}

Value dictsort(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!v.is_object()) throw RuntimeError("dictsort() needs a mapping");
  const bool by_value = a.get(1) && a.get(1)->is_string() && a.get(1)->as_string() == "value";
  const bool case_sensitive = flag(a, 0);
  const bool descending = flag(a, 2);
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.as_object().entries())
    pairs.push_back(in.heap().tuple({Value(k), val}));
  auto key = [&](const Value& pair) {
    return sort_key(in, pair.as_array().items[by_value ? 1 : 0], nullptr, case_sensitive);
  };
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    return descending ? compare("<", key(y), key(x), in.budget())
                      : compare("<", key(x), key(y), in.budget());
  });
  return in.heap().array(std::move(pairs));
}

Value sort(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool descending = flag(a, 0);
  const bool case_sensitive = flag(a, 1);
  std::vector<Value> values = in.iterate(v);
  std::vector<std::pair<Value, Value>> keyed;  // (key, value), keys computed once
  for (Value& item : values)
    keyed.emplace_back(sort_key(in, item, a.get(2), case_sensitive), std::move(item));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return descending ? compare("<", y.first, x.first, in.budget())
                      : compare("<", x.first, y.first, in.budget());
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return in.heap().array(std::move(out));
}

Value min_or_max(Interpreter& in, const Value& v, CallArgs& args, bool want_max) {
  ArgReader a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = flag(a, 0);
  const std::vector<Value> values = in.iterate(v);
  if (values.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(in, values[0], a.get(1), case_sensitive);
  for (size_t i = 1; i < values.size(); ++i) {
    Value key = sort_key(in, values[i], a.get(1), case_sensitive);
    if (compare(want_max ? ">" : "<", key, best_key, in.budget())) {
      best = i;
      best_key = std::move(key);
    }
  }
  return values[best];
}

Value min(Interpreter& in, const Value& v, CallArgs& args) {
  return min_or_max(in, v, args, false);
}
Value max(Interpreter& in, const Value& v, CallArgs& args) { return min_or_max(in, v, args, true); }

// Hash key for unique(): equal Python values (1, 1.0, True) give equal keys.
std::string hash_key(Interpreter& in, const Value& key) {
  if (key.is_array() || key.is_object() || key.is_namespace()) {
    throw RuntimeError("unhashable type: '" + type_name(key) + "'");
  }
  if (key.is_float() && key.as_float() == std::floor(key.as_float()) &&
      std::fabs(key.as_float()) < 1e18) {
    return "n" + std::to_string(static_cast<int64_t>(key.as_float()));
  }
  if (is_integer(key)) return "n" + std::to_string(int_of(key));
  return (key.is_string() ? "s" : "o") + to_repr(key, in.budget());
}

Value unique(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("unique", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = flag(a, 0);
  std::unordered_set<std::string> seen;
  std::vector<Value> out;
  for (Value& item : in.iterate(v)) {
    if (seen.insert(hash_key(in, sort_key(in, item, a.get(1), case_sensitive))).second) {
      out.push_back(std::move(item));
    }
  }
  return in.heap().array(std::move(out));
}

Value sum(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value(0));
  for (const Value& item : in.iterate(v))
    total = binary_op(in, BinaryOp::kAdd, total, pick(in, item, a.get(0)));
  return total;
}

// select/reject/selectattr/rejectattr share one loop. The test and its arguments follow the
// attribute (for *attr) in the positional arguments.
Value select_items(Interpreter& in, const Value& v, CallArgs& args, bool by_attribute, bool keep) {
  const size_t first_test_arg = by_attribute ? 1 : 0;
  if (by_attribute && args.positional.empty())
    throw RuntimeError("selectattr/rejectattr need an attribute");
  const Value* attribute = by_attribute ? &args.positional[0] : nullptr;
  const Value* test =
      args.positional.size() > first_test_arg ? &args.positional[first_test_arg] : nullptr;
  CallArgs test_args;
  for (size_t i = first_test_arg + 1; i < args.positional.size(); ++i)
    test_args.positional.push_back(args.positional[i]);
  test_args.keyword = args.keyword;
  std::vector<Value> out;
  for (Value& item : in.iterate(v)) {
    const Value subject = pick(in, item, attribute);
    const bool passed = test ? in.apply_test(in.str(*test), subject, test_args) : truthy(subject);
    if (passed == keep) out.push_back(std::move(item));
  }
  return in.heap().array(std::move(out));
}

Value select(Interpreter& in, const Value& v, CallArgs& a) {
  return select_items(in, v, a, false, true);
}
Value reject(Interpreter& in, const Value& v, CallArgs& a) {
  return select_items(in, v, a, false, false);
}
Value selectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_items(in, v, a, true, true);
}
Value rejectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_items(in, v, a, true, false);
}

// map(attribute='x', default=...) or map('filter', args...).
Value map(Interpreter& in, const Value& v, CallArgs& args) {
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [key, value] : args.keyword) {
    if (key == "attribute") attribute = &value;
    if (key == "default") fallback = &value;
  }
  std::vector<Value> out;
  if (attribute) {
    for (const Value& item : in.iterate(v)) {
      Value picked = pick(in, item, attribute);
      out.push_back(picked.is_undefined() && fallback ? *fallback : std::move(picked));
    }
    return in.heap().array(std::move(out));
  }
  if (args.positional.empty()) throw RuntimeError("map() needs a filter name or attribute=");
  const std::string filter = in.str(args.positional[0]);
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : in.iterate(v)) {
    CallArgs copy = filter_args;
    out.push_back(in.apply_filter(filter, item, copy));
  }
  return in.heap().array(std::move(out));
}

Value attr(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("attr", args, {"name"});
  if (!a.get(0)) throw RuntimeError("attr() needs a name");
  return in.get_attr(v, in.str(*a.get(0)));
}

}  // namespace

Filter find_sequence_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, Filter> table = {
      {"length", length},
      {"count", length},
      {"first", first},
      {"last", last},
      {"list", list},
      {"reverse", reverse},
      {"join", join},
      {"items", items},
      {"dictsort", dictsort},
      {"sort", sort},
      {"min", min},
      {"max", max},
      {"unique", unique},
      {"sum", sum},
      {"select", select},
      {"reject", reject},
      {"selectattr", selectattr},
      {"rejectattr", rejectattr},
      {"map", map},
      {"attr", attr},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace filters
}  // namespace engine::jinja
