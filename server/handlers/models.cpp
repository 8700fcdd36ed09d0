// GET /v1/models and GET /v1/models/{id}: OpenAI's list and model objects.
#include <nlohmann/json.hpp>

#include "server/api/api_error.h"
#include "server/handlers/handlers.h"

namespace server {

namespace {

// OpenAI's model object, plus what the model serves (capabilities, pooling, n_embd: see
// model_kind_json), as Ollama and llama-server add their own.
nlohmann::json model_object(const App& app) {
  nlohmann::json m = {{"id", app.model_id}, {"object", "model"}, {"created", app.model_created},
                      {"owned_by", "ggufd"}};
  m.update(model_kind_json(app));
  return m;
}

}  // namespace

void add_models_routes(Router& router, App& app) {
  router.add("GET", "/v1/models", [&app](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    require_ready(app);
    const nlohmann::json body = {{"object", "list"}, {"data", nlohmann::json::array({model_object(app)})}};
    co_return HttpResponse::json(200, body.dump());
  });
  router.add("GET", "/v1/models/{id+}", [&app](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    require_ready(app);
    require_model(app, req.params.at("id"));
    co_return HttpResponse::json(200, model_object(app).dump());
  });
}

}  // namespace server
