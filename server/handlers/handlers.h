// One endpoint (or a closely related pair) per file; each adds its routes to the router.
#pragma once

#include "server/app.h"
#include "server/router.h"

namespace server {

void add_health_routes(Router& router, App& app);
void add_models_routes(Router& router, App& app);
void add_metadata_routes(Router& router, App& app);
void add_props_routes(Router& router, App& app);
void add_metrics_routes(Router& router, App& app);
void add_tokenize_routes(Router& router, App& app);
void add_completions_routes(Router& router, App& app);
void add_chat_completions_routes(Router& router, App& app);

// Throws a 404 (model_not_found) unless `id` names the served model.
void require_model(const App& app, const std::string& id);

// Throws a 503 (with Retry-After) while the model is still loading.
void require_ready(const App& app);

}  // namespace server
