// GET /v1/models/{id}/metadata[?full=true]: the GGUF header, metadata and tensor table.
#include "server/api/gguf_json.h"
#include "server/handlers/handlers.h"
#include "server/work_pool.h"

namespace server {

void add_metadata_routes(Router& router, App& app) {
  router.add("GET", "/v1/models/{id+}/metadata", [&app](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    require_ready(app);
    require_model(app, req.params.at("id"));
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
