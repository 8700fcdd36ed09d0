// POST /tokenize and POST /detokenize (see server/api/tokenize_request.h), on the work pool.
#include "server/api/tokenize_request.h"
#include "server/handlers/handlers.h"
#include "server/work_pool.h"

namespace server {

void add_tokenize_routes(Router& router, ModelRegistry& models, size_t body_limit) {
  const RouteOptions options = RouteOptions::json_api(body_limit);
  router.add("POST", "/tokenize", [&models](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    const std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
    App& app = lease->app();
    std::string body = co_await app.work->run([&app, &req] { return tokenize_response(app, req.body); });
    co_return HttpResponse::json(200, std::move(body));
  }, options);
  router.add("POST", "/detokenize", [&models](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    const std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
    App& app = lease->app();
    std::string body = co_await app.work->run([&app, &req] { return detokenize_response(app, req.body); });
    co_return HttpResponse::json(200, std::move(body));
  }, options);
}

}  // namespace server
