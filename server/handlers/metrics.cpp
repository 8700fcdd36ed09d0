// GET /metrics: Prometheus text exposition: the server's request counters, then each model's
// series labelled model="<id>" (a model not loaded shows its counters and zero gauges).
#include "engine/runtime/scheduler.h"
#include "server/handlers/handlers.h"

namespace server {

void add_metrics_routes(Router& router, ModelRegistry& models, const Metrics& http) {
  router.add("GET", "/metrics", [&models, &http](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    MetricsPage page;
    http.render_http(page);
    models.render_metrics(page);
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = page.text();
    co_return r;
  });
}

}  // namespace server
