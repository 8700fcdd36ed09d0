// GET /v1/models and GET /v1/models/{id}: OpenAI's list and model objects.
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/handlers/handlers.h"

namespace server {

namespace {

nlohmann::json model_object(const App& app) {
  return {{"id", app.model_id}, {"object", "model"}, {"created", app.model_created},
          {"owned_by", "ggufd"}};
}

}  // namespace

void require_model(const App& app, const std::string& id) {
  if (id != app.model_id) {
    throw ApiError(404, "The model '" + id + "' does not exist", "invalid_request_error", "model",
                   "model_not_found");
  }
}

void require_ready(const App& app) {
  if (!app.ready) {
    ApiError e(503, "the model is still loading; retry shortly", "server_error", std::nullopt, "loading");
    e.retry_after = 1;
    throw e;
  }
}

void add_models_routes(Router& router, App& app) {
  router.add("GET", "/v1/models", [&app](HttpRequest&, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    ctx.stats->endpoint = "/v1/models";
    require_ready(app);
    const nlohmann::json body = {{"object", "list"}, {"data", nlohmann::json::array({model_object(app)})}};
    co_return HttpResponse::json(200, body.dump());
  });
  router.add("GET", "/v1/models/{id}", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    ctx.stats->endpoint = "/v1/models/{id}";
    require_ready(app);
    require_model(app, req.params.at("id"));
    co_return HttpResponse::json(200, model_object(app).dump());
  });
}

}  // namespace server
