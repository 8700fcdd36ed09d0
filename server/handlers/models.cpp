// GET /v1/models and GET /v1/models/{id}: OpenAI's list and model objects, with each model's
// status. llama-server's router endpoints: GET /models, POST /models/load, POST /models/unload;
// and GET /models/events, the server-sent events of model status and load progress.
#include <nlohmann/json.hpp>

#include "server/api/api_error.h"
#include "server/api/request_json.h"
#include "server/handlers/handlers.h"

namespace server {

namespace {

// OpenAI's model object, plus its status and, once loaded, what it serves (capabilities,
// pooling, n_embd, architecture: see model_kind_json), as Ollama and llama-server add their own.
nlohmann::json model_object(const ModelStatus& m) {
  nlohmann::json o = {{"id", m.id},           {"object", "model"},         {"created", m.created},
                      {"owned_by", "ggufd"},  {"status", state_name(m.state)}, {"size", m.file_bytes}};
  if (!m.aliases.empty()) o["aliases"] = m.aliases;
  if (m.state == ModelState::kFailed) o["error"] = m.error;
  if (m.memory_bytes > 0) o["memory_bytes"] = m.memory_bytes;
  if (!m.facts.architecture.empty()) o["architecture"] = m.facts.architecture;
  if (m.facts.n_params > 0) o["parameters"] = m.facts.n_params;
  if (!m.facts.quantization.empty()) o["quantization"] = m.facts.quantization;
  if (m.facts.context_length > 0) o["context_length"] = m.facts.context_length;
  if (m.kind.is_object()) {
    o.update(m.kind);
  } else if (!m.facts.architecture.empty()) {  // not loaded: what its architecture serves
    o["capabilities"] = m.facts.generates ? nlohmann::json{"completion", "chat"} : nlohmann::json{"embeddings"};
  }
  return o;
}

// llama-server's shape of a router's model (GET /models).
nlohmann::json router_model_object(const ModelStatus& m) {
  nlohmann::json status = {{"value", state_name(m.state)}};
  if (m.state == ModelState::kFailed) {
    status["failed"] = true;
    status["error"] = m.error;
  }
  return {{"id", m.id},
          {"aliases", m.aliases},
          {"object", "model"},
          {"owned_by", "ggufd"},
          {"created", m.created},
          {"status", status},
          {"architecture", {{"input_modalities", m.kind.is_object() && m.kind.contains("input_modalities")
                                                     ? m.kind["input_modalities"] : nlohmann::json{"text"}},
                            {"output_modalities", {"text"}}}},
          {"source", m.source},
          {"path", m.path},
          {"size", m.file_bytes}};
}

// Single-model mode lists its model once loaded (as before the router); the router lists all.
std::vector<ModelStatus> listed(ModelRegistry& models) {
  std::vector<ModelStatus> list = models.list();
  if (!models.router() && (list.empty() || list.front().state != ModelState::kLoaded)) {
    throw retry_later("the model is still loading; retry shortly", "loading");
  }
  return list;
}

std::string body_model(const HttpRequest& req) {
  const nlohmann::json body = parse_object(req.body, kDefaultMaxJsonDepth);
  const std::optional<std::string> id = get_string(body, "model");
  if (!id || id->empty()) throw invalid_field("model", "model: required (the id of a model GET /models lists)");
  return *id;
}

// GET /models/events: each event of the registry after the stream starts, as `data:` lines.
class ModelEvents : public ChunkSource {
 public:
  ModelEvents(ModelRegistry& models, net::any_io_executor ex) : models_(models), timer_(ex) {
    models_.events_since(cursor_);  // from now on
  }
  net::awaitable<std::optional<std::string>> next() override {
    if (first_) {
      first_ = false;
      co_return std::string(": ggufd model events\n\n");
    }
    for (int quiet = 0; !cancelled_; ++quiet) {
      std::string out;
      for (const nlohmann::json& ev : models_.events_since(cursor_)) out += "data: " + dump_json(ev) + "\n\n";
      if (!out.empty()) co_return out;
      if (quiet >= 150) co_return std::string(": keep-alive\n\n");  // about 15 s of nothing
      timer_.expires_after(std::chrono::milliseconds(100));
      boost::system::error_code ec;
      co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    co_return std::nullopt;
  }
  void cancel() override {
    cancelled_ = true;
    timer_.cancel();
  }

 private:
  ModelRegistry& models_;
  net::steady_timer timer_;
  uint64_t cursor_ = 0;
  bool first_ = true;
  bool cancelled_ = false;
};

}  // namespace

void add_models_routes(Router& router, ModelRegistry& models) {
  router.add("GET", "/v1/models", [&models](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    nlohmann::json data = nlohmann::json::array();
    for (const ModelStatus& m : listed(models)) data.push_back(model_object(m));
    co_return HttpResponse::json(200, nlohmann::json{{"object", "list"}, {"data", data}}.dump());
  });
  router.add("GET", "/v1/models/{id+}", [&models](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    const std::string& id = req.params.at("id");
    for (const ModelStatus& m : listed(models)) {
      const bool named = m.id == id || std::find(m.aliases.begin(), m.aliases.end(), id) != m.aliases.end();
      if (named) co_return HttpResponse::json(200, model_object(m).dump());
    }
    throw ApiError(404, "The model '" + excerpt(id) + "' does not exist", "invalid_request_error", "model",
                   "model_not_found");
  });
}

void add_router_routes(Router& router, ModelRegistry& models) {
  router.add("GET", "/models", [&models](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    nlohmann::json data = nlohmann::json::array();
    for (const ModelStatus& m : models.list()) data.push_back(router_model_object(m));
    co_return HttpResponse::json(200, nlohmann::json{{"object", "list"}, {"data", data}}.dump());
  });
  router.add("POST", "/models/load", [&models](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    const std::string status = models.load(body_model(req));
    co_return HttpResponse::json(200, nlohmann::json{{"success", true}, {"status", status}}.dump());
  }, RouteOptions::json_api(64 << 10));
  router.add("POST", "/models/unload", [&models](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    models.unload(body_model(req));
    co_return HttpResponse::json(200, R"({"success":true})");
  }, RouteOptions::json_api(64 << 10));
  router.add("GET", "/models/events", [&models](HttpRequest&, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    HttpResponse r;
    r.content_type = "text/event-stream";
    r.headers.emplace_back("Cache-Control", "no-cache");
    r.stream = std::make_shared<ModelEvents>(models, ctx.executor);
    co_return r;
  });
}

}  // namespace server
