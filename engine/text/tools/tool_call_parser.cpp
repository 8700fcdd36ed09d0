#include "engine/text/tools/tool_call_parser.h"

#include <algorithm>

#include "engine/text/tools/python_calls.h"
#include "engine/text/tools/section_cursor.h"
#include "engine/text/tools/tagged_calls.h"

namespace engine::tools {

using ojson = nlohmann::ordered_json;

namespace {

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  return i;
}

enum class Scan { kIncomplete, kInvalid, kDone };

// Where the JSON object or array starting at s[i] ends (one past its closing bracket), found by
// counting brackets outside strings; the text in between is checked by the parser later.
Scan json_end(std::string_view s, size_t i, size_t& end) {
  if (i >= s.size()) return Scan::kIncomplete;
  if (s[i] != '{' && s[i] != '[') return Scan::kInvalid;
  int depth = 0;
  bool in_string = false;
  for (size_t k = i; k < s.size(); ++k) {
    const char c = s[k];
    if (in_string) {
      if (c == '\\') ++k;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > section::kMaxDepth) return Scan::kInvalid;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        end = k + 1;
        return Scan::kDone;
      }
    }
  }
  return Scan::kIncomplete;
}

// Calls from a section's JSON value: one call object, an array of them, or the generic envelope.
std::optional<std::vector<ToolCall>> calls_from(ToolSyntax syntax, const ojson& j, const std::vector<std::string>& names) {
  std::vector<ToolCall> calls;
  const ojson* list = &j;
  if (syntax == ToolSyntax::kGeneric) {
    if (!j.is_object()) return std::nullopt;
    if (auto it = j.find("tool_calls"); it != j.end()) list = &*it;
    else if (auto one = j.find("tool_call"); one != j.end()) list = &*one;
    else return std::nullopt;
  }
  if (list->is_object()) {
    auto c = call_from_json(*list, names);
    if (!c) return std::nullopt;
    calls.push_back(std::move(*c));
    return calls;
  }
  if (!list->is_array() || list->empty()) return std::nullopt;
  for (const ojson& e : *list) {
    auto c = call_from_json(e, names);
    if (!c) return std::nullopt;
    calls.push_back(std::move(*c));
  }
  return calls;
}

// The complete calls at the start of a list cut short ([{...}, {...}, {"na): what a section
// that max_tokens cut off still holds. The generic envelope's list follows its "tool_calls" key.
std::vector<ToolCall> complete_calls(ToolSyntax syntax, std::string_view s, const std::vector<std::string>& names) {
  std::vector<ToolCall> out;
  size_t i = skip_space(s, 0);
  if (syntax == ToolSyntax::kGeneric) {
    const size_t key = s.find("\"tool_calls\"", i);
    if (key != i + 1) return out;
    i = skip_space(s, key + 12);
    if (i >= s.size() || s[i] != ':') return out;
    i = skip_space(s, i + 1);
  } else if (syntax == ToolSyntax::kLfm2) {
    SectionResult r = read_lfm2_section(s, true, names);
    return r.read == SectionRead::kIncomplete ? std::move(r.calls) : out;
  } else if (syntax != ToolSyntax::kMistral && syntax != ToolSyntax::kGranite) {
    return out;  // one call per section: nothing complete in a cut one
  }
  if (i >= s.size() || s[i] != '[') return out;
  for (i = skip_space(s, i + 1);; i = skip_space(s, i + 1)) {
    size_t end = 0;
    if (json_end(s, i, end) != Scan::kDone) break;
    const ojson j = ojson::parse(s.substr(i, end - i), nullptr, false);
    auto call = j.is_discarded() ? std::nullopt : call_from_json(j, names);
    if (!call) return {};  // not a list of calls after all
    out.push_back(std::move(*call));
    i = skip_space(s, end);
    if (i >= s.size() || s[i] != ',') break;
  }
  return out;
}

}  // namespace

std::optional<ToolCall> call_from_json(const ojson& j, const std::vector<std::string>& names) {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return std::nullopt;
  if (std::find(names.begin(), names.end(), name->get_ref<const std::string&>()) == names.end()) return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  ojson value = ojson::object();
  if (args != j.end()) {
    value = *args;
    if (value.is_string()) value = ojson::parse(value.get<std::string>(), nullptr, false);  // a JSON string
    if (!value.is_object()) return std::nullopt;
  }
  return ToolCall{name->get<std::string>(), value.dump(-1, ' ', false, ojson::error_handler_t::replace)};
}

ToolCallParser::ToolCallParser(ToolSyntax syntax, std::vector<std::string> names, std::vector<ToolDef> tools)
    : syntax_(syntax), names_(std::move(names)), tools_(std::move(tools)), markers_(call_markers(syntax)) {}

std::optional<ToolCallParser::Found> ToolCallParser::find_marker() const {
  std::optional<Found> best;
  for (size_t m = 0; m < markers_.size(); ++m) {
    const CallMarker& mk = markers_[m];
    size_t at;
    if (mk.at_start) {
      if (answered_) continue;
      at = skip_space(buf_, 0);
      if (buf_.compare(at, mk.text.size(), mk.text) != 0) continue;
    } else {
      at = buf_.find(mk.text);
      if (at == std::string::npos) continue;
    }
    if (!best || at < best->at) best = Found{at, m};
  }
  return best;
}

size_t ToolCallParser::held_back() const {
  size_t hold = 0;
  for (const CallMarker& mk : markers_) {
    if (mk.at_start) {
      if (answered_) continue;
      const size_t at = skip_space(buf_, 0);
      if (at == buf_.size()) hold = std::max(hold, buf_.size());  // only whitespace so far
      continue;
    }
    for (size_t n = std::min(mk.text.size() - 1, buf_.size()); n > hold; --n) {
      if (buf_.compare(buf_.size() - n, n, mk.text, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  return hold;
}

void ToolCallParser::emit_content(std::string_view text, Delta& d) {
  if (after_call_) {  // the separator after a call ("\n" between Hermes blocks) is not content
    text.remove_prefix(skip_space(text, 0));
    if (text.empty()) return;
    after_call_ = false;
  }
  if (skip_space(text, 0) < text.size()) answered_ = true;
  d.content.append(text);
}

ToolCallParser::Section ToolCallParser::parse_section(bool at_end, size_t& consumed, std::vector<ToolCall>& calls) const {
  const std::string_view s = section_;
  if (syntax_ == ToolSyntax::kQwenXml || syntax_ == ToolSyntax::kGemma4 || syntax_ == ToolSyntax::kLfm2) {
    SectionResult r = syntax_ == ToolSyntax::kQwenXml ? read_qwen_xml_section(s, at_end, names_, tools_)
                      : syntax_ == ToolSyntax::kGemma4 ? read_gemma4_section(s, at_end, names_)
                                                       : read_lfm2_section(s, at_end, names_);
    if (r.read != SectionRead::kDone) return r.read == SectionRead::kInvalid ? Section::kInvalid : Section::kIncomplete;
    consumed = r.consumed;
    calls = std::move(r.calls);
    return Section::kDone;
  }
  const size_t begin = skip_space(s, 0);
  size_t end = 0;
  const Scan scan = json_end(s, begin, end);
  if (scan == Scan::kInvalid) return Section::kInvalid;
  if (scan == Scan::kIncomplete) return Section::kIncomplete;  // at the end: cut off
  const ojson j = ojson::parse(s.substr(begin, end - begin), nullptr, false);
  auto found = j.is_discarded() ? std::nullopt : calls_from(syntax_, j, names_);
  if (!found) return Section::kInvalid;
  if (syntax_ == ToolSyntax::kHermes) {  // the closing tag, or the end of the answer
    static constexpr std::string_view kClose = "</tool_call>";
    const size_t k = skip_space(s, end);
    const std::string_view rest = s.substr(k);
    if (rest.substr(0, kClose.size()) == kClose) {
      end = k + kClose.size();
    } else if (kClose.substr(0, rest.size()) == rest) {
      if (!at_end) return Section::kIncomplete;
      end = s.size();
    } else {
      return Section::kInvalid;
    }
  }
  consumed = end;
  calls = std::move(*found);
  return Section::kDone;
}

void ToolCallParser::run(Delta& d) {
  for (;;) {
    if (open_) {
      size_t consumed = 0;
      std::vector<ToolCall> calls;
      const Section st = parse_section(false, consumed, calls);
      if (st == Section::kIncomplete) return;
      const CallMarker& mk = markers_[*open_];
      if (st == Section::kDone) {
        for (ToolCall& c : calls) d.calls.push_back(std::move(c));
        answered_ = true;
        after_call_ = true;
        buf_ = section_.substr(consumed) + buf_;
      } else {  // not calls: the marker is text, and what followed it is scanned again
        emit_content(mk.keep ? std::string_view(section_).substr(0, mk.text.size()) : std::string_view(mk.text), d);
        buf_ = section_.substr(mk.keep ? mk.text.size() : 0) + buf_;
      }
      section_.clear();
      open_.reset();
      continue;
    }
    const std::optional<Found> f = find_marker();
    if (!f) {
      const size_t hold = held_back();
      emit_content(std::string_view(buf_).substr(0, buf_.size() - hold), d);
      buf_.erase(0, buf_.size() - hold);
      return;
    }
    const CallMarker& mk = markers_[f->marker];
    emit_content(std::string_view(buf_).substr(0, f->at), d);
    const size_t payload = f->at + (mk.keep ? 0 : mk.text.size());
    section_ = buf_.substr(payload);
    buf_.clear();
    open_ = f->marker;
  }
}

ToolCallParser::Delta ToolCallParser::push(std::string_view text) {
  Delta d;
  if (open_) section_.append(text);
  else buf_.append(text);
  run(d);
  return d;
}

ToolCallParser::Delta ToolCallParser::flush() {
  Delta d;
  if (open_) {
    size_t consumed = 0;
    std::vector<ToolCall> calls;
    const Section st = parse_section(true, consumed, calls);
    if (st == Section::kDone) {
      for (ToolCall& c : calls) d.calls.push_back(std::move(c));
      after_call_ = true;
      emit_content(std::string_view(section_).substr(consumed), d);
    } else if (st == Section::kIncomplete) {
      // cut off (max_tokens) inside the calls: the complete ones count, the rest is dropped
      for (ToolCall& c : complete_calls(syntax_, section_, names_)) d.calls.push_back(std::move(c));
    } else {
      const CallMarker& mk = markers_[*open_];
      emit_content(mk.keep ? std::string_view() : std::string_view(mk.text), d);
      emit_content(section_, d);
    }
    section_.clear();
    open_.reset();
  }
  emit_content(buf_, d);
  buf_.clear();
  return d;
}

}  // namespace engine::tools
