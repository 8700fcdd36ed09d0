// POST /v1/chat/completions up to submission: the body parsed and validated, the messages
// rendered through the chat template and tokenized. Coroutine-free (work pool, fuzzer).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/app.h"
#include "engine/text/tools/answer_parser.h"
#include "server/api/generation_params.h"
#include "server/api/tool_request.h"

namespace server {

struct ChatRequest {
  GenerationParams params;
  std::vector<std::vector<int32_t>> prompts;  // one: the rendered conversation
  std::vector<std::string> ignored_fields;    // unknown top-level fields (request_fields.h)
  ToolRequest tools;                          // offered functions and the client's choice
  engine::tools::AnswerOptions answer;        // how the output splits into reasoning, content, calls
};

// Throws ApiError (4xx) naming what is wrong.
ChatRequest prepare_chat(const App& app, std::string_view body);

// A chat body's `reasoning_effort` (else `default_effort`, the server's --reasoning-effort; "" for
// none) and `chat_template_kwargs` as template variables: gpt-oss reads reasoning_effort (low /
// medium / high; "none" and "minimal" as low); "none" turns thinking off (enable_thinking = false)
// in templates that think, unless the kwargs say otherwise. Throws ApiError 400 for a bad value.
// prepare_chat and `ggufd template` both use it.
nlohmann::ordered_json template_variables(const nlohmann::ordered_json& body, const std::string& default_effort);

}  // namespace server
