// POST /v1/chat/completions up to submission: the body parsed and validated, translated into the
// core request (core/request.h) and prepared. Coroutine-free (work pool, fuzzer).
#pragma once

#include <string_view>

#include "server/api/app.h"
#include "server/api/core/request.h"

namespace server {

// The chat dialect adds nothing to the prepared request (n, logprobs, include_usage are in params).
struct ChatRequest : PreparedRequest {};

// Throws ApiError (4xx) naming what is wrong.
ChatRequest prepare_chat(const App& app, std::string_view body);

// The chat messages as the core's conversation: content strings or text parts, assistant
// tool_calls (function.arguments a JSON object in a string, parsed keeping its key order),
// tool results, earlier reasoning (reasoning_content, reasoning or thinking); other keys of a
// message go to the template as they are. Throws ApiError 400 naming the message.
std::vector<Message> chat_conversation(const nlohmann::ordered_json& messages);

}  // namespace server
