// POST /v1/messages (Anthropic's Messages API) up to submission: the body translated into the core
// request -- system (string or text blocks), messages with string or block content (text,
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

// Throws ApiError (4xx) naming what is wrong (the route answers it in Anthropic's error shape,
// anthropic_error_json). max_tokens is required; more than the context leaves is not an error
// (generation stops when the context is full, stop_reason "max_tokens").
MessagesRequest prepare_messages(const App& app, std::string_view body);

// POST /v1/messages/count_tokens: {"input_tokens": N} for such a request (max_tokens not needed).
nlohmann::json count_message_tokens(const App& app, std::string_view body);

// Claude Code's first system block, "x-anthropic-billing-header: cc_version=...; cc_entrypoint=...;
// cch=<nonce>;", changes on every request and would defeat the prefix cache. Returns `text`
// without that header (its `key=value;` fields up to the end of the line); text that does not
// start with it is returned unchanged.
std::string without_billing_header(const std::string& text);

}  // namespace server
