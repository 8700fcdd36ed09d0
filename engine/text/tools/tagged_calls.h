// Reading the calls of the tag-based syntaxes (tool_syntax.h): Qwen's XML (kQwenXml) and Gemma 4's
// notation (kGemma4), one call section at a time, into ToolCalls with JSON arguments. Used by
// ToolCallParser; stateless functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tools/tool_syntax.h"

namespace engine::tools {

// How a section's text reads. kIncomplete: a valid beginning that the text ends in the middle
// of (more may come, or max_tokens cut it). kInvalid: not calls of this syntax to one of the
// offered functions (the text is then content). kDone: calls, ending at `consumed`.
enum class SectionRead { kIncomplete, kInvalid, kDone };

struct SectionResult {
  SectionRead read = SectionRead::kIncomplete;
  size_t consumed = 0;          // kDone: the section's length, closing tag included
  std::vector<ToolCall> calls;  // kDone: at least one
};

// `s`: the text after "<tool_call>". One or more <function=NAME>...</function> blocks, then
// "</tool_call>" (which `at_end`, the end of the answer, may stand for). Each parameter's value
// is the raw text between its tags (less the newline after the opening and before the closing
// tag): a string where `tools`' schema types the parameter as a string or does not know it,
// else parsed as JSON (Python's True, False and None as well, as the templates render them),
// and a string still when it is not JSON. `names`: the functions a call may name; `tools`:
// their definitions where known (the others' parameters are read as untyped).
SectionResult read_qwen_xml_section(std::string_view s, bool at_end, const std::vector<std::string>& names,
                                    const std::vector<ToolDef>& tools);

// Whether a parameter of this schema is written as text in Qwen's XML (its type is "string" or a
// list with "string"), rather than as JSON.
bool qwen_xml_text_param(const nlohmann::ordered_json& schema);

// `s`: the text after "<|tool_call>". "call:NAME{...}" then "<tool_call|>" (or the end of the
// answer when `at_end`). Values: strings between <|"|> marks (taken verbatim), JSON numbers,
// true, false, null, [...] and {...} with bare or <|"|>-quoted keys; whitespace around them is
// allowed. Duplicate keys or nesting deeper than 128 levels are invalid.
SectionResult read_gemma4_section(std::string_view s, bool at_end, const std::vector<std::string>& names);

// A value in Gemma 4's notation, as its template writes arguments (format_argument with bare
// keys, sorted; null as None): what a model trained on it writes, for tests.
std::string gemma4_text(const nlohmann::ordered_json& value);

}  // namespace engine::tools
