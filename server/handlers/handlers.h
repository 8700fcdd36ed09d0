// One endpoint (or a closely related pair) per file; each adds its routes to the router.
#pragma once

#include "server/api/app.h"
#include "server/router.h"

namespace server {

void add_health_routes(Router& router, App& app);
void add_models_routes(Router& router, App& app);
void add_metadata_routes(Router& router, App& app);
void add_props_routes(Router& router, App& app);
void add_metrics_routes(Router& router, App& app);
// `body_limit`: the largest /tokenize or /detokenize body (--tokenize-limit).
void add_tokenize_routes(Router& router, App& app, size_t body_limit);
void add_completions_routes(Router& router, App& app);
void add_chat_completions_routes(Router& router, App& app);
void add_responses_routes(Router& router, App& app);
void add_messages_routes(Router& router, App& app);
void add_embeddings_routes(Router& router, App& app);

}  // namespace server
