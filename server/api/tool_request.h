// Tool calling and reasoning in a chat request: the functions offered (`tools`, or the legacy
// `functions`), the client's `tool_choice` and `parallel_tool_calls`, and the conversation
// rewritten into what the model's chat template expects. Coroutine-free (work pool, fuzzer).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/text/reasoning.h"
#include "engine/text/tools/tool_syntax.h"

namespace server {

using ojson = nlohmann::ordered_json;

struct ToolRequest {
  enum class Choice { kNone, kAuto, kRequired, kNamed };
  std::vector<engine::tools::ToolDef> tools;
  ojson tools_json = ojson::array();  // `tools` as sent (the template renders it), or from `functions`
  Choice choice = Choice::kAuto;
  std::string named;                  // kNamed: the function that must be called
  // parallel_tool_calls, if the request says. Absent: several calls under "auto" (the model ends
  // its answer when it has called what it needs), one call under "required" or a named function,
  // where the grammar leaves the model no other way to end than after a call (llama-server's
  // default, and what lets small models finish).
  std::optional<bool> parallel_requested;
  // Responses' allowed_tools: the functions a call may name (the others stay in the prompt).
  std::optional<std::vector<std::string>> allowed;
  bool parallel() const {
    return parallel_requested.value_or(choice != Choice::kRequired && choice != Choice::kNamed);
  }

  // Whether the output is read for calls (and constrained, unless the model chooses).
  bool calls_tools() const { return !tools.empty() && choice != Choice::kNone && (!allowed || !allowed->empty()); }
  // The functions a call may name: all, the allowed ones, or the named one.
  std::vector<engine::tools::ToolDef> callable() const;
  std::vector<std::string> callable_names() const;
};

// Reads tools / functions, tool_choice / function_call and parallel_tool_calls. Throws ApiError
// 400 naming the field: a tool that is not {"type": "function", "function": {"name", ...}}, a
// bad or duplicate name, parameters that are not an object, a tool_choice naming no offered
// function, or "required" without tools.
ToolRequest parse_tool_request(const ojson& body);

// One function definition ({"name", "description", "parameters"}) at `where` (errors name
// `field`): a name of 1 to `max_name` letters, digits, '_', '-' or '.', a string description, an
// object of parameters.
engine::tools::ToolDef function_def(const ojson& f, const std::string& field, const std::string& where,
                                    size_t max_name = 64);

// Adds a function to the offered tools (and to tools_json in the chat shape the templates read);
// a 400 naming `field` when its name is offered twice.
void add_function(ToolRequest& r, engine::tools::ToolDef def, const std::string& field, const std::string& where);

// Chat-template capabilities found once per template (App::chat_features).
struct ChatFeatures {
  engine::tools::ToolSyntax syntax = engine::tools::ToolSyntax::kGeneric;
  bool system_role = true;  // a system message is rendered (else it is merged into the first user turn)
  bool thinks = false;      // the template knows <think> blocks (or Gemma 4's thought channel)
  engine::ThinkTags think_tags = engine::kThinkTags;  // the tags of its think blocks
  // Control tokens of the syntax's call markers ([TOOL_CALLS], <|python_tag|>; sorted): rendered
  // into the output and part of the grammar vocabulary, so that the parser sees them and a
  // grammar may ask for them.
  std::vector<int32_t> marker_tokens;
  // Control tokens of the think tags (Gemma 4's <|channel>, <channel|>; sorted): shown whenever
  // the output is read for reasoning.
  std::vector<int32_t> reasoning_tokens;
};

// `messages` as the template gets them: an assistant turn's tool_calls[].function.arguments
// (a JSON string) parsed into an object keeping its key order, null content as "", reasoning
// passed back under the names templates read (reasoning_content, thinking). For the generic
// syntax with tools, the tool descriptions go into the system message, earlier calls become the
// assistant's JSON envelope and tool results become user turns. Without system role support the
// system text is put before the first user turn's. Throws ApiError 400 for arguments that are not
// a JSON object.
ojson template_messages(const ojson& messages, const ToolRequest& tools, const ChatFeatures& features);

}  // namespace server
