#include "server/api/openai_shapes.h"

#include <algorithm>

namespace server {

nlohmann::json openai_usage_json(const UsageTotals& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

std::string openai_stream_error(const ApiError& error) { return sse_data(error_json(error)); }

nlohmann::json openai_timings_json(const UsageTotals& u) {
  if (u.ttft_ms < 0) return nullptr;
  const int64_t prompt_n = u.prompt_tokens - u.cached_tokens;
  const double predicted_ms = std::max(0.0, u.last_token_ms - u.ttft_ms);
  const int64_t after_first = std::max<int64_t>(0, u.completion_tokens - 1);  // the first ends the prompt's time
  return {{"prompt_n", prompt_n},
          {"prompt_ms", u.ttft_ms},
          {"prompt_per_second", u.ttft_ms > 0 ? 1000.0 * static_cast<double>(prompt_n) / u.ttft_ms : 0.0},
          {"predicted_n", u.completion_tokens},
          {"predicted_ms", predicted_ms},
          {"predicted_per_second", predicted_ms > 0 ? 1000.0 * static_cast<double>(after_first) / predicted_ms : 0.0},
          {"cache_n", u.cached_tokens}};
}

}  // namespace server
