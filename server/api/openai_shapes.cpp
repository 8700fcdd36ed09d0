#include "server/api/openai_shapes.h"

namespace server {

nlohmann::json openai_usage_json(const UsageTotals& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

std::string openai_stream_error(const ApiError& error) { return sse_data(error_json(error)); }

}  // namespace server
