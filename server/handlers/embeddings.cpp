// POST /v1/embeddings (and /embeddings): OpenAI's embeddings. POST /v1/rerank (and /rerank):
// Jina/Cohere's reranking. Both run their inputs through the scheduler as embedding requests,
// beside whatever else it serves.
#include <algorithm>
#include <memory>

#include "server/api/embedding_request.h"
#include "server/api/embedding_response.h"
#include "server/api/request_json.h"
#include "server/channel.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"

namespace server {

namespace {

using Clock = std::chrono::steady_clock;

// Submits a wave, waiting while the scheduler's queue is full (other requests' inputs ahead):
// embedding inputs are short work, so a busy queue is back-pressure rather than a 429. Throws
// ApiError: 503 draining or the client gone, 504 past the deadline.
net::awaitable<void> submit_when_room(App& app, RequestContext& ctx, const std::vector<engine::GenerationRequest>& requests,
                                      Clock::time_point deadline) {
  net::steady_timer timer(ctx.executor);
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    const engine::SubmitStatus status = app.scheduler->submit_all(requests);  // (a copy: kept if refused)
    if (status != engine::SubmitStatus::kQueueFull) {
      throw_if_refused(status);
      co_return;
    }
    if (ctx.disconnect->fired()) throw ApiError(503, "request cancelled (client gone)", "server_error");
    if (Clock::now() > deadline) {
      throw ApiError(504, "request deadline exceeded (--request-timeout) waiting for the queue", "timeout_error",
                     std::nullopt, "timeout");
    }
    timer.expires_after(pause);
    co_await timer.async_wait(net::use_awaitable);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

net::awaitable<std::vector<std::vector<float>>> embed_all(App& app, RequestContext& ctx,
                                                          const std::vector<std::vector<int32_t>>& inputs,
                                                          int64_t& tokens) {
  std::vector<std::vector<float>> out(inputs.size());
  const auto wave = static_cast<size_t>(std::max<int64_t>(app.scheduler->capacity(), 1));
  const auto deadline = Clock::now() + std::chrono::seconds(app.settings.request_timeout_s);
  std::optional<ApiError> failure;
  for (size_t begin = 0; begin < inputs.size() && !failure; begin += wave) {
    const size_t end = std::min(inputs.size(), begin + wave);
    auto channel = std::make_shared<Channel>(ctx.executor, nullptr, 1);
    std::vector<engine::GenerationRequest> requests;
    for (size_t i = begin; i < end; ++i) {
      engine::GenerationRequest r;
      r.prompt = inputs[i];
      r.pooling = app.pooling;
      r.deadline = deadline;
      r.sink = channel->sink(static_cast<int>(i - begin));
      requests.push_back(std::move(r));
    }
    co_await submit_when_room(app, ctx, requests, deadline);
    ctx.disconnect->subscribe([channel] { channel->cancel(); });
    for (size_t open = end - begin; open > 0;) {
      ChannelItem item = co_await channel->receive();
      if (!item.finished) {
        out[begin + static_cast<size_t>(item.index)] = std::move(item.embedding);
        continue;
      }
      --open;
      tokens += item.usage.prompt_tokens;
      if (!failure) failure = choice_error(item);
    }
  }
  ctx.stats->prompt_tokens = tokens;
  app.metrics->count_embeddings(static_cast<int64_t>(inputs.size()), tokens);
  if (failure) throw *failure;
  co_return out;
}

namespace {

net::awaitable<HttpResponse> embeddings(ModelRegistry& models, HttpRequest& req, RequestContext& ctx) {
  const std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
  App& app = lease->app();
  auto request = co_await app.work->run([&] { return prepare_embeddings(app, req.body); });
  int64_t tokens = 0;
  std::vector<std::vector<float>> vectors = co_await embed_all(app, ctx, request.inputs, tokens);
  std::string body = co_await app.work->run([&] {
    for (std::vector<float>& v : vectors) shape_embedding(v, request.dimensions, request.normalize);
    return dump_json(embeddings_json(app, request, vectors, tokens));
  });
  HttpResponse response = HttpResponse::json(200, std::move(body));
  name_ignored_fields(response, request.ignored_fields);
  co_return response;
}

net::awaitable<HttpResponse> rerank(ModelRegistry& models, HttpRequest& req, RequestContext& ctx) {
  const std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
  App& app = lease->app();
  auto request = co_await app.work->run([&] { return prepare_rerank(app, req.body); });
  int64_t tokens = 0;
  const std::vector<std::vector<float>> outputs = co_await embed_all(app, ctx, request.inputs, tokens);
  std::vector<float> scores;
  for (const std::vector<float>& o : outputs) scores.push_back(o.empty() ? 0.0f : o[0]);  // the head's first output
  HttpResponse response = HttpResponse::json(200, dump_json(rerank_json(app, request, scores, tokens)));
  name_ignored_fields(response, request.ignored_fields);
  co_return response;
}

}  // namespace

void add_embeddings_routes(Router& router, ModelRegistry& models) {
  auto embed = [&models](HttpRequest& req, RequestContext& ctx) { return embeddings(models, req, ctx); };
  auto rank = [&models](HttpRequest& req, RequestContext& ctx) { return rerank(models, req, ctx); };
  for (const char* path : {"/v1/embeddings", "/embeddings"}) router.add("POST", path, embed, RouteOptions::json_api());
  for (const char* path : {"/v1/rerank", "/rerank", "/v1/reranking"}) router.add("POST", path, rank, RouteOptions::json_api());
}

}  // namespace server
