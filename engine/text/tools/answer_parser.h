// A chat answer as the client sees it: reasoning, content and tool calls, split from the model's
// text as it streams. Combines the reasoning parsers (<think> blocks, harmony channels) with the
// tool-call parser of the model's syntax.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/harmony.h"
#include "engine/text/reasoning.h"
#include "engine/text/tools/tool_call_parser.h"

namespace engine::tools {

struct AnswerOptions {
  enum class Reasoning { kNone, kThink, kHarmony };
  Reasoning reasoning = Reasoning::kNone;
  bool starts_in_think = false;     // kThink: the prompt opened the block
  ThinkTags think_tags = kThinkTags;  // kThink: the block's tags
  bool parse_calls = false;         // the request offers tools the model may call
  ToolSyntax syntax = ToolSyntax::kGeneric;
  std::vector<std::string> names;   // the functions a call may name
  std::vector<ToolDef> tools;       // their definitions, where known (kQwenXml reads types there)
};

// Not thread-safe; one per choice. The result does not depend on how the text is cut.
class AnswerParser {
 public:
  struct Delta {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> calls;
    bool empty() const { return reasoning.empty() && content.empty() && calls.empty(); }
  };

  explicit AnswerParser(AnswerOptions options);

  Delta push(std::string_view text);
  Delta flush();

 private:
  // Moves a reasoning stage's output on through the call parser.
  void pass(std::string reasoning, std::string content, std::vector<HarmonyParser::Call> calls, Delta& d);

  AnswerOptions o_;
  std::optional<ThinkParser> think_;
  std::optional<HarmonyParser> harmony_;
  std::optional<ToolCallParser> calls_;
};

}  // namespace engine::tools
