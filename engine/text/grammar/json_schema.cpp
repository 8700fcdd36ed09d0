// JSON Schema -> Grammar (see json_schema.h). One rule per schema node that needs one; $refs
// become rule references, so recursive schemas are recursive rules.
#include "engine/text/grammar/json_schema.h"

#include <map>
#include <set>

#include "engine/text/grammar/intersect.h"
#include "engine/text/grammar/json_strings.h"
#include "engine/text/grammar/number_ranges.h"
#include "engine/text/grammar/regex.h"

namespace engine::grammar {

using ojson = nlohmann::ordered_json;

namespace {

constexpr int kMaxSchemaDepth = 64;

// Keywords we know and cannot enforce: refusing them beats producing output that breaks them.
const std::set<std::string> kRefused = {
    "not", "if", "then", "else", "patternProperties", "propertyNames", "minProperties", "maxProperties",
    "contains", "minContains", "maxContains", "dependentRequired", "dependentSchemas", "dependencies",
    "unevaluatedProperties", "unevaluatedItems", "additionalItems", "contentSchema"};
// Keywords that constrain values (so they cannot sit beside $ref, whose target we use alone).
const std::set<std::string> kValidation = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
    "minItems", "maxItems", "anyOf", "oneOf", "allOf", "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "nullable"};
// Products of two constraints (intersect.h): at most this many rules each, and a multipleOf of at
// most this many automaton states (its digits times its fraction digits).
constexpr size_t kMaxProductRules = 20000;
constexpr uint64_t kMaxMultipleOfStates = 4096;

class SchemaCompiler {
 public:
  SchemaCompiler(const ojson& root, GrammarBuilder& b, JsonRules& strings) : root_(root), b_(b), strings_(strings) {}

  // The schema's value as an expression over rules added to the builder.
  Expr compile() { return visit(root_, "#", 0); }

 private:
  [[noreturn]] static void fail(const std::string& at, const std::string& what) { throw GrammarError(at + ": " + what); }

  Expr visit(const ojson& s, const std::string& at, int depth) {
    if (depth > kMaxSchemaDepth) fail(at, "the schema nests deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
    if (s.is_boolean()) {
      if (s.get<bool>()) return ref(strings_.value());
      fail(at, "the schema 'false' admits no value");
    }
    if (!s.is_object()) fail(at, "a schema must be an object or a boolean");
    for (const auto& [key, _] : s.items()) {
      if (kRefused.count(key)) fail(at, "'" + key + "' is not supported for constrained output");
    }
    if (auto it = s.find("uniqueItems"); it != s.end() && *it != false) fail(at, "'uniqueItems' is not supported");
    if (auto it = s.find("$ref"); it != s.end()) {
      for (const auto& [key, _] : s.items()) {
        if (kValidation.count(key)) fail(at, "'" + key + "' beside '$ref' is not supported");
      }
      return ref(resolve(*it, at, depth));
    }
    bool nullable = false;
    if (auto it = s.find("nullable"); it != s.end()) {
      if (!it->is_boolean()) fail(at, "'nullable' must be a boolean");
      nullable = it->get<bool>();
    }
    Expr e = visit_value(s, at, depth);
    return nullable ? alt({std::move(e), lit("null")}) : e;
  }

  Expr visit_value(const ojson& s, const std::string& at, int depth) {
    if (auto it = s.find("const"); it != s.end()) return lit(it->dump(-1, ' ', false));
    if (auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) fail(at, "'enum' must be a non-empty array");
      std::vector<Expr> alts;
      for (const ojson& v : *it) alts.push_back(lit(v.dump(-1, ' ', false)));
      return alt(std::move(alts));
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (auto it = s.find(key); it != s.end()) {
        if (!it->is_array() || it->empty()) fail(at, std::string("'") + key + "' must be a non-empty array");
        std::vector<Expr> alts;
        for (size_t i = 0; i < it->size(); ++i) alts.push_back(visit((*it)[i], at + "/" + key + "/" + std::to_string(i), depth + 1));
        return alt(std::move(alts));
      }
    }
    if (auto it = s.find("allOf"); it != s.end()) return visit(merge_all_of(*it, at, depth), at, depth + 1);
    std::vector<std::string> types;
    if (auto it = s.find("type"); it != s.end()) {
      if (it->is_string()) {
        types.push_back(it->get<std::string>());
      } else if (it->is_array() && !it->empty()) {
        for (const ojson& t : *it) {
          if (!t.is_string()) fail(at, "'type' items must be strings");
          types.push_back(t.get<std::string>());
        }
      } else {
        fail(at, "'type' must be a string or a non-empty array of strings");
      }
    } else {
      types = implied_types(s);
    }
    std::vector<Expr> alts;
    for (const std::string& t : types) alts.push_back(visit_type(s, t, at, depth));
    return alt(std::move(alts));
  }

  // No "type": what the keywords present imply, or any value.
  static std::vector<std::string> implied_types(const ojson& s) {
    if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) return {"object"};
    if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems")) return {"array"};
    if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") || s.contains("format")) return {"string"};
    if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum") ||
        s.contains("multipleOf")) {
      return {"number"};
    }
    return {"any"};
  }

  Expr visit_type(const ojson& s, const std::string& t, const std::string& at, int depth) {
    if (t == "any") return ref(strings_.value());
    if (t == "null") return lit("null");
    if (t == "boolean") return alt({lit("true"), lit("false")});
    if (t == "string") return string_schema(s, at);
    if (t == "integer" || t == "number") return number_schema(s, t == "integer", at);
    if (t == "object") return object_schema(s, at, depth);
    if (t == "array") return array_schema(s, at, depth);
    fail(at, "unknown type '" + t + "'");
  }

  uint32_t resolve(const ojson& r, const std::string& at, int depth) {
    if (!r.is_string()) fail(at, "'$ref' must be a string");
    const std::string target = r.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    if (target.empty() || target[0] != '#') fail(at, "'$ref' " + target + " is not a reference into this schema");
    const ojson* node = &root_;
    try {
      if (target.size() > 1) node = &root_.at(ojson::json_pointer(target.substr(1)));
    } catch (const std::exception&) {
      fail(at, "'$ref' " + target + " does not resolve in this schema");
    }
    const uint32_t rule = b_.fresh_rule("ref");
    refs_[target] = rule;
    b_.define(rule, visit(*node, target, depth + 1));
    return rule;
  }

  // allOf of object schemas: their properties, required names and additionalProperties combined.
  ojson merge_all_of(const ojson& list, const std::string& at, int depth) {
    if (!list.is_array() || list.empty()) fail(at, "'allOf' must be a non-empty array");
    ojson merged = {{"type", "object"}, {"properties", ojson::object()}, {"required", ojson::array()}};
    for (size_t i = 0; i < list.size(); ++i) {
      const ojson* part = &list[i];
      for (int hops = 0; part->is_object() && part->contains("$ref"); ++hops) {
        if (hops > kMaxSchemaDepth) fail(at, "'allOf' follows too many '$ref's");
        const std::string target = (*part)["$ref"].is_string() ? (*part)["$ref"].get<std::string>() : "";
        try {
          part = target == "#" ? &root_ : &root_.at(ojson::json_pointer(target.substr(1)));
        } catch (const std::exception&) {
          fail(at + "/allOf/" + std::to_string(i), "'$ref' " + target + " does not resolve in this schema");
        }
      }
      const bool object = part->is_object() && (!part->contains("type") || (*part)["type"] == "object");
      if (!object) fail(at + "/allOf/" + std::to_string(i), "'allOf' is supported for object schemas only");
      for (const auto& [key, value] : part->items()) {
        if (key == "properties" && value.is_object()) {
          for (const auto& [name, prop] : value.items()) merged["properties"][name] = prop;
        } else if (key == "required" && value.is_array()) {
          for (const ojson& n : value) merged["required"].push_back(n);
        } else if (key == "additionalProperties") {
          if (!merged.contains("additionalProperties") || value == false) merged[key] = value;
        } else if (kValidation.count(key) && key != "type") {
          fail(at + "/allOf/" + std::to_string(i), "'" + key + "' inside 'allOf' is not supported");
        }
      }
    }
    (void)depth;
    return merged;
  }

  // A pattern or a format, each with length bounds or not; length bounds alone. Lengths count
  // characters as JSON Schema does (an escape is one), through the product with JsonLengthDfa.
  Expr string_schema(const ojson& s, const std::string& at) {
    const auto min_len = count(s, "minLength", at), max_len = count(s, "maxLength", at);
    const bool has_pattern = s.contains("pattern"), has_format = s.contains("format");
    if (has_pattern && has_format) fail(at, "combining 'pattern' and 'format' is not supported");
    if (max_len && min_len.value_or(0) > *max_len) fail(at, "'minLength' exceeds 'maxLength'");
    const uint32_t lo = static_cast<uint32_t>(min_len.value_or(0));
    const uint32_t hi = max_len ? static_cast<uint32_t>(*max_len) : Expr::kUnbounded;
    std::string what;
    std::optional<Expr> contents;  // without the quotes
    if (has_pattern) {
      if (!s["pattern"].is_string()) fail(at, "'pattern' must be a string");
      what = "'pattern'";
      try {
        contents = regex_to_expr(s["pattern"].get<std::string>(), true);
      } catch (const GrammarError& e) {
        fail(at, e.what());  // "pattern: ... at offset N
      }
    } else if (has_format) {
      if (!s["format"].is_string()) fail(at, "'format' must be a string");
      what = "format '" + s["format"].get<std::string>() + "'";
      contents = strings_.format(s["format"].get<std::string>());
      if (!contents) fail(at, what + " is not supported");
    } else if (min_len || max_len) {
      return ref(strings_.bounded_string(lo, hi));
    } else {
      return ref(strings_.string());
    }
    if (min_len || max_len) {
      const std::string bounds = (min_len ? "'minLength' " + std::to_string(lo) : std::string()) +
                                 (min_len && max_len ? " and " : "") +
                                 (max_len ? "'maxLength' " + std::to_string(hi) : std::string());
      try {
        contents = intersect(*contents, JsonLengthDfa(lo, hi), b_, kMaxProductRules);
      } catch (const GrammarError& e) {
        fail(at, bounds + " with " + what + ": " + e.what());
      }
      contents = explain(std::move(*contents), at + ": no string of " + what + " satisfies " + bounds);
    }
    return seq({lit("\""), std::move(*contents), lit("\"")});
  }

  std::optional<uint64_t> count(const ojson& s, const char* key, const std::string& at) {
    auto it = s.find(key);
    if (it == s.end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) fail(at, std::string("'") + key + "' must be a non-negative integer");
    if (it->get<uint64_t>() > 10000) fail(at, std::string("'") + key + "' above 10000 is not supported");
    return it->get<uint64_t>();
  }

  Expr number_schema(const ojson& s, bool integer, const std::string& at) {
    std::optional<Bound> lo, hi;
    auto number = [&](const char* key) {
      const ojson& v = s[key];
      if (!v.is_number()) fail(at, std::string("'") + key + "' must be a number");
      auto d = Decimal::parse(v.dump());
      if (!d) fail(at, std::string("'") + key + "' is out of the supported range");
      return *d;
    };
    // Draft 4: exclusiveMinimum/Maximum are booleans qualifying minimum/maximum.
    const auto flag = [&](const char* key) { return s.contains(key) && s[key].is_boolean() && s[key].get<bool>(); };
    if (s.contains("minimum")) lo = Bound{number("minimum"), flag("exclusiveMinimum")};
    if (s.contains("maximum")) hi = Bound{number("maximum"), flag("exclusiveMaximum")};
    if (s.contains("exclusiveMinimum") && !s["exclusiveMinimum"].is_boolean()) {
      lo = tighter_lower(lo, Bound{number("exclusiveMinimum"), true});
    }
    if (s.contains("exclusiveMaximum") && !s["exclusiveMaximum"].is_boolean()) hi = tighter_upper(hi, Bound{number("exclusiveMaximum"), true});
    const bool multiple = s.contains("multipleOf");
    if (!lo && !hi && !multiple) return ref(integer ? strings_.integer() : strings_.number());
    Expr e = number_in_range(lo, hi, integer);
    if (multiple) {
      const Decimal m = number("multipleOf");
      if (m.negative || m.is_zero()) fail(at, "'multipleOf' must be greater than 0");
      const auto dfa = MultipleOfDfa::make(m, kMaxMultipleOfStates);
      if (!dfa) fail(at, "'multipleOf' " + s["multipleOf"].dump() + " is not supported: enforcing it needs more than " +
                     std::to_string(kMaxMultipleOfStates) + " remainders (multiples of 5, 250 or 0.01 work)");
      try {
        e = intersect(e, *dfa, b_, kMaxProductRules);
      } catch (const GrammarError& err) {
        fail(at, "'multipleOf' " + s["multipleOf"].dump() + " within these bounds: " + err.what());
      }
    }
    std::string keywords;
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf"}) {
      if (s.contains(key)) keywords += std::string(keywords.empty() ? "" : ", ") + "'" + key + "' " + s[key].dump();
    }
    return explain(std::move(e), at + ": no " + (integer ? "integer" : "number") + " satisfies " + keywords);
  }

  // Exactly, on the digits (as doubles, bounds of 400 digits overflow and close ones compare equal).
  static std::optional<Bound> tighter_lower(const std::optional<Bound>& a, const Bound& b) {
    return !a || compare(b.value, a->value) >= 0 ? std::optional<Bound>(b) : a;
  }
  static std::optional<Bound> tighter_upper(const std::optional<Bound>& a, const Bound& b) {
    return !a || compare(b.value, a->value) <= 0 ? std::optional<Bound>(b) : a;
  }

  Expr object_schema(const ojson& s, const std::string& at, int depth);
  Expr array_schema(const ojson& s, const std::string& at, int depth);

  const ojson& root_;
  GrammarBuilder& b_;
  JsonRules& strings_;
  std::map<std::string, uint32_t> refs_;
};

// Properties in declared order. first_k: the properties from k on when none has been written yet
// (no leading comma); rest_k: the same after one has (each written one starts with ",").
Expr SchemaCompiler::object_schema(const ojson& s, const std::string& at, int depth) {
  const ojson empty_props = ojson::object();
  const auto props_it = s.find("properties");
  const ojson& props = props_it == s.end() ? empty_props : *props_it;
  if (!props.is_object()) fail(at, "'properties' must be an object");
  std::set<std::string> required;
  if (auto it = s.find("required"); it != s.end()) {
    if (!it->is_array()) fail(at, "'required' must be an array of property names");
    for (const ojson& n : *it) {
      if (!n.is_string()) fail(at, "'required' must be an array of property names");
      if (!props.contains(n.get<std::string>())) {
        fail(at, "required property '" + n.get<std::string>() + "' is not in 'properties'");
      }
      required.insert(n.get<std::string>());
    }
  }
  // Extra properties: a schema for their values, or none.
  std::optional<Expr> extra;
  const auto ap = s.find("additionalProperties");
  if (ap != s.end() && *ap != false) extra = visit(*ap, at + "/additionalProperties", depth + 1);
  if (ap == s.end() && props.empty()) extra = ref(strings_.value());  // {"type": "object"}: any object
  std::vector<std::string> names;
  std::vector<Expr> members;
  for (const auto& [name, prop] : props.items()) {
    names.push_back(name);
    members.push_back(seq({lit(ojson(name).dump(-1, ' ', false) + ":"),
                           visit(prop, at + "/properties/" + name, depth + 1)}));
  }
  Expr extra_first = empty(), extra_rest = empty();
  if (extra) {
    const uint32_t kv = b_.fresh_rule("extra-kv");
    b_.define(kv, seq({ref(strings_.key_except(names)), lit(":"), std::move(*extra)}));
    extra_rest = star(seq({lit(","), ref(kv)}));
    extra_first = opt(seq({ref(kv), star(seq({lit(","), ref(kv)}))}));
  }
  const size_t n = names.size();
  uint32_t rest = b_.fresh_rule("obj-rest"), first = b_.fresh_rule("obj-first");
  b_.define(rest, std::move(extra_rest));
  b_.define(first, std::move(extra_first));
  for (size_t k = n; k-- > 0;) {
    const uint32_t r = b_.fresh_rule("obj-rest"), f = b_.fresh_rule("obj-first");
    const bool req = required.count(names[k]) != 0;
    const uint32_t member = b_.fresh_rule("member");
    b_.define(member, std::move(members[k]));
    Expr with_comma = seq({lit(","), ref(member)});
    b_.define(r, seq({req ? std::move(with_comma) : opt(std::move(with_comma)), ref(rest)}));
    Expr here = seq({ref(member), ref(rest)});
    b_.define(f, req ? std::move(here) : alt({std::move(here), ref(first)}));
    rest = r;
    first = f;
  }
  return seq({lit("{"), ref(first), lit("}")});
}

// Items in order: prefixItems[0..m), then `items` for the rest; minItems of them mandatory.
Expr SchemaCompiler::array_schema(const ojson& s, const std::string& at, int depth) {
  std::vector<Expr> prefix;
  if (auto it = s.find("prefixItems"); it != s.end()) {
    if (!it->is_array()) fail(at, "'prefixItems' must be an array of schemas");
    for (size_t i = 0; i < it->size(); ++i) {
      const uint32_t r = b_.fresh_rule("prefix-item");
      b_.define(r, visit((*it)[i], at + "/prefixItems/" + std::to_string(i), depth + 1));
      prefix.push_back(ref(r));
    }
  }
  std::optional<Expr> item = ref(strings_.value());
  if (auto it = s.find("items"); it != s.end()) {
    if (*it == false) {
      item.reset();
    } else if (it->is_array()) {
      fail(at, "'items' as an array (draft 4 tuples) is not supported; use 'prefixItems'");
    } else {
      const uint32_t r = b_.fresh_rule("item");
      b_.define(r, visit(*it, at + "/items", depth + 1));
      item = ref(r);
    }
  }
  const uint64_t min = count(s, "minItems", at).value_or(0);
  const std::optional<uint64_t> max = count(s, "maxItems", at);
  if (max && min > *max) fail(at, "'minItems' exceeds 'maxItems'");
  const uint64_t m = prefix.size();
  if (min > m && !item) fail(at, "'minItems' exceeds the number of 'prefixItems' while 'items' is false");
  // The tail after the prefix: items with a leading comma, or without for the very first.
  const uint64_t tail_min = min > m ? min - m : 0;
  const uint64_t tail_max = !item ? 0 : (max ? (*max > m ? *max - m : 0) : Expr::kUnbounded);
  auto tail = [&](bool comma) -> Expr {
    if (tail_max == 0 || !item) return empty();
    const auto hi = static_cast<uint32_t>(tail_max == Expr::kUnbounded ? Expr::kUnbounded : tail_max);
    if (comma) return repeat(seq({lit(","), *item}), static_cast<uint32_t>(tail_min), hi);
    Expr first_and_more = seq({*item, repeat(seq({lit(","), *item}), tail_min > 0 ? static_cast<uint32_t>(tail_min - 1) : 0,
                                             hi == Expr::kUnbounded ? hi : hi - 1)});
    return tail_min > 0 ? std::move(first_and_more) : opt(std::move(first_and_more));
  };
  const uint64_t used = max ? std::min<uint64_t>(m, *max) : m;
  Expr body = tail(used > 0);
  for (uint64_t k = used; k-- > 0;) {
    Expr here = seq({k > 0 ? lit(",") : empty(), prefix[k], std::move(body)});
    body = k < min ? std::move(here) : opt(std::move(here));
  }
  return seq({lit("["), std::move(body), lit("]")});
}

}  // namespace

std::shared_ptr<const Grammar> json_schema_grammar(const ojson& schema, GrammarLimits limits) {
  GrammarBuilder b(limits);
  JsonRules rules(b);
  const uint32_t root = b.rule("root");
  b.define(root, json_schema_expr(schema, b, rules));
  return b.build(root);
}

Expr json_schema_expr(const ojson& schema, GrammarBuilder& b, JsonRules& rules) {
  return SchemaCompiler(schema, b, rules).compile();
}

std::shared_ptr<const Grammar> any_json_grammar(bool object_only) {
  GrammarBuilder b;
  JsonRules rules(b);
  const uint32_t root = b.rule("root");
  b.define(root, ref(object_only ? rules.object() : rules.value()));
  return b.build(root);
}

}  // namespace engine::grammar
