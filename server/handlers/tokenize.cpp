// POST /tokenize and POST /detokenize (see server/api/tokenize_request.h), on the work pool.
#include "server/api/tokenize_request.h"
#include "server/handlers/handlers.h"
#include "server/work_pool.h"

namespace server {

void add_tokenize_routes(Router& router, App& app, size_t body_limit) {
  const RouteOptions options = RouteOptions::json_api(body_limit);
  router.add("POST", "/tokenize", [&app](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    require_ready(app);
    std::string body = co_await app.work->run([&app, &req] { return tokenize_response(app, req.body); });
    co_return HttpResponse::json(200, std::move(body));
  }, options);
  router.add("POST", "/detokenize", [&app](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    require_ready(app);
    std::string body = co_await app.work->run([&app, &req] { return detokenize_response(app, req.body); });
    co_return HttpResponse::json(200, std::move(body));
  }, options);
}

}  // namespace server
