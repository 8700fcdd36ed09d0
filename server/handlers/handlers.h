// One endpoint (or a closely related pair) per file; each adds its routes to the router.
#pragma once

#include "server/api/app.h"
#include "server/model_registry.h"
#include "server/router.h"

namespace server {

// Every handler finds its model through the registry (lease_for_body / lease_for_query).
void add_health_routes(Router& router, ModelRegistry& models);
void add_models_routes(Router& router, ModelRegistry& models);
// llama-server's router endpoints: GET /models, POST /models/load, POST /models/unload, and the
// SSE stream of model events GET /models/events.
void add_router_routes(Router& router, ModelRegistry& models);
void add_metadata_routes(Router& router, ModelRegistry& models);
void add_props_routes(Router& router, ModelRegistry& models);
// `http`: the server's request counters (by endpoint and status); the rest is per model.
void add_metrics_routes(Router& router, ModelRegistry& models, const Metrics& http);
// `body_limit`: the largest /tokenize or /detokenize body (--tokenize-limit).
void add_tokenize_routes(Router& router, ModelRegistry& models, size_t body_limit);
void add_completions_routes(Router& router, ModelRegistry& models);
void add_chat_completions_routes(Router& router, ModelRegistry& models);
void add_responses_routes(Router& router, ModelRegistry& models);
void add_messages_routes(Router& router, ModelRegistry& models);
void add_embeddings_routes(Router& router, ModelRegistry& models);
// GET / (the chat page for browsers when `webui`, else Ollama's "is running") and GET /webui/{file}.
void add_root_routes(Router& router, bool webui);
// Ollama's API (/api/version, /api/chat, /api/generate, /api/embed, /api/embeddings) and, through
// add_ollama_model_routes, its model endpoints (/api/tags, /api/ps, /api/show).
void add_ollama_routes(Router& router, ModelRegistry& models);
void add_ollama_model_routes(Router& router, ModelRegistry& models);
// Ollama's /api/pull, /api/delete, /api/copy (ollama_pull.cpp), over the router and its downloads.
void add_ollama_pull_routes(Router& router, ModelRegistry& models);

}  // namespace server
