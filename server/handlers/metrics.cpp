// GET /metrics: Prometheus text exposition.
#include "engine/runtime/scheduler.h"
#include "server/handlers/handlers.h"

namespace server {

void add_metrics_routes(Router& router, App& app) {
  router.add("GET", "/metrics", [&app](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    const engine::SchedulerStats stats = app.scheduler != nullptr ? app.scheduler->stats() : engine::SchedulerStats{};
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = app.metrics.render(stats, app.model_id);
    co_return r;
  });
}

}  // namespace server
