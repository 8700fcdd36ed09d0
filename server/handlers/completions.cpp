// POST /v1/completions: OpenAI's legacy completions (text_completion objects), streamed or not.
#include "server/api/completion_request.h"
#include "server/api/completion_response.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"
#include "server/work_pool.h"

namespace server {

void add_completions_routes(Router& router, App& app) {
  router.add("POST", "/v1/completions", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    require_ready(app);
    auto request = std::make_shared<const CompletionRequest>(
        co_await app.work->run([&app, &req] { return prepare_completion(app, req.body); }));
    auto format = std::make_shared<const CompletionFormatter>(app, request);
    HttpResponse response = co_await serve_generation(app, ctx, request->prompts, request->params, format);
    co_return response;
  }, RouteOptions::json_api());
}

}  // namespace server
