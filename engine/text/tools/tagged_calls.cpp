#include "engine/text/tools/tagged_calls.h"

#include <algorithm>
#include <map>
#include <optional>

#include "engine/text/tools/section_cursor.h"

namespace engine::tools {

using ojson = nlohmann::ordered_json;

namespace {

using section::Cursor;
using section::close_section;
using section::kMaxDepth;
using section::is_space;
using section::offered;

// ---- Qwen XML ----

// Whether a parameter's schema makes its value a string: its type is "string" (or a list with
// "string"), or the function's schema lists properties and not this one.
bool string_typed(const ToolDef* def, const std::string& param) {
  if (def == nullptr || !def->parameters.is_object()) return false;
  const auto props = def->parameters.find("properties");
  if (props == def->parameters.end() || !props->is_object()) return false;
  const auto p = props->find(param);
  return p == props->end() || qwen_xml_text_param(*p);
}

ojson xml_value(std::string_view raw, bool as_string) {
  if (!raw.empty() && raw.front() == '\n') raw.remove_prefix(1);
  if (!raw.empty() && raw.back() == '\n') raw.remove_suffix(1);
  if (as_string) return std::string(raw);
  ojson j = ojson::parse(raw, nullptr, false);
  if (!j.is_discarded()) return j;
  size_t b = 0, e = raw.size();
  while (b < e && is_space(raw[b])) ++b;
  while (e > b && is_space(raw[e - 1])) --e;
  const std::string_view t = raw.substr(b, e - b);
  if (t == "True") return true;
  if (t == "False") return false;
  if (t == "None") return nullptr;
  return std::string(raw);
}

// <function=NAME>\n(<parameter=P>\nVALUE\n</parameter>\n)*</function>
SectionRead read_xml_function(Cursor& c, const std::vector<std::string>& names, const std::vector<ToolDef>& tools,
                              ToolCall& call) {
  GGUFD_SECTION_READ(c.expect("<function="));
  std::string name;
  GGUFD_SECTION_READ(c.name('>', "<\n", name));
  if (!offered(names, name)) return SectionRead::kInvalid;
  const auto def = std::find_if(tools.begin(), tools.end(), [&](const ToolDef& t) { return t.name == name; });
  ojson args = ojson::object();
  for (;;) {
    c.skip_space();
    if (c.done() || c.prefix_of("</function>") || c.prefix_of("<parameter=")) return SectionRead::kIncomplete;
    if (c.expect("</function>") == SectionRead::kDone) break;
    GGUFD_SECTION_READ(c.expect("<parameter="));
    std::string param;
    GGUFD_SECTION_READ(c.name('>', "<\n", param));
    std::string_view raw;
    GGUFD_SECTION_READ(c.until("</parameter>", raw));
    if (args.contains(param)) return SectionRead::kInvalid;
    args[param] = xml_value(raw, string_typed(def == tools.end() ? nullptr : &*def, param));
  }
  call.name = std::move(name);
  call.arguments = args.dump(-1, ' ', false, ojson::error_handler_t::replace);
  return SectionRead::kDone;
}

// ---- Gemma 4 ----

constexpr std::string_view kQuote = "<|\"|>";

SectionRead read_gemma_value(Cursor& c, int depth, ojson& out);

// Bare (up to ':') or quoted; then ':'.
SectionRead read_gemma_key(Cursor& c, std::string& key) {
  if (c.starts_with(kQuote) || c.prefix_of(kQuote)) {
    GGUFD_SECTION_READ(c.expect(kQuote));
    std::string_view k;
    GGUFD_SECTION_READ(c.until(kQuote, k));
    key.assign(k);
    c.skip_space();
    return c.expect(":");
  }
  GGUFD_SECTION_READ(c.name(':', "{}[],<\"\n", key));
  while (!key.empty() && is_space(key.back())) key.pop_back();
  return key.empty() ? SectionRead::kInvalid : SectionRead::kDone;
}

SectionRead read_gemma_dict(Cursor& c, int depth, ojson& out) {
  out = ojson::object();
  GGUFD_SECTION_READ(c.expect("{"));
  return section::read_list(c, '}', [&] {
    std::string key;
    GGUFD_SECTION_READ(read_gemma_key(c, key));
    if (out.contains(key)) return SectionRead::kInvalid;
    c.skip_space();
    return read_gemma_value(c, depth + 1, out[key]);
  });
}

// true, false, null or a JSON number: the text up to a delimiter.
SectionRead read_gemma_scalar(Cursor& c, ojson& out) {
  const std::string_view r = c.rest();
  size_t n = 0;
  while (n < r.size() && r[n] != ',' && r[n] != '}' && r[n] != ']' && r[n] != '<' && !is_space(r[n])) ++n;
  if (n > 64) return SectionRead::kInvalid;  // cut off or whole alike (a streamed answer reads as the whole one)
  if (n == r.size()) return SectionRead::kIncomplete;  // may go on
  const std::string_view t = r.substr(0, n);
  const bool number = !t.empty() && (t[0] == '-' || (t[0] >= '0' && t[0] <= '9'));
  if (t == "None") {  // what the template writes for a null argument
    out = nullptr;
  } else {
    if (!number && t != "true" && t != "false" && t != "null") return SectionRead::kInvalid;
    out = ojson::parse(t, nullptr, false);
  }
  if (out.is_discarded()) return SectionRead::kInvalid;
  c.expect(t);
  return SectionRead::kDone;
}

SectionRead read_gemma_value(Cursor& c, int depth, ojson& out) {
  if (depth > kMaxDepth) return SectionRead::kInvalid;
  if (c.done()) return SectionRead::kIncomplete;
  if (c.starts_with(kQuote) || c.prefix_of(kQuote)) {
    GGUFD_SECTION_READ(c.expect(kQuote));
    std::string_view text;
    GGUFD_SECTION_READ(c.until(kQuote, text));
    out = std::string(text);
    return SectionRead::kDone;
  }
  if (c.peek() == '{') return read_gemma_dict(c, depth, out);
  if (c.peek() == '[') {
    out = ojson::array();
    c.expect("[");
    return section::read_list(c, ']', [&] {
      out.push_back(nullptr);
      return read_gemma_value(c, depth + 1, out.back());
    });
  }
  return read_gemma_scalar(c, out);
}

}  // namespace

bool qwen_xml_text_param(const ojson& schema) {
  if (!schema.is_object()) return false;
  const auto type = schema.find("type");
  if (type == schema.end()) return false;
  if (type->is_string()) return *type == "string";
  return type->is_array() && std::find(type->begin(), type->end(), ojson("string")) != type->end();
}

SectionResult read_qwen_xml_section(std::string_view s, bool at_end, const std::vector<std::string>& names,
                                    const std::vector<ToolDef>& tools) {
  Cursor c(s);
  std::vector<ToolCall> calls;
  do {
    c.skip_space();
    ToolCall call;
    if (const SectionRead r = read_xml_function(c, names, tools, call); r != SectionRead::kDone) return {r, 0, {}};
    calls.push_back(std::move(call));
    c.skip_space();
  } while (c.starts_with("<function="));
  if (c.prefix_of("<function=") && !c.prefix_of("</tool_call>")) return {};
  return close_section(c, "</tool_call>", at_end, std::move(calls));
}

SectionResult read_gemma4_section(std::string_view s, bool at_end, const std::vector<std::string>& names) {
  Cursor c(s);
  ToolCall call;
  const auto read = [&]() -> SectionRead {
    c.skip_space();
    GGUFD_SECTION_READ(c.expect("call:"));
    GGUFD_SECTION_READ(c.name('{', "<>}[],:\" \n", call.name, false));
    if (!offered(names, call.name)) return SectionRead::kInvalid;
    ojson args;
    GGUFD_SECTION_READ(read_gemma_dict(c, 0, args));
    call.arguments = args.dump(-1, ' ', false, ojson::error_handler_t::replace);
    return SectionRead::kDone;
  };
  if (const SectionRead r = read(); r != SectionRead::kDone) return {r, 0, {}};
  std::vector<ToolCall> calls;
  calls.push_back(std::move(call));
  return close_section(c, "<tool_call|>", at_end, std::move(calls));
}

std::string gemma4_text(const ojson& value) {
  if (value.is_string()) return std::string(kQuote) + value.get<std::string>() + std::string(kQuote);
  if (value.is_object()) {
    std::map<std::string, const ojson*> sorted;  // the template's dictsort
    for (auto it = value.begin(); it != value.end(); ++it) sorted.emplace(it.key(), &it.value());
    std::string out = "{";
    for (const auto& [k, v] : sorted) out += (out.size() > 1 ? "," : "") + k + ":" + gemma4_text(*v);
    return out + "}";
  }
  if (value.is_array()) {
    std::string out = "[";
    for (const ojson& v : value) out += (out.size() > 1 ? "," : "") + gemma4_text(v);
    return out + "]";
  }
  return value.is_null() ? "None" : value.dump();  // Jinja2 prints none as None
}

}  // namespace engine::tools
