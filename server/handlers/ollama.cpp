// Ollama's API over the request core (its liveness answer at / is in webui.cpp): GET /api/version, POST
// /api/chat and /api/generate (NDJSON streams, application/x-ndjson, or one object), POST
// /api/embed and the legacy /api/embeddings. Errors are Ollama's {"error": "..."}; bodies need no
// Content-Type (Ollama's clients and curl -d send none or a form type). The model endpoints are
// in ollama_models.cpp.
#include "server/api/keep_alive.h"
#include "server/api/ollama/ollama_request.h"
#include "server/api/ollama/ollama_response.h"
#include "server/api/embedding_response.h"
#include "server/api/request_json.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"

namespace server {

namespace {

constexpr const char* kNdjson = "application/x-ndjson";

// Ollama's unload request: nothing to generate and keep_alive 0 (router on). A loaded model is
// released at once with keep_alive 0, so it unloads as soon as no request holds it; an unloaded
// one is not loaded to be unloaded. Answered done_reason "unload", as application/json like Ollama.
bool is_unload(const RoutingFields& fields) {
  return !fields.has_input && fields.model && !fields.model->empty() && fields.keep_alive &&
         parse_keep_alive(*fields.keep_alive) == std::chrono::milliseconds(0);
}
HttpResponse ollama_unload(ModelRegistry& models, const std::string& model, bool chat) {
  if (std::optional<ModelLease> held = models.try_acquire(model)) held->keep_alive(std::chrono::milliseconds(0));
  return HttpResponse::json(200, ndjson_line(ollama_done_json(model, chat, "unload")));
}

// The lease of the model the body names; with the router, null when the request is an unload,
// answered in `unloaded` (the routing fields, with whether there is input, are read once).
net::awaitable<std::shared_ptr<ModelLease>> ollama_lease(ModelRegistry& models, HttpRequest& req, RequestContext& ctx,
                                                         bool chat, std::optional<HttpResponse>& unloaded) {
  if (!models.router()) co_return co_await lease_for_body(models, req, ctx);
  const RoutingFields fields = co_await models.work().run([&req] { return peek_routing(req.body, true); });
  if (is_unload(fields)) {
    unloaded = ollama_unload(models, *fields.model, chat);
    co_return nullptr;
  }
  co_return co_await lease_for_fields(models, fields, ctx);
}

// /api/chat and /api/generate: leased, translated on the work pool, served by the core; a request
// with nothing to generate is answered at once (the lease has loaded the model).
net::awaitable<HttpResponse> ollama_generation(ModelRegistry& models, OllamaRequest (*prepare)(const App&, std::string_view),
                                               HttpRequest& req, RequestContext& ctx) {
  const bool chat = prepare == &prepare_ollama_chat;
  std::optional<HttpResponse> unloaded;
  const std::shared_ptr<ModelLease> lease = co_await ollama_lease(models, req, ctx, chat, unloaded);
  if (!lease) co_return std::move(*unloaded);
  App& app = lease->app();
  require_generation(app);
  auto request = std::make_shared<const OllamaRequest>(
      co_await app.work->run([&app, &req, prepare] { return prepare(app, req.body); }));
  if (request->load_only) {
    HttpResponse loaded = HttpResponse::json(200, ndjson_line(ollama_done_json(request->model, request->chat, "load")));
    if (request->params.stream) loaded.content_type = kNdjson;
    co_return loaded;
  }
  auto format = std::make_shared<const OllamaFormatter>(request, std::shared_ptr<const double>(ctx.stats, &ctx.stats->ttft_ms));
  HttpResponse response = co_await serve_generation(app, ctx, *request, format);
  if (response.stream) response.content_type = kNdjson;
  name_ignored_fields(response, request->ignored_fields);
  response.hold = lease;
  co_return response;
}

// /api/embed ({"embeddings": [[...]], counts and durations}) and /api/embeddings ({"embedding": [...]}).
net::awaitable<HttpResponse> ollama_embed(ModelRegistry& models, bool legacy, HttpRequest& req, RequestContext& ctx) {
  const auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
  App& app = lease->app();
  auto request = co_await app.work->run([&] { return prepare_ollama_embed(app, req.body, legacy); });
  int64_t tokens = 0;
  std::vector<std::vector<float>> vectors;
  if (!request.inputs.empty()) vectors = co_await embed_all(app, ctx, request.inputs, tokens);
  std::string body = co_await app.work->run([&] {
    for (std::vector<float>& v : vectors) shape_embedding(v, request.dimensions, request.normalize);
    if (legacy) {
      return dump_json({{"embedding", vectors.empty() ? std::vector<float>{} : vectors[0]}});
    }
    const nlohmann::json b = nlohmann::json::parse(std::string_view(req.body), nullptr, false);
    const int64_t total =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    return dump_json({{"model", ollama_model_name(app, b.is_object() ? b : nlohmann::json::object())},
                      {"embeddings", vectors},
                      {"total_duration", total},
                      {"load_duration", 0},
                      {"prompt_eval_count", tokens}});
  });
  HttpResponse response = HttpResponse::json(200, std::move(body));
  name_ignored_fields(response, request.ignored_fields);
  co_return response;
}

}  // namespace

void add_ollama_routes(Router& router, ModelRegistry& models) {
  const RouteOptions options = RouteOptions{}.with_errors(ollama_error_json);
  RouteOptions open = RouteOptions::open().with_errors(ollama_error_json);
  router.add("GET", "/api/version", [](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    co_return HttpResponse::json(200, nlohmann::json{{"version", GGUFD_VERSION}}.dump());
  }, open);
  auto generation = [&models](OllamaRequest (*prepare)(const App&, std::string_view)) -> Handler {
    return [&models, prepare](HttpRequest& req, RequestContext& ctx) { return ollama_generation(models, prepare, req, ctx); };
  };
  auto embed = [&models](bool legacy) -> Handler {
    return [&models, legacy](HttpRequest& req, RequestContext& ctx) { return ollama_embed(models, legacy, req, ctx); };
  };
  router.add("POST", "/api/chat", generation(prepare_ollama_chat), options);
  router.add("POST", "/api/generate", generation(prepare_ollama_generate), options);
  router.add("POST", "/api/embed", embed(false), options);
  router.add("POST", "/api/embeddings", embed(true), options);
  add_ollama_model_routes(router, models);
  add_ollama_pull_routes(router, models);
}

}  // namespace server
