// POST /v1/responses (OpenAI's Responses API) up to submission: the body translated into the
// core request -- `input` items into the conversation (after the stored conversation of
// previous_response_id), function tools, tool_choice, text.format, reasoning, sampling -- and
// prepared. Coroutine-free (work pool, fuzzer).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/api_error.h"
#include "server/api/app.h"
#include "server/api/core/request.h"

namespace server {

struct ResponsesRequest : PreparedRequest {
  std::string id;                       // "resp_..."
  bool store = true;                    // keep it for previous_response_id / GET
  bool summary = false;                 // reasoning.summary asked: reasoning also as summary events
  std::vector<Message> conversation;    // earlier turns and this input, without the instructions
  // Fields the response object echoes (instructions, tools, tool_choice, text, reasoning, ...).
  nlohmann::json echo = nlohmann::json::object();
  // A streamed request whose prompt does not fit the context: answered with response.failed
  // (error.code context_length_exceeded) instead of a 400.
  std::optional<ApiError> failure;
};

// The body as the core request, and what only this dialect needs in `out` (a new id, store,
// summary, conversation, echo). Remote images are left to fetch (ImageInput::url). Throws
// ApiError (4xx) naming what is wrong; a previous_response_id the store does not hold is a 404
// naming it.
CoreRequest translate_responses(const App& app, std::string_view body, ResponsesRequest& out);

// The second step: `r.conversation` gets the images fetched into `core` (so a later
// previous_response_id does not fetch them again), then prepare_generation(); a streamed request
// whose prompt does not fit gets `failure` instead of the throw. Throws ApiError (4xx).
void prepare_responses(const App& app, CoreRequest core, ResponsesRequest& r);

// Both steps at once, for callers that fetch nothing (a remote image is then a 400).
ResponsesRequest prepare_responses(const App& app, std::string_view body);

// POST /v1/responses/input_tokens: the prompt tokens of such a request (translate_responses; its
// tools and instructions included), without generating. {"object": "response.input_tokens",
// "input_tokens"}.
nlohmann::json count_response_tokens(const App& app, const CoreRequest& core);

}  // namespace server
