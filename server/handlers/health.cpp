// GET /health: 200 when serving, 503 while the model loads (single-model mode) or the server drains.
#include <nlohmann/json.hpp>

#include "server/handlers/handlers.h"

namespace server {

void add_health_routes(Router& router, ModelRegistry& models) {
  router.add("GET", "/health", [&models](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    // The router is up as soon as it listens; its models load on demand (GET /v1/models says how).
    ModelState state = ModelState::kLoaded;
    if (!models.router()) {
      const std::vector<ModelStatus> list = models.list();
      state = list.empty() ? ModelState::kLoading : list.front().state;
    }
    const bool draining = models.draining();
    const bool ok = !draining && state == ModelState::kLoaded;
    const char* status = draining ? "draining" : ok ? "ok" : state == ModelState::kFailed ? "error" : "loading";
    HttpResponse r = HttpResponse::json(ok ? 200 : 503, nlohmann::json{{"status", status}}.dump());
    if (!ok) r.headers.emplace_back("Retry-After", "1");
    co_return r;
  }, RouteOptions::open());
}

}  // namespace server
