// The core's serving half, the same for every generation dialect once a request is prepared
// (api/core/request.h): submission of its choices to the scheduler, cancellation on disconnect,
// collecting them, usage, and the response, streamed (event_stream.h) or not, in the dialect's
// format (api/core/formatter.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "server/api/api_error.h"
#include "server/api/app.h"
#include "server/api/core/formatter.h"
#include "server/api/core/request.h"
#include "server/channel.h"
#include "server/http.h"
#include "server/model_registry.h"
#include "server/remote_media.h"
#include "server/router.h"
#include "server/work_pool.h"

namespace server {

// Submits prompts.size() * params.n choices (index = prompt * n + j), streams or collects them,
// and formats the response with `format` (an unstreamed body is built on the work pool). The
// request must have been prepared (prepare_generation). Throws ApiError: 429 queue full, 503
// draining, and what collect_choices throws.
net::awaitable<HttpResponse> serve_generation(App& app, RequestContext& ctx, const PreparedRequest& request,
                                              std::shared_ptr<const Formatter> format);

// Adds the x-ggufd-ignored-fields header naming `ignored` (request_fields.h), unless it is empty.
void name_ignored_fields(HttpResponse& response, const std::vector<std::string>& ignored);

// The answer to a prepared generation request: serve_generation in Format's shape (a Formatter
// constructed from (app, shared_ptr<const Request>)), streamed or not, with the request's ignored
// fields named in the x-ggufd-ignored-fields header, holding `lease` until it is sent.
template <class Request, class Format>
net::awaitable<HttpResponse> answer_generation(App& app, RequestContext& ctx, std::shared_ptr<ModelLease> lease,
                                               std::shared_ptr<const Request> request) {
  auto format = std::make_shared<const Format>(app, request);
  HttpResponse response = co_await serve_generation(app, ctx, *request, format);
  name_ignored_fields(response, request->ignored_fields);
  response.hold = std::move(lease);
  co_return response;
}

// The handler of a generation endpoint whose requests may hold images: the model the body names
// is leased (lease_for_body), the body becomes a Request (a PreparedRequest) by `translate` and
// prepare_generation on the work pool, with its remote images fetched in between
// (prepare_in_steps), and answer_generation answers it.
template <class Request, class Format>
Handler generation_handler(ModelRegistry& models, CoreRequest (*translate)(const App&, std::string_view, Request&)) {
  return [&models, translate](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
    App& app = lease->app();
    require_generation(app);
    auto request = std::make_shared<const Request>(co_await prepare_in_steps<Request>(
        app, ctx, [&app, &req, translate](Request& out) { return translate(app, req.body, out); },
        [&app](CoreRequest core, Request& out) { prepare_generation(app, std::move(core), out); }));
    co_return co_await answer_generation<Request, Format>(app, ctx, std::move(lease), std::move(request));
  };
}

// The same for a dialect without images (completions): `prepare` makes the Request in one job.
template <class Request, class Format>
Handler generation_handler(ModelRegistry& models, Request (*prepare)(const App&, std::string_view)) {
  return [&models, prepare](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
    App& app = lease->app();
    require_generation(app);
    auto request = std::make_shared<const Request>(
        co_await app.work->run([&app, &req, prepare] { return prepare(app, req.body); }));
    co_return co_await answer_generation<Request, Format>(app, ctx, std::move(lease), std::move(request));
  };
}

// Submits the choices, all or none, feeding one channel that the disconnect signal cancels.
std::shared_ptr<Channel> submit_generations(App& app, RequestContext& ctx,
                                            const std::vector<std::vector<int32_t>>& prompts,
                                            const GenerationParams& params);

// Nothing for kAccepted; else the ApiError the status becomes: 429 queue full (Retry-After), 503
// draining, 500 for what validation should have refused.
void throw_if_refused(engine::SubmitStatus status);

// Waits for every choice to finish. The usage lands in the request's stats whatever happens.
// Throws ApiError when a choice failed (choice_error).
net::awaitable<std::vector<ChoiceResult>> collect_choices(Channel& channel, int n_choices, int n_per_prompt,
                                                          App& app, RequestContext& ctx);

// The error a failed choice becomes (500 engine error, 504 deadline, 503 cancelled), or nullopt.
std::optional<ApiError> choice_error(const ChannelItem& item);

// A request's usage: prompt tokens counted once per prompt, completion tokens over all choices;
// also recorded in the request's stats (access log). Token counters in /metrics are kept by the
// Channel, so cancelled requests count too.
UsageTotals usage_totals(RequestStats& stats, const std::vector<engine::Usage>& per_choice, int n_per_prompt);

// Each input's pooled output, in input order (embeddings.cpp: /v1/embeddings, /v1/rerank, Ollama's
// /api/embed). The inputs go to the scheduler in waves of at most its capacity, each all or none,
// waiting while its queue is full; `tokens` gets their token count (also recorded in the stats and
// metrics, whatever happens). Throws ApiError: 503 draining or the client gone, 504 past the
// deadline, what choice_error says.
net::awaitable<std::vector<std::vector<float>>> embed_all(App& app, RequestContext& ctx,
                                                          const std::vector<std::vector<int32_t>>& inputs,
                                                          int64_t& tokens);

// Records time to first token and inter-token latency into metrics and the request's stats.
class TokenTimer {
 public:
  TokenTimer(Metrics& metrics, RequestStats& stats);
  void on_token();

 private:
  Metrics& metrics_;
  RequestStats& stats_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
  bool first_ = true;
};

}  // namespace server
