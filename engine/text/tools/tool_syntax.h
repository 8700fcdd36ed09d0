// Tool calling: the ways models write function calls, and which one a chat template uses.
//
// A model that was trained for tools writes calls in its own syntax, and its chat template says
// which (it renders earlier calls the same way):
//
//   kHermes   Qwen2.5, Qwen3, Hermes:   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   kLlama3   Llama 3.1 / 3.2:          {"name": "f", "parameters": {...}}   (or after <|python_tag|>)
//   kMistral  Mistral Nemo, Small:      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//   kGranite  Granite 3.x:              <|tool_call|>[{"name": "f", "arguments": {...}}, ...]
//   kHarmony  gpt-oss:                  <|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}
//   kQwenXml  Qwen3.5, Qwen3-Coder, Qwen3-Next:
//             <tool_call>\n<function=f>\n<parameter=a>\nraw text\n</parameter>\n</function>\n</tool_call>
//             (a value is text; the function's schema says which are strings and which are JSON)
//   kGemma4   Gemma 4:                  <|tool_call>call:f{a:<|"|>text<|"|>,n:3,o:{k:[true]}}<tool_call|>
//             (Gemma's own notation: bare keys, strings between <|"|> marks, no escapes)
//   kLfm2     LFM2, LFM2.5:             <|tool_call_start|>[f(a="text", n=3), g()]<|tool_call_end|>
//             (a Python list of calls with keyword arguments; True/False/None or JSON's literals)
//   kGeneric  any other model: the tools are described in a system message we add, and calls are
//             a JSON envelope {"tool_calls": [{"name": "f", "arguments": {...}}]}.
//
// Everything else (output parsing, grammars, prompts) is derived from ToolSyntax and the table
// of its markers here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace engine::tools {

enum class ToolSyntax { kGeneric, kHermes, kLlama3, kMistral, kGranite, kHarmony, kQwenXml, kGemma4, kLfm2 };

// One function the client offers: name, description and JSON-schema parameters (keys in the
// order the client sent them).
struct ToolDef {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
};

// One call the model made: a function name and its arguments as compact JSON object text.
struct ToolCall {
  std::string name;
  std::string arguments;
};

// The syntax of a chat template (its Jinja source): kHarmony for a harmony vocabulary or for a
// template that renders tools and writes harmony's <|start|>, <|channel|> and <|message|> (the
// same answer whether the vocabulary is known, as in the server, or not, as in `ggufd template
// --template`), else the syntax of the tool markers it writes.
ToolSyntax detect_tool_syntax(std::string_view template_source, bool harmony_vocab);

// "hermes", "llama3", "qwen_xml", "gemma4", "lfm2", ... (for logs, /props and errors).
const char* tool_syntax_name(ToolSyntax syntax);

// Whether the template renders the `tools` variable itself (else the generic system message).
inline bool template_renders_tools(ToolSyntax syntax) { return syntax != ToolSyntax::kGeneric; }

// Where a syntax's calls begin in the output. `keep`: the marker is the start of the calls' JSON
// text (the generic envelope) rather than a separate tag. `at_start`: only as the first text of
// the answer (Llama 3's bare JSON object).
struct CallMarker {
  std::string text;
  bool keep = false;
  bool at_start = false;
};
std::vector<CallMarker> call_markers(ToolSyntax syntax);

// Every text of a syntax's calls that a vocabulary may hold as one control token (the markers,
// closing tags, Gemma 4's string mark): the output must show them for the parser to see calls.
std::vector<std::string> syntax_texts(ToolSyntax syntax);

// The system-message text of the generic syntax: the tools and how to call them.
std::string generic_tools_prompt(const std::vector<ToolDef>& tools, bool parallel);

// A fresh call id in the form the syntax's templates accept: "call_" + 24 letters and digits, or
// 9 letters and digits for Mistral (whose templates refuse anything else).
std::string make_call_id(ToolSyntax syntax);

}  // namespace engine::tools
