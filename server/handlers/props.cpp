// GET /props: the server's settings, default sampling, chat template, build and CPU features.
#include <nlohmann/json.hpp>

#include "server/api/gguf_json.h"
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

}  // namespace

void add_props_routes(Router& router, App& app) {
  router.add("GET", "/props", [&app](HttpRequest&, RequestContext&) -> net::awaitable<HttpResponse> {
    require_ready(app);
    const ServeSettings& s = app.settings;
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
    };
    body.update(model_kind_json(app));
    co_return HttpResponse::json(200, dump(body));
  });
}

}  // namespace server
