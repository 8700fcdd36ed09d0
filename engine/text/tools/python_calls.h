// Reading LFM2 / LFM2.5's tool calls (kLfm2, tool_syntax.h): a Python list of calls between
// <|tool_call_start|> and <|tool_call_end|>, [f(a='text', n=3), g(x=[1, True])], into ToolCalls
// with JSON arguments. Used by ToolCallParser; stateless functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tools/tagged_calls.h"

namespace engine::tools {

// `s`: the text after "<|tool_call_start|>". "[call, call, ...]" (or one call without brackets)
// then "<|tool_call_end|>", which `at_end`, the end of the answer, may stand for. A call is
// NAME(key=value, ...) with keyword arguments only. Values: strings in either quote with Python's
// escapes (a raw newline too: LFM2.5's template writes strings unescaped), numbers, True, False,
// None and JSON's true, false, null, [lists] and {dicts with string keys}. Duplicate keywords,
// nesting deeper than 128 levels and functions not in `names` are invalid. kIncomplete: `calls`
// holds the calls complete before the point where the text ends (what a cut-off list still holds).
SectionResult read_lfm2_section(std::string_view s, bool at_end, const std::vector<std::string>& names);

}  // namespace engine::tools
