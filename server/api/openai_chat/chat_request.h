// POST /v1/chat/completions up to submission: the body parsed and validated, translated into the
// core request (core/request.h) and prepared: two steps, with the remote images fetched between
// them (server/remote_media.h). Coroutine-free (work pool, fuzzer).
#pragma once

#include <string_view>

#include "server/api/app.h"
#include "server/api/core/request.h"

namespace server {

// The chat dialect adds nothing to the prepared request (n, logprobs, include_usage are in params).
struct ChatRequest : PreparedRequest {};

// The body as the core request (`out` gets nothing: the chat dialect has no fields of its own).
// Remote images are left to fetch (ImageInput::url); prepare_generation() finishes it. Throws
// ApiError (4xx) naming what is wrong.
CoreRequest translate_chat(const App& app, std::string_view body, ChatRequest& out);

// translate_chat() and prepare_generation() in one step, for callers that fetch nothing (a remote
// image is then a 400). Throws ApiError (4xx) naming what is wrong.
ChatRequest prepare_chat(const App& app, std::string_view body);

// The chat messages as the core's conversation: content strings or text and image_url parts
// (image_from_url), assistant tool_calls (function.arguments a JSON object in a string, parsed
// keeping its key order), tool results, earlier reasoning (reasoning_content, reasoning or
// thinking); other keys of a message go to the template as they are. Throws ApiError 400 naming
// the message.
std::vector<Message> chat_conversation(const App& app, const nlohmann::ordered_json& messages);

}  // namespace server
