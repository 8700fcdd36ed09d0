// GET /v1/models/{id}/metadata[?full=true]: the GGUF header, metadata and tensor table.
#include "server/api/gguf_json.h"
#include "server/handlers/handlers.h"
#include "server/work_pool.h"

namespace server {

void add_metadata_routes(Router& router, ModelRegistry& models) {
  router.add("GET", "/v1/models/{id+}/metadata", [&models](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    const std::string& id = req.params.at("id");
    const std::shared_ptr<ModelLease> lease = co_await models.acquire(id, ctx);
    App& app = lease->app();
    if (!models.router()) require_model(app, id);
    const auto full = req.query.find("full");
    const bool all = full != req.query.end() && (full->second == "true" || full->second == "1");
    // Every vocabulary entry with ?full=true is megabytes of JSON: built on the work pool.
    std::string body = co_await app.work->run([&app, all] {
      nlohmann::json j = file_to_json(*app.file, all);
      j["id"] = app.model_id;
      j["object"] = "model.metadata";
      j.update(model_kind_json(app));
      return dump(j);
    });
    co_return HttpResponse::json(200, std::move(body));
  });
}

}  // namespace server
