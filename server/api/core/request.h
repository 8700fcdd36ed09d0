// The one generation request every dialect's translator produces, and its preparation: the
// conversation rendered through the chat template and tokenized (or raw prompts), tool calls
// constrained, reasoning options handed to the template, the operator's token cap applied, and
// the request checked against the server. /v1/completions, /v1/chat/completions, /v1/responses and
// /v1/messages differ only in how JSON becomes a CoreRequest and how the output is formatted.
// Coroutine-free (work pool, fuzzer).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/text/tools/answer_parser.h"
#include "server/api/app.h"
#include "server/api/core/conversation.h"
#include "server/api/generation_params.h"
#include "server/api/tool_request.h"

namespace server {

// What the client asked of the model's reasoning.
struct ReasoningOptions {
  std::string effort;            // "", none, minimal, low, medium, high ("": the server's --reasoning-effort)
  std::optional<bool> thinking;  // on or off (the template's enable_thinking); none: the template's default
  int64_t budget_tokens = -1;    // a reasoning budget (Anthropic's thinking.budget_tokens); not enforced yet
};

// A generation request in no dialect's terms.
struct CoreRequest {
  // The prompt: a conversation through the chat template, or token prompts as they are (completions).
  std::vector<Message> conversation;
  std::vector<std::vector<int32_t>> raw_prompts;
  ToolRequest tools;                                   // offered functions, tool_choice, parallel calls
  ReasoningOptions reasoning;
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // extra template variables
  // Sampling, token limit (-1: none given), stop strings, n, stream, and the output constraint
  // (params.grammar: response_format / text.format / json_schema / grammar).
  GenerationParams params;
  std::vector<std::string> ignored_fields;             // named in x-ggufd-ignored-fields
};

// A request ready for the scheduler. Every dialect's request type derives from it.
struct PreparedRequest {
  GenerationParams params;
  std::vector<std::vector<int32_t>> prompts;          // one per prompt (a conversation: one)
  std::vector<std::string> ignored_fields;
  ToolRequest tools;
  engine::tools::AnswerOptions answer;                 // how the output splits into reasoning, text, calls
  bool capped = false;  // --max-tokens set params.max_tokens: the request asked for more, or for no limit
};

// Renders and tokenizes the conversation (or takes the raw prompts), compiles the tool-call
// grammar, applies --max-tokens (the default of a request without a limit, the cap of one with)
// and checks the result (check_generation). Throws ApiError 400 naming what is wrong.
void prepare_generation(const App& app, CoreRequest request, PreparedRequest& out);

// The template variables of a request: its kwargs, then reasoning_effort (the server's default
// when the request sets none; none and minimal as low) and enable_thinking (false for effort none
// or thinking off, true for thinking on), unless the kwargs set them.
nlohmann::ordered_json template_variables(const ReasoningOptions& reasoning, nlohmann::ordered_json kwargs,
                                          const App& app);
// The same with `default_effort` for the server's (`ggufd template`: "", none).
nlohmann::ordered_json template_variables(const ReasoningOptions& reasoning, nlohmann::ordered_json kwargs,
                                          const std::string& default_effort);

// The prompt tokens of a conversation as prepare_generation makes them (the count endpoints).
std::vector<int32_t> conversation_tokens(const App& app, const CoreRequest& request);

}  // namespace server
