// POST /v1/chat/completions: messages through the chat template; chat.completion objects or
// chat.completion.chunk events.
#include "server/api/openai_chat/chat_request.h"
#include "server/api/openai_chat/chat_response.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"

namespace server {

void add_chat_completions_routes(Router& router, ModelRegistry& models) {
  router.add("POST", "/v1/chat/completions", generation_handler<ChatRequest, ChatFormatter>(models, translate_chat),
             RouteOptions::json_api());
}

}  // namespace server
