#include "server/api/app.h"

#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

void require_model(const App& app, const std::string& id) {
  if (id != app.model_id) {
    throw ApiError(404, "The model '" + excerpt(id) + "' does not exist", "invalid_request_error", "model",
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

}  // namespace server
