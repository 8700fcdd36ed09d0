// GET /v1/models/{id}/metadata[?full=true]: the GGUF header, metadata and tensor table.
#include "server/gguf_json.h"
#include "server/handlers/handlers.h"

namespace server {

void add_metadata_routes(Router& router, App& app) {
  router.add("GET", "/v1/models/{id}/metadata",
             [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
               ctx.stats->endpoint = "/v1/models/{id}/metadata";
    require_ready(app);
               require_model(app, req.params.at("id"));
               const auto full = req.query.find("full");
               const bool all = full != req.query.end() && (full->second == "true" || full->second == "1");
               nlohmann::json j = file_to_json(*app.file, all);
               j["id"] = app.model_id;
               j["object"] = "model.metadata";
               co_return HttpResponse::json(200, dump(j));
             });
}

}  // namespace server
