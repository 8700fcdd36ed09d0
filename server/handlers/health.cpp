// GET /health: 200 when the model is loaded and serving, 503 while loading or draining.
#include <nlohmann/json.hpp>

#include "server/handlers/handlers.h"

namespace server {

void add_health_routes(Router& router, App& app) {
  router.add("GET", "/health", [&app](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    const char* status = app.draining ? "draining" : app.ready ? "ok" : "loading";
    const int code = app.ready && !app.draining ? 200 : 503;
    HttpResponse r = HttpResponse::json(code, nlohmann::json{{"status", status}}.dump());
    if (code == 503) r.headers.emplace_back("Retry-After", "1");
    co_return r;
  }, RouteOptions::open());
}

}  // namespace server
