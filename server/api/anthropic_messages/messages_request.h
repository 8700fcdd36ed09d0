// POST /v1/messages (Anthropic's Messages API) up to submission: the body translated into the core
// request -- system (string or text blocks), messages with string or block content (text, image,
// tool_use, tool_result, thinking), tools with input_schema, tool_choice, thinking and
// output_config, sampling and stop_sequences -- and prepared. Coroutine-free (work pool, fuzzer).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/api/app.h"
#include "server/api/core/request.h"

namespace server {

struct MessagesRequest : PreparedRequest {
  std::string id;  // "msg_..."
};

// The body as the core request, and a new id in `out`; remote images are left to fetch
// (ImageInput::url), prepare_generation() finishes it. Throws ApiError (4xx) naming what is wrong
// (the route answers it in Anthropic's error shape, anthropic_error_json). max_tokens is required;
// more than the context leaves is not an error (generation stops when the context is full,
// stop_reason "max_tokens").
CoreRequest translate_messages(const App& app, std::string_view body, MessagesRequest& out);

// Both steps at once, for callers that fetch nothing (a remote image is then a 400).
MessagesRequest prepare_messages(const App& app, std::string_view body);

// POST /v1/messages/count_tokens: the body as the core request (max_tokens not needed), and
// {"input_tokens": N} for it once its remote images are fetched.
CoreRequest translate_message_count(const App& app, std::string_view body);
nlohmann::json count_message_tokens(const App& app, const CoreRequest& core);

// Claude Code's first system block, "x-anthropic-billing-header: cc_version=...; cc_entrypoint=...;
// cch=<nonce>;", changes on every request and would defeat the prefix cache. Returns `text`
// without that header (its `key=value;` fields up to the end of the line); text that does not
// start with it is returned unchanged.
std::string without_billing_header(const std::string& text);

}  // namespace server
