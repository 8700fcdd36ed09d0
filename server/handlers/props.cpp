// GET /props: the server's settings, default sampling, chat template, build and CPU features.
#include <nlohmann/json.hpp>

#include "server/api/gguf_json.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/dispatch.h"
#include "server/handlers/handlers.h"

namespace server {

namespace {

nlohmann::json sampling_json(const engine::SamplingParams& s) {
  return {{"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"repeat_penalty", s.repeat_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"penalty_last_n", s.penalty_last_n}};
}

// The server's own part (router mode without ?model=): build, CPU, and the models it knows.
nlohmann::json router_props(ModelRegistry& models) {
  nlohmann::json ids = nlohmann::json::array();
  for (const ModelStatus& m : models.list()) ids.push_back(m.id);
  return {{"router", true},
          {"models", ids},
          {"build_info", "ggufd " GGUFD_VERSION},
          {"cpu_features", engine::cpu_features().to_string()},
          {"kernels", engine::kernels::dispatch().name}};
}

nlohmann::json model_props(const App& app) {
  const ServeSettings& s = app.settings;
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& [name, value] : s.model_settings) settings[name] = value;
  nlohmann::json body = {
      {"model", app.model_id},
      {"model_path", app.model_path},
      {"n_ctx", s.n_ctx},
      {"total_slots", s.n_slots},
      {"n_threads", s.n_threads},
      {"prefill_chunk", s.prefill_chunk},
      {"kv_cache_type", s.kv_type},
      {"default_generation_settings",
       {{"max_tokens", s.max_tokens > 0 ? nlohmann::json(s.max_tokens) : nlohmann::json(nullptr)}, {"sampling", sampling_json(s.default_sampling)}}},
      {"chat_template", s.chat_template},
      {"chat_template_source", s.chat_template_source},
      {"build_info", s.build_info},
      {"cpu_features", s.cpu_features},
      {"kernels", s.kernels},
      {"settings", settings},
      // llama-server's: what input the model takes besides text
      {"modalities", {{"vision", app.vision != nullptr}, {"audio", false}}},
  };
  body.update(model_kind_json(app));
  return body;
}

}  // namespace

// GET /props[?model=id]: one model's settings; the router's without ?model=.
void add_props_routes(Router& router, ModelRegistry& models) {
  router.add("GET", "/props", [&models](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    if (models.router() && req.query.count("model") == 0) co_return HttpResponse::json(200, dump(router_props(models)));
    const std::shared_ptr<ModelLease> lease = co_await lease_for_query(models, req, ctx);
    co_return HttpResponse::json(200, dump(model_props(lease->app())));
  });
}

}  // namespace server
