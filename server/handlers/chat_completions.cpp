// POST /v1/chat/completions: messages through the chat template; chat.completion objects or
// chat.completion.chunk events.
#include "server/api/chat_request.h"
#include "server/api/chat_response.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"
#include "server/work_pool.h"

namespace server {

void add_chat_completions_routes(Router& router, App& app) {
  router.add("POST", "/v1/chat/completions", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    require_ready(app);
    auto request = std::make_shared<const ChatRequest>(
        co_await app.work->run([&app, &req] { return prepare_chat(app, req.body); }));
    auto format = std::make_shared<const ChatFormatter>(app, request);
    const std::vector<std::vector<int32_t>> prompts(1, request->prompt);  // GCC 12: no braced list in co_await
    HttpResponse response = co_await serve_generation(app, ctx, prompts, request->params, format);
    co_return response;
  }, RouteOptions::json_api());
}

}  // namespace server
