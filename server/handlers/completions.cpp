// POST /v1/completions: OpenAI's legacy completions (text_completion objects), streamed or not.
#include "server/api/openai_completions/completion_request.h"
#include "server/api/openai_completions/completion_response.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"

namespace server {

void add_completions_routes(Router& router, ModelRegistry& models) {
  router.add("POST", "/v1/completions", generation_handler<CompletionRequest, CompletionFormatter>(models, prepare_completion),
             RouteOptions::json_api());
}

}  // namespace server
