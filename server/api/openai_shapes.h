// Shapes the OpenAI dialects share (chat, completions, and the usage counts of responses).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/api/api_error.h"
#include "server/api/core/formatter.h"

namespace server {

// The usage object of chat and completions: prompt, completion and total tokens, and
// prompt_tokens_details.cached_tokens.
nlohmann::json openai_usage_json(const UsageTotals& usage);

// The SSE event of a failed chat or completions stream: the error object (error_json).
std::string openai_stream_error(const ApiError& error);

}  // namespace server
