#include "engine/text/tools/tool_grammar.h"

#include <algorithm>
#include <optional>

#include "engine/text/grammar/json_schema.h"
#include "engine/text/grammar/json_strings.h"
#include "engine/text/tools/tagged_calls.h"

namespace engine::tools {

using namespace engine::grammar;
using ojson = nlohmann::ordered_json;

namespace {

// `c` without the range `r`.
CharClass intersect_not(const CharClass& c, CharClass::Range r) {
  CharClass out;
  for (const CharClass::Range& x : c.ranges()) {
    if (x.hi < r.lo || x.lo > r.hi) {
      out.add(x.lo, x.hi);
      continue;
    }
    if (x.lo < r.lo) out.add(x.lo, r.lo - 1);
    if (x.hi > r.hi) out.add(r.hi + 1, x.hi);
  }
  return out;
}

}  // namespace

Expr text_until(GrammarBuilder& b, const std::string& marker) {
  // One rule per matched prefix length i of `marker` (as in a KMP automaton): the next character
  // either extends the match, falls back to a shorter prefix that is a suffix of what was read,
  // or to none. Every rule ends in a tail call, so the stack never grows with the text.
  const size_t n = marker.size();
  std::vector<uint32_t> state(n);
  for (size_t i = 0; i < n; ++i) state[i] = b.fresh_rule("until");
  const auto fallback = [&](size_t i, char c) {  // longest prefix of marker ending marker[0,i)+c
    const std::string t = marker.substr(0, i) + c;
    for (size_t k = std::min(n - 1, t.size()); k > 0; --k) {
      if (t.compare(t.size() - k, k, marker, 0, k) == 0) return k;
    }
    return size_t{0};
  };
  for (size_t i = 0; i < n; ++i) {
    std::vector<Expr> alts;
    const auto cp = [](char c) { return static_cast<uint32_t>(static_cast<unsigned char>(c)); };
    alts.push_back(i + 1 == n ? lit(marker.substr(i, 1)) : seq({lit(marker.substr(i, 1)), ref(state[i + 1])}));
    CharClass back = CharClass::any();
    CharClass seen = CharClass::of(cp(marker[i]));
    for (const char c : marker) {
      if (seen.contains(cp(c))) continue;
      seen.add(cp(c), cp(c));
      if (const size_t j = fallback(i, c); j > 0) alts.push_back(seq({lit(std::string(1, c)), ref(state[j])}));
    }
    // every other character leads back to no match
    CharClass forward = CharClass::of(cp(marker[i]));
    for (const char c : marker) {
      if (c != marker[i] && fallback(i, c) > 0) forward.add(cp(c), cp(c));
    }
    for (const CharClass::Range& r : forward.ranges()) back = intersect_not(back, r);
    alts.push_back(seq({cls(back), ref(state[0])}));
    b.define(state[i], alt(std::move(alts)));
  }
  return ref(state[0]);
}

namespace {

// Builds one tool grammar. Envelope literals are written with single spaces where the syntax's
// templates put them; a lazy grammar lets the model put up to two whitespace characters there
// instead (it writes the envelope itself), a forced one writes it exactly.
class Builder {
 public:
  explicit Builder(const ToolGrammarOptions& o) : o_(o), rules_(b_) {}

  ToolGrammar build() {
    ToolGrammar out;
    Expr body = calls();
    if (o_.lazy) {
      out.triggers = lazy_triggers(o_.syntax);
    } else {
      if (o_.think == ToolGrammarOptions::Think::kInside) {
        body = seq({text_until(b_, o_.think_close), space(), std::move(body)});
      }
    }
    const uint32_t root = b_.rule("root");
    b_.define(root, std::move(body));
    out.grammar = b_.build(root);
    return out;
  }

 private:
  // `text` with each ' ' and '\n' as the envelope's whitespace.
  Expr env(std::string_view text) {
    if (!o_.lazy) return lit(text);
    std::vector<Expr> parts;
    size_t from = 0;
    for (size_t sp = text.find_first_of(" \n"); sp != std::string_view::npos; sp = text.find_first_of(" \n", from)) {
      if (sp > from) parts.push_back(lit(text.substr(from, sp - from)));
      parts.push_back(repeat(cls(CharClass::of(' ').add('\n', '\n').add('\t', '\t')), 0, 2));
      from = sp + 1;
    }
    if (from < text.size()) parts.push_back(lit(text.substr(from)));
    return seq(std::move(parts));
  }
  Expr space() { return repeat(cls(CharClass::of(' ').add('\n', '\n')), 0, 4); }

  // The arguments of `t`: its schema, or any object when the schema cannot be enforced.
  Expr arguments(const ToolDef& t) {
    const uint32_t r = b_.fresh_rule("args");
    const bool has_schema = t.parameters.is_object() && !t.parameters.empty();
    if (has_schema) {
      // A refusal may leave rules of the schema behind in b_, undefined or not: harmless, since
      // build() lowers only what the root reaches, and JsonRules records a rule once it is whole.
      try {
        b_.define(r, json_schema_expr(t.parameters, b_, rules_));
        return ref(r);
      } catch (const GrammarError&) {
      }
    }
    b_.define(r, ref(rules_.object()));
    return ref(r);
  }

  static std::string quoted(const std::string& s) { return ojson(s).dump(); }

  // One call object: {"name": "f", "arguments": {...}} (Llama 3: "parameters").
  Expr call_object() {
    const std::string key = o_.syntax == ToolSyntax::kLlama3 ? "parameters" : "arguments";
    std::vector<Expr> alts;
    for (const ToolDef& t : o_.tools) {
      alts.push_back(seq({env("{\"name\": "), lit(quoted(t.name)), env(", \"" + key + "\": "), arguments(t), lit("}")}));
    }
    const uint32_t r = b_.fresh_rule("call");
    b_.define(r, alt(std::move(alts)));
    return ref(r);
  }

  // `open` call (`sep` call)* `close`, or one call when not parallel.
  Expr list(const std::string& open, const std::string& sep, const std::string& close) {
    const Expr one = call_object();
    if (!o_.parallel) return seq({env(open), one, env(close)});
    return seq({env(open), one, repeat(seq({env(sep), one}), 0, kMaxParallelCalls - 1), env(close)});
  }

  Expr calls() {
    switch (o_.syntax) {
      case ToolSyntax::kGeneric:
        return list("{\"tool_calls\": [", ", ", "]}");
      case ToolSyntax::kHermes: {
        const Expr one = seq({lit("<tool_call>"), env("\n"), call_object(), env("\n"), lit("</tool_call>")});
        return o_.parallel ? seq({one, repeat(seq({env("\n"), one}), 0, kMaxParallelCalls - 1)}) : one;
      }
      case ToolSyntax::kLlama3:  // one call per answer: the format has no list
        return seq({opt(lit("<|python_tag|>")), call_object()});
      case ToolSyntax::kMistral:
        return list("[TOOL_CALLS][", ", ", "]");
      case ToolSyntax::kGranite:
        return list("<|tool_call|>[", ", ", "]");
      case ToolSyntax::kHarmony: return harmony();
      case ToolSyntax::kQwenXml: return repeated(qwen_xml_call(), env("\n"));
      case ToolSyntax::kGemma4: return repeated(gemma4_call(), empty());
      case ToolSyntax::kLfm2:
        return seq({lit("<|tool_call_start|>["), repeated(lfm2_call(), env(", ")), lit("]<|tool_call_end|>")});
    }
    return empty();
  }

  // `one` (`sep` `one`)* up to the parallel bound, or `one` alone.
  Expr repeated(Expr one, Expr sep) {
    if (!o_.parallel) return one;
    return seq({one, repeat(seq({std::move(sep), one}), 0, kMaxParallelCalls - 1)});
  }

  // The properties of `t`'s schema in order, each required one present, an optional one present
  // or not, `member(name, schema)` for each and `sep` between them; nullopt when the schema lists
  // no properties (any arguments then).
  template <class Member>
  std::optional<Expr> members(const ToolDef& t, const Expr& sep, Member member) {
    const ojson& p = t.parameters;
    const auto props = p.is_object() ? p.find("properties") : p.end();
    if (!p.is_object() || props == p.end() || !props->is_object() || props->empty()) return std::nullopt;
    std::vector<std::pair<std::string, bool>> list;  // name, required
    const auto req = p.find("required");
    for (const auto& [name, schema] : props->items()) {
      const bool required = req != p.end() && req->is_array() && std::find(req->begin(), req->end(), ojson(name)) != req->end();
      list.emplace_back(name, required);
    }
    // first[i]: the members from i on, none written yet; more[i]: the same after one was
    const size_t n = list.size();
    std::vector<uint32_t> first(n + 1), more(n + 1);
    for (size_t i = 0; i <= n; ++i) {
      first[i] = b_.fresh_rule("members");
      more[i] = b_.fresh_rule("members");
    }
    b_.define(first[n], empty());
    b_.define(more[n], empty());
    for (size_t i = n; i-- > 0;) {
      const Expr m = member(list[i].first, (*props)[list[i].first]);
      Expr f = seq({m, ref(more[i + 1])});
      Expr g = seq({sep, m, ref(more[i + 1])});
      b_.define(first[i], list[i].second ? std::move(f) : alt({std::move(f), ref(first[i + 1])}));
      b_.define(more[i], list[i].second ? std::move(g) : alt({std::move(g), ref(more[i + 1])}));
    }
    return ref(first[0]);
  }

  // A JSON value of `schema`, or any JSON value when it cannot be enforced.
  Expr json_value(const ojson& schema) {
    const uint32_t r = b_.fresh_rule("value");
    try {
      b_.define(r, json_schema_expr(schema, b_, rules_));
    } catch (const GrammarError&) {
      b_.define(r, ref(rules_.value()));
    }
    return ref(r);
  }

  // A text parameter's value up to its closing tag: one of its enum's strings, or any text
  // without "</parameter>" (where the parser ends the value; the newline before it is optional).
  Expr qwen_xml_text(const ojson& schema) {
    const auto e = schema.find("enum");
    if (e == schema.end() || !e->is_array() || e->empty()) return text_until(b_, "</parameter>");
    std::vector<Expr> alts;
    for (const ojson& v : *e) {
      if (v.is_string()) alts.push_back(lit(v.get<std::string>() + "\n</parameter>"));
    }
    return alts.empty() ? text_until(b_, "</parameter>") : alt(std::move(alts));
  }

  // Qwen XML: <tool_call>\n<function=f>\n(<parameter=p>\nvalue\n</parameter>\n)*</function>\n</tool_call>.
  // A string's value is text (without "</parameter>"), any other a JSON value of its schema.
  Expr qwen_xml_call() {
    std::vector<Expr> alts;
    for (const ToolDef& t : o_.tools) {
      auto member = [&](const std::string& name, const ojson& schema) {
        Expr value = qwen_xml_text_param(schema) ? qwen_xml_text(schema) : seq({json_value(schema), lit("\n</parameter>")});
        return seq({lit("<parameter=" + name + ">"), env("\n"), std::move(value), env("\n")});
      };
      std::optional<Expr> params = members(t, empty(), member);
      if (!params) {  // any parameters, values as text
        const Expr name = plus(cls(CharClass::of('>').add('\n', '\n').add('<', '<').complement()));
        params = star(seq({lit("<parameter="), name, lit(">"), env("\n"), text_until(b_, "</parameter>"), env("\n")}));
      }
      alts.push_back(seq({lit("<function=" + t.name + ">"), env("\n"), std::move(*params), lit("</function>")}));
    }
    return seq({lit("<tool_call>"), env("\n"), alt(std::move(alts)), env("\n"), lit("</tool_call>")});
  }

  // Gemma 4: <|tool_call>call:f{key:value,...}<tool_call|>, the schema's properties in order with
  // strings, numbers, booleans and enums of strings by their schema, other values in any form.
  Expr gemma4_call() {
    std::vector<Expr> alts;
    for (const ToolDef& t : o_.tools) {
      auto member = [&](const std::string& name, const ojson& schema) {
        return seq({lit(name + ":"), gemma4_value(schema)});
      };
      std::optional<Expr> params = members(t, lit(","), member);
      Expr args = params ? seq({lit("{"), std::move(*params), lit("}")}) : ref(gemma4_any_dict());
      alts.push_back(seq({lit("call:" + t.name), std::move(args)}));
    }
    return seq({lit("<|tool_call>"), alt(std::move(alts)), lit("<tool_call|>")});
  }

  Expr gemma4_string() { return seq({lit("<|\"|>"), text_until(b_, "<|\"|>")}); }

  Expr gemma4_value(const ojson& schema) {
    const std::string type = schema.is_object() && schema.contains("type") && schema["type"].is_string()
                                 ? schema["type"].get<std::string>() : "";
    if (type == "string" && schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) {
      std::vector<Expr> alts;
      for (const ojson& v : schema["enum"]) {
        if (!v.is_string()) return ref(gemma4_any_value());
        alts.push_back(lit("<|\"|>" + v.get<std::string>() + "<|\"|>"));
      }
      return alt(std::move(alts));
    }
    if (type == "string") return gemma4_string();
    if (type == "integer") return ref(rules_.integer());
    if (type == "number") return ref(rules_.number());
    if (type == "boolean") return alt({lit("true"), lit("false")});
    return ref(gemma4_any_value());
  }

  // Any value in Gemma 4's notation (bare keys of letters, digits, '_', '-' and '.').
  uint32_t gemma4_any_value() {
    if (any_value_) return *any_value_;
    any_value_ = b_.fresh_rule("g4value");
    const uint32_t dict = gemma4_any_dict();
    const Expr v = ref(*any_value_);
    const Expr list = seq({lit("["), opt(seq({v, star(seq({lit(","), v}))})), lit("]")});
    b_.define(*any_value_, alt({gemma4_string(), ref(rules_.number()), lit("true"), lit("false"), lit("null"), list,
                                ref(dict)}));
    return *any_value_;
  }
  uint32_t gemma4_any_dict() {
    if (any_dict_) return *any_dict_;
    any_dict_ = b_.fresh_rule("g4dict");
    const uint32_t value = gemma4_any_value();
    CharClass key_char = CharClass::of('_').add('a', 'z').add('A', 'Z').add('0', '9').add('-', '-').add('.', '.');
    const Expr kv = seq({plus(cls(key_char)), lit(":"), ref(value)});
    b_.define(*any_dict_, seq({lit("{"), opt(seq({kv, star(seq({lit(","), kv}))})), lit("}")}));
    return *any_dict_;
  }

  // LFM2: f(key=value, ...), the schema's properties in order, each value JSON of its schema or
  // its Python spelling ('text', True, False, None); a function without properties takes any
  // keywords.
  Expr lfm2_call() {
    std::vector<Expr> alts;
    for (const ToolDef& t : o_.tools) {
      auto member = [&](const std::string& name, const ojson& schema) {
        return seq({lit(name + "="), lfm2_value(schema)});
      };
      std::optional<Expr> params = members(t, env(", "), member);
      if (!params) {
        const CharClass first = CharClass::of('_').add('a', 'z').add('A', 'Z');
        const Expr kw = seq({cls(first), star(cls(CharClass(first).add('0', '9'))), lit("="), lfm2_value(ojson::object())});
        params = opt(seq({kw, star(seq({env(", "), kw}))}));
      }
      alts.push_back(seq({lit(t.name + "("), std::move(*params), lit(")")}));
    }
    const uint32_t r = b_.fresh_rule("call");
    b_.define(r, alt(std::move(alts)));
    return ref(r);
  }

  Expr lfm2_value(const ojson& schema) {
    std::vector<Expr> alts = {json_value(schema)};
    const auto has = [&](const char* key) { return schema.is_object() && schema.contains(key); };
    const auto typed = [&](const char* type) {
      if (!schema.is_object()) return false;
      const auto t = schema.find("type");
      if (t == schema.end()) return true;  // any value
      if (t->is_string()) return *t == type;
      return t->is_array() && std::find(t->begin(), t->end(), ojson(type)) != t->end();
    };
    const bool closed = has("enum") || has("const") || has("pattern") || has("format") || has("minLength") ||
                        has("maxLength") || has("anyOf") || has("oneOf") || has("allOf") || has("$ref");
    if (typed("string") && !closed) {  // 'text' with Python's escapes
      const Expr plain = cls(CharClass::of('\'').add('\\', '\\').complement());
      alts.push_back(seq({lit("'"), star(alt({plain, seq({lit("\\"), cls(CharClass::any())})})), lit("'")}));
    }
    if (has("enum") && schema["enum"].is_array()) {  // an enum's strings in single quotes too
      for (const ojson& v : schema["enum"]) {
        if (v.is_string() && v.get<std::string>().find_first_of("'\\\n") == std::string::npos) {
          alts.push_back(lit("'" + v.get<std::string>() + "'"));
        }
      }
    }
    if (typed("boolean") && !closed) alts.insert(alts.end(), {lit("True"), lit("False")});
    if ((typed("null") || (has("nullable") && schema["nullable"] == true)) && !closed) alts.push_back(lit("None"));
    return alt(std::move(alts));
  }

  // gpt-oss: one message to a function per answer (<|call|> ends it), after at most one analysis
  // message: [<|channel|>analysis<|message|>...<|end|><|start|>assistant]<|channel|>commentary
  // to=functions.f <|constrain|>json<|message|>{...}. Lazy: from "to=functions." on.
  Expr harmony() {
    std::vector<Expr> alts;
    for (const ToolDef& t : o_.tools) {
      Expr head = o_.lazy ? seq({lit("to=functions." + t.name), star(cls(CharClass::of('<').complement())),
                                 opt(seq({lit("<|constrain|>json")})), lit("<|message|>")})
                          : lit("<|channel|>commentary to=functions." + t.name + " <|constrain|>json<|message|>");
      alts.push_back(seq({std::move(head), arguments(t)}));
    }
    Expr call = alt(std::move(alts));
    if (o_.lazy) return call;
    Expr analysis = seq({lit("<|channel|>analysis<|message|>"), text_until(b_, "<|end|>"), lit("<|start|>assistant")});
    return seq({opt(std::move(analysis)), std::move(call)});
  }

  const ToolGrammarOptions& o_;
  GrammarBuilder b_;
  JsonRules rules_;
  std::optional<uint32_t> any_value_, any_dict_;  // Gemma 4's free-form rules, once made
};

}  // namespace

std::vector<std::string> lazy_triggers(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kGeneric: return {"{\"tool_calls\""};
    case ToolSyntax::kHermes: return {"<tool_call>"};
    case ToolSyntax::kLlama3: return {"<|python_tag|>", "{\"name\""};
    case ToolSyntax::kMistral: return {"[TOOL_CALLS]"};
    case ToolSyntax::kGranite: return {"<|tool_call|>"};
    case ToolSyntax::kHarmony: return {"to=functions."};
    case ToolSyntax::kQwenXml: return {"<tool_call>"};
    case ToolSyntax::kGemma4: return {"<|tool_call>"};
    case ToolSyntax::kLfm2: return {"<|tool_call_start|>"};
  }
  return {};
}

ToolGrammar tool_grammar(const ToolGrammarOptions& options) {
  if (options.tools.empty()) throw GrammarError("no tools to call");
  return Builder(options).build();
}

}  // namespace engine::tools
