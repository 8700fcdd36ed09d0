// Random JSON Schemas for property tests of structured output (constrained decoding): varied,
// always satisfiable schemas from the subset that tests/support/json_schema_check.h validates, and
// random instances that satisfy them.
//
//   random_schema(rng, max_depth)    a schema nesting objects/arrays/anyOf at most max_depth deep:
//       objects (1-5 properties, names with unicode and characters JSON must escape, a random
//       required subset, sometimes additionalProperties false); arrays (items, or prefixItems with
//       items false / a schema / absent; small minItems/maxItems); strings (minLength/maxLength
//       <= 20, enum, const, format date/time/date-time/uuid/email, a few simple patterns, a format
//       or pattern with length bounds its examples meet); integers and numbers with
//       inclusive/exclusive bounds (draft 6, now and then draft 4), narrow ones such as (0, 1e-9),
//       and multipleOf (5, 7, 0.25, ...), alone or within bounds, never an empty range; booleans; null; type arrays like ["string","null"]; anyOf of two
//       schemas; nullable: true; $defs/definitions with $ref; recursive tree nodes ("children" is
//       an optional array of nodes, at most 1-3 of them) referenced as "#/$defs/node" or "#".
//   example_instance(schema, rng)    a random instance of a schema random_schema made.
//
// Both are deterministic for a given rng state.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/support/json_schema_check.h"

namespace test_support {
namespace schema_gen_detail {

using json = nlohmann::json;
using Strings = std::vector<std::string>;

inline int uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
inline bool chance(std::mt19937& rng, double p) { return std::bernoulli_distribution(p)(rng); }
template <class T>
const T& pick(std::mt19937& rng, const std::vector<T>& v) {
  return v[uniform(rng, 0, static_cast<int>(v.size()) - 1)];
}

// n distinct entries of `pool`, in random order.
inline Strings sample(std::mt19937& rng, Strings pool, int n) {
  std::shuffle(pool.begin(), pool.end(), rng);
  pool.resize(std::min<std::size_t>(pool.size(), n));
  return pool;
}

inline const Strings& property_names() {
  static const Strings names = {"id", "name", "age", "value", "tags", "x", "camelCase",
                                "snake_case", "with space", "quote\"d", "back\\slash", "slash/key",
                                "tilde~key", "tab\tkey", "new\nline", "ctl\x01", "ünïcödé",
                                "日本語", "emoji😀", "ключ", "$dollar", "a.b", "-dash"};
  return names;
}

inline const Strings& string_values() {
  static const Strings values = {"red", "green", "blue", "a b", "say \"hi\"", "back\\slash",
                                 "naïve", "日本", "😀", "", "line\nbreak", "tab\t", "null", "123",
                                 "true", "a/b~c", "{\"json\"}"};
  return values;
}

// Patterns the generator uses, each with strings that match it.
struct Pattern {
  std::string regex;
  Strings examples;
};

// The shortest and longest example of a pattern or format, in characters (random_format below).
struct Lengths {
  int lo, hi;
};
inline Lengths example_lengths(const Strings& examples) {
  Lengths l{1 << 30, 0};
  for (const std::string& e : examples) {
    l.lo = std::min(l.lo, static_cast<int>(e.size()));
    l.hi = std::max(l.hi, static_cast<int>(e.size()));
  }
  return l;
}
inline Lengths format_lengths(const std::string& format) {
  if (format == "date") return {10, 10};
  if (format == "time") return {9, 21};
  if (format == "date-time") return {20, 32};
  if (format == "email") return {10, 21};
  return {36, 36};  // uuid
}
inline const std::vector<Pattern>& patterns() {
  static const std::vector<Pattern> list = {
      {"^[a-z]{2,5}$", {"ab", "xyz", "hello"}},
      {"^\\d{3}-\\d{4}$", {"555-1234", "000-0000", "987-6543"}},
      {"^[A-Z][a-z]+$", {"Alice", "Bob", "Zed"}},
      {"^(yes|no|maybe)$", {"yes", "no", "maybe"}},
      {"^[0-9a-f]{8}$", {"deadbeef", "01234567", "a1b2c3d4"}},
      {"^[A-Z]{3}-[0-9]{2}$", {"ABC-12", "XYZ-00", "QRS-99"}},
      {"^v\\d+\\.\\d+$", {"v1.0", "v10.25", "v0.1"}}};
  return list;
}

inline const Strings kFormats = {"date", "time", "date-time", "uuid", "email"};

// ---- schemas ----

class Gen {
 public:
  explicit Gen(std::mt19937& rng) : rng_(rng) {}

  std::vector<std::string> refs;  // "$ref" targets a subschema may use (defined, acyclic)

  json any(int depth) {
    if (!refs.empty() && chance(rng_, 0.15)) return {{"$ref", pick(rng_, refs)}};
    if (depth <= 0) return primitive();
    switch (uniform(rng_, 0, 9)) {
      case 0: case 1: case 2: return object(depth);
      case 3: case 4: return array(depth);
      case 5: return type_array();
      case 6: return any_of(depth);
      default: return primitive();
    }
  }

  json object(int depth) {
    json props = json::object(), required = json::array();
    for (const std::string& name : sample(rng_, property_names(), uniform(rng_, 1, 5))) {
      props[name] = any(depth - 1);
      if (chance(rng_, 0.6)) required.push_back(name);
    }
    json s = {{"type", "object"}, {"properties", props}};
    if (!required.empty()) s["required"] = required;
    if (chance(rng_, 0.5)) s["additionalProperties"] = false;
    return decorate(s);
  }

  json array(int depth) {
    json s = {{"type", "array"}};
    if (chance(rng_, 0.3)) return tuple(depth, s);
    s["items"] = any(depth - 1);
    int lo = uniform(rng_, 0, 2), hi = lo + uniform(rng_, 0, 3);
    if (chance(rng_, 0.5)) s["minItems"] = lo;
    if (chance(rng_, 0.5)) s["maxItems"] = hi;
    return decorate(s);
  }

  json primitive() {
    switch (uniform(rng_, 0, 7)) {
      case 0: case 1: case 2: return decorate(string_schema());
      case 3: return decorate(integer_schema());
      case 4: return decorate(number_schema());
      case 5: return decorate({{"type", "boolean"}});
      case 6: return {{"type", "null"}};
      default: return decorate(integer_schema());
    }
  }

 private:
  std::mt19937& rng_;

  // prefixItems, then items false (closed), a schema, or nothing (anything goes after the prefix).
  json tuple(int depth, json s) {
    int k = uniform(rng_, 1, 3);
    json prefix = json::array();
    for (int i = 0; i < k; ++i) prefix.push_back(any(depth - 1));
    s["prefixItems"] = prefix;
    int lo = uniform(rng_, 0, k);
    bool closed = chance(rng_, 0.5);
    if (closed) s["items"] = false;
    else if (chance(rng_, 0.5)) s["items"] = any(depth - 1);
    if (chance(rng_, 0.5)) s["minItems"] = lo;
    if (chance(rng_, 0.5)) s["maxItems"] = closed ? uniform(rng_, lo, k) : lo + uniform(rng_, 0, 3);
    return decorate(s);
  }

  json string_schema() {
    json s = {{"type", "string"}};
    switch (uniform(rng_, 0, 6)) {
      case 0: {
        int lo = uniform(rng_, 0, 5), hi = lo + uniform(rng_, 0, 15);
        if (chance(rng_, 0.6)) s["minLength"] = lo;
        if (chance(rng_, 0.6)) s["maxLength"] = hi;
        break;
      }
      case 1: s["enum"] = sample(rng_, string_values(), uniform(rng_, 1, 4)); break;
      case 2: s["const"] = pick(rng_, string_values()); break;
      case 3: s["format"] = pick(rng_, kFormats); break;
      case 4: s["pattern"] = pick(rng_, patterns()).regex; break;
      case 5: {  // a format or pattern with length bounds that every example meets
        Lengths l{0, 0};
        if (chance(rng_, 0.5)) {
          s["format"] = pick(rng_, kFormats);
          l = format_lengths(s["format"]);
        } else {
          const Pattern& p = pick(rng_, patterns());
          s["pattern"] = p.regex;
          l = example_lengths(p.examples);
        }
        if (chance(rng_, 0.6)) s["minLength"] = uniform(rng_, 0, l.lo);
        if (!s.contains("minLength") || chance(rng_, 0.6)) s["maxLength"] = l.hi + uniform(rng_, 0, 3);
        break;
      }
      default: break;
    }
    if ((s.contains("enum") || s.contains("const")) && chance(rng_, 0.4)) s.erase("type");
    return s;
  }

  // Integer bounds leave at least one integer: an exclusive bound is at least 1 (2 when both are
  // exclusive) away from the other.
  json integer_schema() {
    json s = {{"type", "integer"}};
    int lo = uniform(rng_, -100, 100), gap = uniform(rng_, 0, 60);
    switch (uniform(rng_, 0, 6)) {
      case 0: break;
      case 1: s["minimum"] = lo; break;
      case 2: s["maximum"] = lo; break;
      case 3: s["minimum"] = lo, s["maximum"] = lo + gap; break;
      case 4: s["exclusiveMinimum"] = lo, s["exclusiveMaximum"] = lo + std::max(gap, 2); break;
      case 5: s["minimum"] = lo, s["exclusiveMaximum"] = lo + std::max(gap, 1); break;
      default:  // draft 4
        s["minimum"] = lo, s["exclusiveMinimum"] = true, s["maximum"] = lo + std::max(gap, 1);
    }
    if (chance(rng_, 0.25)) {  // a multipleOf, with room for one of its multiples within bounds
      const int m = pick(rng_, std::vector<int>{2, 3, 5, 7, 10, 25});
      s["multipleOf"] = m;
      if (s.contains("maximum")) s["maximum"] = s["maximum"].get<int>() + m;
      if (s.contains("exclusiveMaximum")) s["exclusiveMaximum"] = s["exclusiveMaximum"].get<int>() + m;
    }
    return s;
  }

  // Number bounds in quarters (exact in binary), fractional and negative too; ranges never empty.
  json number_schema() {
    json s = {{"type", "number"}};
    double lo = uniform(rng_, -400, 400) / 4.0, hi = lo + uniform(rng_, 1, 400) / 4.0;
    if (chance(rng_, 0.1)) {  // very narrow, next to zero
      s["exclusiveMinimum"] = 0, s["exclusiveMaximum"] = 1e-9;
      return s;
    }
    if (chance(rng_, 0.2)) {  // a multipleOf exact in binary, with room for one of its multiples
      const double m = pick(rng_, std::vector<double>{0.25, 0.5, 5});
      s["multipleOf"] = m;
      hi = lo + m * uniform(rng_, 2, 20);
    }
    switch (uniform(rng_, 0, 5)) {
      case 0: break;
      case 1: s["minimum"] = lo; break;
      case 2: s["exclusiveMaximum"] = hi; break;
      case 3: s["minimum"] = lo, s["maximum"] = hi; break;
      case 4: s["exclusiveMinimum"] = lo, s["exclusiveMaximum"] = hi; break;
      default: s["maximum"] = hi, s["exclusiveMaximum"] = true; break;  // draft 4
    }
    return s;
  }

  json type_array() {
    Strings all = {"string", "integer", "number", "boolean", "null"};
    Strings types = sample(rng_, all, uniform(rng_, 2, 3));
    json s = {{"type", types}};
    auto has = [&types](const char* t) { return std::count(types.begin(), types.end(), t) > 0; };
    if (has("string") && chance(rng_, 0.4)) s["maxLength"] = uniform(rng_, 0, 20);
    if ((has("integer") || has("number")) && chance(rng_, 0.4)) s["minimum"] = 0;
    return s;
  }

  json any_of(int depth) {
    json branches = json::array();
    for (int i = 0; i < 2; ++i) {
      branches.push_back(chance(rng_, 0.5) ? object(depth - 1) : primitive());
    }
    return {{"anyOf", branches}};
  }

  // Now and then nullable: true, a description or a title (which validators ignore).
  json decorate(json s) {
    if (chance(rng_, 0.1)) s["nullable"] = true;
    if (chance(rng_, 0.1)) s["description"] = "a \"described\" value";
    if (chance(rng_, 0.05)) s["title"] = "Title";
    return s;
  }
};

// A tree node: a value and optional children (1-3 at most), each a node again (`self`).
inline json tree_node(Gen& gen, std::mt19937& rng, const std::string& self) {
  json children = {
      {"type", "array"}, {"items", {{"$ref", self}}}, {"maxItems", uniform(rng, 1, 3)}};
  return {{"type", "object"},
          {"properties", {{"value", gen.primitive()}, {"children", children}}},
          {"required", {"value"}},
          {"additionalProperties", false}};
}

// Definitions under $defs or definitions (each may use the earlier ones), used by the body.
inline json with_defs(Gen& gen, std::mt19937& rng, int max_depth) {
  std::string where = chance(rng, 0.7) ? "$defs" : "definitions";
  json defs = json::object();
  for (const std::string& name : sample(rng, {"Address", "Item", "Color", "Point", "Entry"},
                                        uniform(rng, 1, 3))) {
    defs[name] = gen.any(max_depth - 1);
    gen.refs.push_back("#/" + where + "/" + name);
  }
  json body;
  if (chance(rng, 0.3)) {
    body = {{"$ref", gen.refs.front()}};
  } else {
    body = gen.object(max_depth);
    body["properties"]["linked"] = {{"$ref", pick(rng, gen.refs)}};
  }
  body[where] = defs;
  return body;
}

inline json random_tree(Gen& gen, std::mt19937& rng) {
  if (chance(rng, 0.4)) return tree_node(gen, rng, "#");
  json root = chance(rng, 0.5) ? json{{"$ref", "#/$defs/node"}}
                               : json{{"type", "object"},
                                      {"properties", {{"root", {{"$ref", "#/$defs/node"}}}}},
                                      {"required", {"root"}}};
  root["$defs"] = {{"node", tree_node(gen, rng, "#/$defs/node")}};
  return root;
}

// ---- instances ----

inline std::string two(int v) { return (v < 10 ? "0" : "") + std::to_string(v); }

inline std::string random_format(std::mt19937& rng, const std::string& format) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y = uniform(rng, 1970, 2099), mon = uniform(rng, 1, 12);
  int leap = mon == 2 && y % 4 == 0;
  std::string date = std::to_string(y) + "-" + two(mon) + "-" +
                     two(uniform(rng, 1, days[mon - 1] + leap));
  std::string time = two(uniform(rng, 0, 23)) + ":" + two(uniform(rng, 0, 59)) + ":" +
                     two(uniform(rng, 0, 59)) + pick(rng, Strings{"", ".5", ".123456"}) +
                     pick(rng, Strings{"Z", "+05:30", "-08:00"});  // RFC 3339: the offset is required
  if (format == "date") return date;
  if (format == "time") return time;
  if (format == "date-time") return date + "T" + time;
  if (format == "email") {
    return pick(rng, Strings{"alice", "bob.smith", "x_y+tag"}) + "@" +
           pick(rng, Strings{"example.com", "mail.co.uk", "a.io"});
  }
  std::string uuid;
  for (int i = 0; i < 36; ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    uuid += dash ? '-' : "0123456789abcdef"[uniform(rng, 0, 15)];
  }
  return uuid;
}

class Example {
 public:
  Example(const json& root, std::mt19937& rng) : root_(root), rng_(rng) {}

  json make(const json& s, int depth) {
    if (!s.is_object()) return nullptr;
    if (s.contains("$ref")) {
      const json* target = schema_check_detail::resolve_ref(root_, s["$ref"].get<std::string>());
      return target ? make(*target, depth + 1) : json(nullptr);
    }
    if (s.contains("const")) return s["const"];
    if (s.contains("enum")) return pick(rng_, s["enum"].get<std::vector<json>>());
    if (s.contains("anyOf")) {
      return make(pick(rng_, s["anyOf"].get<std::vector<json>>()), depth + 1);
    }
    if (s.value("nullable", false) && chance(rng_, 0.2)) return nullptr;
    const json& t = s.contains("type") ? s["type"] : json("null");
    std::string type = t.is_array() ? pick(rng_, t.get<Strings>()) : t.get<std::string>();
    if (type == "object") return object(s, depth);
    if (type == "array") return array(s, depth);
    if (type == "string") return string(s);
    if (type == "integer") return integer(s);
    if (type == "number") return number(s);
    if (type == "boolean") return chance(rng_, 0.5);
    return nullptr;
  }

 private:
  const json& root_;
  std::mt19937& rng_;
  static constexpr int kDeep = 9;  // past this, only what is required (trees end)

  json object(const json& s, int depth) {
    json out = json::object();
    json required = s.value("required", json::array());
    json props = s.value("properties", json::object());
    for (const auto& [name, sub] : props.items()) {
      bool needed = std::find(required.begin(), required.end(), name) != required.end();
      if (needed || (depth < kDeep && chance(rng_, 0.6))) out[name] = make(sub, depth + 1);
    }
    return out;
  }

  json array(const json& s, int depth) {
    json prefix = s.value("prefixItems", json::array());
    json rest = s.value("items", json(true));
    int lo = s.value("minItems", 0), hi = s.value("maxItems", lo + 3);
    if (rest == json(false)) hi = std::min(hi, static_cast<int>(prefix.size()));
    int n = depth < kDeep ? uniform(rng_, lo, std::max(lo, hi)) : lo;
    json out = json::array();
    for (int i = 0; i < n; ++i) {
      const json& sub = i < static_cast<int>(prefix.size()) ? prefix[i] : rest;
      out.push_back(sub.is_object() ? make(sub, depth + 1) : json(i));
    }
    return out;
  }

  json string(const json& s) {
    if (s.contains("format")) return random_format(rng_, s["format"].get<std::string>());
    if (s.contains("pattern")) {
      for (const Pattern& p : patterns()) {
        if (p.regex == s["pattern"].get<std::string>()) return pick(rng_, p.examples);
      }
    }
    static const Strings chars = {"a", "Z", "0", " ",  "\"", "\\",
                                  "\n", "\t", "/", "é", "日", "😀"};
    int lo = s.value("minLength", 0), hi = s.value("maxLength", lo + 8);
    std::string out;
    for (int n = uniform(rng_, lo, hi); n > 0; --n) out += pick(rng_, chars);
    return out;
  }

  // The bounds of a numeric schema (draft 4 and 6 alike); 100 wide past a lone bound, else
  // [-1000, 1000].
  struct Range {
    double lo = -1000, hi = 1000;
    bool lo_open = false, hi_open = false;
  };
  static Range range(const json& s) {
    using schema_check_detail::flag, schema_check_detail::number_member;
    Range r;
    const json *lo = number_member(s, "minimum"), *hi = number_member(s, "maximum");
    r.lo_open = flag(s, "exclusiveMinimum"), r.hi_open = flag(s, "exclusiveMaximum");
    if (const json* m = number_member(s, "exclusiveMinimum")) lo = m, r.lo_open = true;
    if (const json* m = number_member(s, "exclusiveMaximum")) hi = m, r.hi_open = true;
    if (lo) r.lo = lo->get<double>(), r.hi = r.lo + 100;
    if (hi) r.hi = hi->get<double>(), r.lo = lo ? r.lo : r.hi - 100;
    return r;
  }

  json integer(const json& s) {
    Range r = range(s);
    int lo = static_cast<int>(r.lo_open ? std::floor(r.lo) + 1 : std::ceil(r.lo));
    int hi = static_cast<int>(r.hi_open ? std::ceil(r.hi) - 1 : std::floor(r.hi));
    if (s.contains("multipleOf")) {  // a multiple within [lo, hi] (the generator leaves room for one)
      const int m = s["multipleOf"].get<int>();
      const int first = static_cast<int>(std::ceil(lo / static_cast<double>(m))) * m;
      const int count = first > hi ? 0 : (hi - first) / m;
      return first + m * uniform(rng_, 0, count);
    }
    return uniform(rng_, lo, std::max(lo, hi));
  }

  // A multiple of 1/8 past the lower bound (exact in binary), inside the range; of multipleOf when
  // there is one; inside (0, 1e-9), a binary fraction.
  json number(const json& s) {
    Range r = range(s);
    if (r.hi <= 1e-9 && r.lo == 0) return std::ldexp(1.0, -uniform(rng_, 31, 60));
    if (s.contains("multipleOf")) {
      const double m = s["multipleOf"].get<double>();
      const double first = (std::floor(r.lo / m) + 1) * m;  // past lo, so never on an open bound
      const int count = static_cast<int>(std::floor((r.hi - first) / m)) - 1;
      return first + m * uniform(rng_, 0, std::max(0, count));
    }
    int steps = static_cast<int>(std::floor((r.hi - r.lo) * 8));
    int first = r.lo_open ? 1 : 0;
    int last = r.hi_open && r.lo + steps / 8.0 >= r.hi ? steps - 1 : steps;
    if (first > last) return (r.lo + r.hi) / 2;
    return r.lo + uniform(rng_, first, last) / 8.0;
  }
};

}  // namespace schema_gen_detail

// A random, satisfiable schema (see the top of the file).
inline nlohmann::json random_schema(std::mt19937& rng, int max_depth) {
  schema_gen_detail::Gen gen(rng);
  int kind = schema_gen_detail::uniform(rng, 0, 9);
  if (kind == 0) return schema_gen_detail::random_tree(gen, rng);
  if (kind <= 2 && max_depth > 0) return schema_gen_detail::with_defs(gen, rng, max_depth);
  if (kind <= 6 && max_depth > 0) return gen.object(max_depth);
  return gen.any(max_depth);
}

// A random instance of `schema`, which random_schema made.
inline nlohmann::json example_instance(const nlohmann::json& schema, std::mt19937& rng) {
  return schema_gen_detail::Example(schema, rng).make(schema, 0);
}

}  // namespace test_support
