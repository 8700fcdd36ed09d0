// GET /metrics: Prometheus text exposition.
#include "engine/runtime/scheduler.h"
#include "server/handlers/handlers.h"

namespace server {

void add_metrics_routes(Router& router, App& app) {
  router.add("GET", "/metrics", [&app](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    EngineGauges g;
    if (app.scheduler != nullptr) {
      const engine::SchedulerStats s = app.scheduler->stats();
      g.queue_depth = s.queued;
      g.active_slots = s.active_slots;
      g.total_slots = s.total_slots;
      g.kv_cells_used = s.kv_cells_used;
      g.kv_cells_total = s.kv_cells_total;
      g.generation_tokens_per_second = s.generation_tokens_per_second;
      g.prompt_tokens_per_second = s.prompt_tokens_per_second;
    }
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = app.metrics.render(g);
    co_return r;
  });
}

}  // namespace server
