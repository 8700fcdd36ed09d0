// A small JSON Schema validator for tests of structured output (constrained decoding): checks that
// what the model produced under a schema really satisfies it, and says where and why it does not.
//
//   schema_violation(instance, schema)  ""  when the instance is valid, else one message naming the
//   JSON pointer of the offending instance location and the keyword, e.g.
//     instance "/items/2/name" fails "maxLength": 12 code points, at most 10 allowed
//
// Covered keywords: type (a name or an array of names; "integer" is a number without a fraction,
// 1.0 included), enum, const, properties, patternProperties, required, additionalProperties (false
// or a schema), items (a schema; an array means the older tuple form, with additionalItems),
// prefixItems (2020-12: items then applies to the rest), minItems, maxItems, anyOf, oneOf (exactly
// one), allOf, $ref ("#", "#/$defs/...", "#/definitions/...", any "#/<pointer>"; siblings of $ref
// apply too, as in 2020-12), nullable (OpenAPI: true also allows null, whatever else the schema
// says), minLength/maxLength (in code points), pattern (std::regex, ECMAScript, unanchored search
// over the UTF-8 bytes: fine for ASCII patterns), format date / time / date-time / uuid / email,
// minimum/maximum, exclusiveMinimum/exclusiveMaximum as numbers (draft 6+) or as booleans that make
// minimum/maximum exclusive (draft 4), multipleOf (in long double, to a relative 1e-9). Boolean schemas: true accepts anything, false nothing.
// Every other keyword (description, title, default, examples, $schema, strict, ...) is ignored, as
// are unknown formats. Nesting deeper than kMaxDepth subschemas (a $ref loop) is reported, not
// followed. A malformed schema yields a message, never an exception.
#pragma once

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <regex>
#include <string>
#include <unordered_map>

namespace test_support {
namespace schema_check_detail {

using json = nlohmann::json;

inline constexpr int kMaxDepth = 64;

// ---- small helpers ----

// One reference token of a JSON pointer (RFC 6901): "~" -> "~0", "/" -> "~1".
inline std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  }
  return out;
}

inline std::string fail(const std::string& ptr, const std::string& keyword,
                        const std::string& why) {
  return "instance \"" + ptr + "\" fails \"" + keyword + "\": " + why;
}

// The value as text for messages, cut short when long.
inline std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) {
    s.resize(57);
    s += "...";
  }
  return s;
}

// The member `key` of a schema object when it has the given JSON type, else nullptr.
inline const json* member(const json& schema, const char* key, json::value_t type) {
  auto it = schema.find(key);
  if (it == schema.end()) return nullptr;
  bool number = type == json::value_t::number_float;  // any number will do
  return (number ? it->is_number() : it->type() == type) ? &*it : nullptr;
}

inline const json* array_member(const json& s, const char* k) {
  return member(s, k, json::value_t::array);
}
inline const json* number_member(const json& s, const char* k) {
  return member(s, k, json::value_t::number_float);
}
inline bool flag(const json& s, const char* key) {
  const json* f = member(s, key, json::value_t::boolean);
  return f && f->get<bool>();
}

inline std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

inline long double as_number(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<std::int64_t>());
  return static_cast<long double>(v.get<double>());
}

inline bool is_integer_value(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

// Whether the value is of the named JSON Schema type ("integer": a number with no fraction).
inline bool has_type(const json& v, const std::string& t) {
  if (t == "integer") return is_integer_value(v);
  return t == "number" ? v.is_number() : !v.is_number() && t == v.type_name();
}

inline std::string type_of(const json& v) {
  if (v.is_number()) return is_integer_value(v) ? "integer" : "number";
  return v.type_name();
}

// ---- formats ----

inline bool valid_date(const std::string& s) {
  static const std::regex re(R"((\d{4})-(\d{2})-(\d{2}))");
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  std::smatch m;
  if (!std::regex_match(s, m, re)) return false;
  int y = std::stoi(m[1]), mon = std::stoi(m[2]), d = std::stoi(m[3]);
  if (mon < 1 || mon > 12) return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d >= 1 && d <= days[mon - 1] + (mon == 2 && leap);
}

// HH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]; seconds up to 60 (a leap second, as RFC 3339 allows).
inline bool valid_time(const std::string& s) {
  static const std::regex re(R"((\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))?)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return false;
  auto at_most = [&m](int i, int hi) { return !m[i].matched || std::stoi(m[i]) <= hi; };
  return at_most(1, 23) && at_most(2, 59) && at_most(3, 60) && at_most(6, 23) && at_most(7, 59);
}

inline bool valid_date_time(const std::string& s) {
  return s.size() > 11 && s[10] == 'T' && valid_date(s.substr(0, 10)) && valid_time(s.substr(11));
}

inline bool valid_uuid(const std::string& s) {
  static const std::regex re("[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}");
  return std::regex_match(s, re);
}

// local@domain.tld: no whitespace or control characters, one "@", a dot inside the domain.
inline bool valid_email(const std::string& s) {
  for (unsigned char c : s) {
    if (c <= ' ' || c == 0x7F) return false;
  }
  std::size_t at = s.find('@');
  if (at == std::string::npos || at == 0 || s.find('@', at + 1) != std::string::npos) return false;
  std::string domain = s.substr(at + 1);
  std::size_t dot = domain.find('.');
  return dot != std::string::npos && dot > 0 && domain.back() != '.';
}

// Unknown formats are not checked (true).
inline bool format_ok(const std::string& format, const std::string& s) {
  if (format == "date") return valid_date(s);
  if (format == "time") return valid_time(s);
  if (format == "date-time") return valid_date_time(s);
  if (format == "uuid") return valid_uuid(s);
  if (format == "email") return valid_email(s);
  return true;
}

// ---- $ref ----

// The subschema a local reference ("#" or "#/<pointer>") names within `root`, or nullptr.
inline const json* resolve_ref(const json& root, const std::string& ref) {
  if (ref == "#") return &root;
  if (ref.rfind("#/", 0) != 0) return nullptr;
  try {
    json::json_pointer ptr(ref.substr(1));
    return root.contains(ptr) ? &root.at(ptr) : nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
}

// std::regex compiled once per pattern (per thread); nullptr when the pattern does not compile.
inline const std::regex* compiled(const std::string& pattern) {
  thread_local std::unordered_map<std::string, std::unique_ptr<std::regex>> cache;
  auto it = cache.find(pattern);
  if (it != cache.end()) return it->second.get();
  std::unique_ptr<std::regex> re;
  try {
    re = std::make_unique<std::regex>(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error&) {
  }
  return cache.emplace(pattern, std::move(re)).first->second.get();
}

// ---- the checker ----

class Checker {
 public:
  explicit Checker(const json& root) : root_(root) {}

  std::string check(const json& inst, const json& s, const std::string& ptr, int depth) const {
    if (depth > kMaxDepth) {
      return fail(ptr, "$ref", "nesting deeper than " + std::to_string(kMaxDepth) + " subschemas");
    }
    if (s.is_boolean()) return s.get<bool>() ? "" : fail(ptr, "false", "the schema allows nothing");
    if (!s.is_object()) return "";
    if (inst.is_null() && flag(s, "nullable")) return "";
    for (auto part : {&Checker::check_type, &Checker::check_values, &Checker::check_number,
                      &Checker::check_string, &Checker::check_array, &Checker::check_object,
                      &Checker::check_combined, &Checker::check_ref}) {
      std::string err = (this->*part)(inst, s, ptr, depth);
      if (!err.empty()) return err;
    }
    return "";
  }

 private:
  const json& root_;

  std::string check_type(const json& inst, const json& s, const std::string& ptr, int) const {
    auto it = s.find("type");
    if (it == s.end()) return "";
    if (it->is_string() && !has_type(inst, it->get<std::string>())) {
      return fail(ptr, "type", "expected " + it->get<std::string>() + ", got " + type_of(inst));
    }
    if (!it->is_array()) return "";
    for (const json& t : *it) {
      if (t.is_string() && has_type(inst, t.get<std::string>())) return "";
    }
    return fail(ptr, "type", "expected one of " + shown(*it) + ", got " + type_of(inst));
  }

  std::string check_values(const json& inst, const json& s, const std::string& ptr, int) const {
    if (const json* e = array_member(s, "enum")) {
      bool found = false;
      for (const json& v : *e) found = found || v == inst;
      if (!found) return fail(ptr, "enum", shown(inst) + " is not one of " + shown(*e));
    }
    auto c = s.find("const");
    if (c != s.end() && *c != inst) return fail(ptr, "const", shown(inst) + " is not " + shown(*c));
    return "";
  }

  // minimum/maximum (exclusive in draft 4 when exclusiveMinimum/exclusiveMaximum is true) and the
  // draft-6 numeric exclusiveMinimum/exclusiveMaximum.
  std::string check_number(const json& inst, const json& s, const std::string& ptr, int) const {
    if (!inst.is_number()) return "";
    struct Bound {
      const char* key;
      bool upper, exclusive;
    };
    for (Bound b : {Bound{"minimum", false, flag(s, "exclusiveMinimum")},
                    Bound{"maximum", true, flag(s, "exclusiveMaximum")},
                    Bound{"exclusiveMinimum", false, true},
                    Bound{"exclusiveMaximum", true, true}}) {
      const json* m = number_member(s, b.key);
      if (!m) continue;
      long double x = as_number(inst), y = as_number(*m);
      if (b.upper ? (b.exclusive ? x < y : x <= y) : (b.exclusive ? x > y : x >= y)) continue;
      std::string op = std::string(b.upper ? "<" : ">") + (b.exclusive ? "" : "=");
      return fail(ptr, b.key, shown(inst) + " is not " + op + " " + shown(*m));
    }
    if (const json* m = number_member(s, "multipleOf"); m && as_number(*m) > 0) {
      const long double q = as_number(inst) / as_number(*m);
      if (std::fabs(q - std::round(q)) > 1e-9L * std::max(1.0L, std::fabs(q))) {
        return fail(ptr, "multipleOf", shown(inst) + " is not a multiple of " + shown(*m));
      }
    }
    return "";
  }

  std::string check_string(const json& inst, const json& s, const std::string& ptr, int) const {
    if (!inst.is_string()) return "";
    const std::string& str = inst.get_ref<const std::string&>();
    std::size_t n = code_points(str);
    if (const json* m = number_member(s, "minLength"); m && n < as_number(*m)) {
      return fail(ptr, "minLength", std::to_string(n) + " code points, " + shown(*m) + " needed");
    }
    if (const json* m = number_member(s, "maxLength"); m && n > as_number(*m)) {
      return fail(ptr, "maxLength", std::to_string(n) + " code points, " + shown(*m) + " allowed");
    }
    if (const json* p = member(s, "pattern", json::value_t::string)) {
      std::string err = pattern_error(str, p->get<std::string>());
      if (!err.empty()) return fail(ptr, "pattern", err);
    }
    if (const json* f = member(s, "format", json::value_t::string)) {
      if (!format_ok(f->get<std::string>(), str)) {
        return fail(ptr, "format", shown(inst) + " is not a valid " + f->get<std::string>());
      }
    }
    return "";
  }

  static std::string pattern_error(const std::string& str, const std::string& pattern) {
    const std::regex* re = compiled(pattern);
    if (!re) return "pattern " + shown(json(pattern)) + " does not compile";
    try {
      if (std::regex_search(str, *re)) return "";
    } catch (const std::regex_error&) {
      return "regex engine gave up on " + shown(json(str));
    }
    return shown(json(str)) + " does not match " + shown(json(pattern));
  }

  std::string check_array(const json& inst, const json& s, const std::string& ptr,
                          int depth) const {
    if (!inst.is_array()) return "";
    std::size_t n = inst.size();
    if (const json* m = number_member(s, "minItems"); m && n < as_number(*m)) {
      return fail(ptr, "minItems", std::to_string(n) + " items, at least " + shown(*m) + " needed");
    }
    if (const json* m = number_member(s, "maxItems"); m && n > as_number(*m)) {
      return fail(ptr, "maxItems", std::to_string(n) + " items, at most " + shown(*m) + " allowed");
    }
    // The tuple part (prefixItems, or items as an array) and the schema for the items after it.
    const json* prefix = array_member(s, "prefixItems");
    auto items = s.find("items");
    const json* rest = items != s.end() ? &*items : nullptr;
    if (!prefix && rest && rest->is_array()) {
      prefix = rest;
      auto extra = s.find("additionalItems");
      rest = extra != s.end() ? &*extra : nullptr;
    }
    std::size_t fixed = prefix ? prefix->size() : 0;
    for (std::size_t i = 0; i < n; ++i) {
      const json* sub = i < fixed ? &(*prefix)[i] : rest;
      if (!sub) continue;
      std::string at = ptr + "/" + std::to_string(i);
      if (i >= fixed && sub->is_boolean() && !sub->get<bool>()) {
        return fail(at, "items", "no items allowed after the first " + std::to_string(fixed));
      }
      std::string err = check(inst[i], *sub, at, depth + 1);
      if (!err.empty()) return err;
    }
    return "";
  }

  std::string check_object(const json& inst, const json& s, const std::string& ptr,
                           int depth) const {
    if (!inst.is_object()) return "";
    if (const json* req = array_member(s, "required")) {
      for (const json& name : *req) {
        if (name.is_string() && !inst.contains(name.get<std::string>())) {
          return fail(ptr, "required", "missing property " + shown(name));
        }
      }
    }
    for (const auto& [key, value] : inst.items()) {
      std::string err = check_property(key, value, s, ptr + "/" + pointer_token(key), depth);
      if (!err.empty()) return err;
    }
    return "";
  }

  // One member of an object: its properties schema, any matching patternProperties, else
  // additionalProperties.
  std::string check_property(const std::string& key, const json& value, const json& s,
                             const std::string& at, int depth) const {
    bool matched = false;
    std::string err;
    if (const json* props = member(s, "properties", json::value_t::object)) {
      auto it = props->find(key);
      if (it != props->end()) {
        matched = true;
        err = check(value, *it, at, depth + 1);
      }
    }
    if (const json* pats = member(s, "patternProperties", json::value_t::object)) {
      for (auto it = pats->begin(); err.empty() && it != pats->end(); ++it) {
        const std::regex* re = compiled(it.key());
        if (!re || !std::regex_search(key, *re)) continue;
        matched = true;
        err = check(value, it.value(), at, depth + 1);
      }
    }
    auto extra = s.find("additionalProperties");
    if (!err.empty() || matched || extra == s.end()) return err;
    if (extra->is_boolean() && !extra->get<bool>()) {
      return fail(at, "additionalProperties", "property " + shown(json(key)) + " is not allowed");
    }
    return check(value, *extra, at, depth + 1);
  }

  std::string check_combined(const json& inst, const json& s, const std::string& ptr,
                             int depth) const {
    if (const json* all = array_member(s, "allOf")) {
      for (const json& sub : *all) {
        std::string err = check(inst, sub, ptr, depth + 1);
        if (!err.empty()) return err;
      }
    }
    if (const json* any = array_member(s, "anyOf")) {
      std::string why;
      if (count_matches(inst, *any, ptr, depth, why) == 0) {
        return fail(ptr, "anyOf", "no branch matches (" + why + ")");
      }
    }
    if (const json* one = array_member(s, "oneOf")) {
      std::string why;
      int n = count_matches(inst, *one, ptr, depth, why);
      if (n == 0) return fail(ptr, "oneOf", "no branch matches (" + why + ")");
      if (n > 1) return fail(ptr, "oneOf", std::to_string(n) + " branches match, exactly one must");
    }
    return "";
  }

  // How many of the branches the instance satisfies; `why` collects the failures, one a branch.
  int count_matches(const json& inst, const json& branches, const std::string& ptr, int depth,
                    std::string& why) const {
    int n = 0;
    for (std::size_t i = 0; i < branches.size(); ++i) {
      std::string err = check(inst, branches[i], ptr, depth + 1);
      if (err.empty()) {
        ++n;
      } else {
        why += (why.empty() ? "" : "; ") + ("branch " + std::to_string(i) + ": " + err);
      }
    }
    return n;
  }

  std::string check_ref(const json& inst, const json& s, const std::string& ptr, int depth) const {
    const json* ref = member(s, "$ref", json::value_t::string);
    if (!ref) return "";
    const json* target = resolve_ref(root_, ref->get<std::string>());
    if (!target) return fail(ptr, "$ref", "cannot resolve " + shown(*ref));
    return check(inst, *target, ptr, depth + 1);
  }
};

}  // namespace schema_check_detail

// "" when `instance` satisfies `schema`, else where and why it does not (see the top of the file).
inline std::string schema_violation(const nlohmann::json& instance, const nlohmann::json& schema) {
  try {
    return schema_check_detail::Checker(schema).check(instance, schema, "", 0);
  } catch (const std::exception& e) {
    return schema_check_detail::fail("", "schema", std::string("cannot be applied: ") + e.what());
  }
}

}  // namespace test_support
