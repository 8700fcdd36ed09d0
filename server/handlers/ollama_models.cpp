// Ollama's model endpoints: GET /api/tags (every model the registry knows), GET /api/ps (the
// loaded ones) and POST /api/show (one model's details, metadata, template and capabilities).
// Details come from each model's GGUF header, as the registry read it when it found the file
// (ModelStatus::facts); /api/show reads the header on the work pool.
// A model's digest is the SHA-256 of its path, file size and modification time: stable while the
// file is, cheap (the file's own hash would read gigabytes), not the content hash Ollama gives.
#include <algorithm>

#include "gguf/file_set.h"
#include "server/api/ollama/ollama_models.h"
#include "server/api/ollama/ollama_request.h"
#include "server/api/ollama/ollama_response.h"
#include "server/api/request_json.h"
#include "server/handlers/handlers.h"
#include "server/hub/hub.h"

namespace server {

using nlohmann::json;

namespace {

// Expiry shown for loaded models without a planned unload (keep_alive or --sleep-idle-seconds):
// they stay until evicted (Ollama's "forever").
// (A date within the range of nanoseconds since 1970 in int64, which Go's clients parse into.)
constexpr int64_t kNeverExpires = 7258118400;  // 2200-01-01

std::string model_digest(const ModelStatus& m) {
  return hub::sha256_hex(m.path + "\n" + std::to_string(m.file_bytes) + "\n" + std::to_string(m.created));
}

json entry(const ModelStatus& m) {
  return {{"name", m.id}, {"model", m.id}, {"modified_at", ollama_time_of(m.created)}, {"size", m.file_bytes},
          {"digest", model_digest(m)}, {"details", ollama_details(m.facts)}};
}

// The model's lease when it is loaded (not waiting, not loading), else nullopt.
std::optional<ModelLease> loaded_lease(ModelRegistry& models, const std::string& id) {
  try {
    return models.try_acquire(id);
  } catch (const ApiError&) {
    return std::nullopt;
  }
}

json tags(ModelRegistry& models) {
  json list = json::array();
  for (const ModelStatus& m : models.list()) list.push_back(entry(m));
  return {{"models", std::move(list)}};
}

json ps(ModelRegistry& models) {
  json list = json::array();
  for (const ModelStatus& m : models.list()) {
    if (m.state != ModelState::kLoaded) continue;
    std::optional<ModelLease> lease = loaded_lease(models, m.id);
    if (!lease) continue;  // unloaded meanwhile
    json e = entry(m);
    e["size"] = m.memory_bytes > 0 ? m.memory_bytes : m.file_bytes;
    e["size_vram"] = 0;
    e["expires_at"] = ollama_time_of(m.expires_at > 0 ? std::min(m.expires_at, kNeverExpires) : kNeverExpires);
    e["context_length"] = lease->app().settings.n_ctx;
    list.push_back(std::move(e));
  }
  return {{"models", std::move(list)}};
}

// The status of the model `name` (an id or alias; single mode: the one model, whatever the name).
ModelStatus find_status(ModelRegistry& models, const std::string& name) {
  const std::vector<ModelStatus> list = models.list();
  for (const ModelStatus& m : list) {
    if (m.id == name || std::find(m.aliases.begin(), m.aliases.end(), name) != m.aliases.end()) return m;
  }
  if (!models.router() && !list.empty()) return list.front();
  const std::string cached = models.cached_id(name);  // a Hub name it was pulled by
  for (const ModelStatus& m : list) {
    if (!cached.empty() && m.id == cached) return m;
  }
  throw ApiError(404, "model '" + excerpt(name) + "' not found", "not_found_error", "model", "model_not_found");
}

json show(ModelRegistry& models, const std::string& text) {
  const json body = parse_object(text, kDefaultMaxJsonDepth);
  const std::optional<std::string> model = get_string(body, "model");
  const std::optional<std::string> name = get_string(body, "name");
  if (model.value_or(name.value_or("")).empty()) throw invalid_field("model", "'model' is required");
  const bool verbose = get_bool(body, "verbose").value_or(false);
  const ModelStatus m = find_status(models, model && !model->empty() ? *model : *name);
  std::optional<ModelLease> lease = loaded_lease(models, m.id);
  gguf::FileSet files = [&] {
    try {
      return gguf::FileSet::open(m.path);
    } catch (const std::exception& e) {
      throw ApiError(500, "cannot read the model file: " + std::string(e.what()), "server_error");
    }
  }();
  return ollama_show_json(files, m.path, m.created, lease ? &lease->app() : nullptr, verbose);
}

}  // namespace

void add_ollama_model_routes(Router& router, ModelRegistry& models) {
  const RouteOptions options = RouteOptions{}.with_errors(ollama_error_json);
  router.add("GET", "/api/tags", [&models](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    json body = co_await models.work().run([&models] { return tags(models); });
    co_return HttpResponse::json(200, dump_json(body));
  }, options);
  router.add("GET", "/api/ps", [&models](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    json body = co_await models.work().run([&models] { return ps(models); });
    co_return HttpResponse::json(200, dump_json(body));
  }, options);
  router.add("POST", "/api/show", [&models](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    json body = co_await models.work().run([&models, &req] { return show(models, req.body); });
    co_return HttpResponse::json(200, dump_json(body));
  }, options);
}

}  // namespace server
