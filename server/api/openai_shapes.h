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

// llama-server's `timings` of a chat completion (its web page and tools read them), or null when
// no token was generated: prompt_n (tokens computed, not cached), prompt_ms (to the first token),
// predicted_n, predicted_ms (first to last token), their rates, cache_n.
nlohmann::json openai_timings_json(const UsageTotals& usage);

// The SSE event of a failed chat or completions stream: the error object (error_json).
std::string openai_stream_error(const ApiError& error);

}  // namespace server
