#include "server/generation.h"

#include "server/api/api_error.h"
#include "server/api/request_fields.h"
#include "server/api/request_json.h"
#include "server/event_stream.h"
#include "server/work_pool.h"

namespace server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

net::awaitable<HttpResponse> serve_generation(App& app, RequestContext& ctx, const PreparedRequest& request,
                                              std::shared_ptr<const Formatter> format) {
  const GenerationParams& params = request.params;
  const int n_choices = static_cast<int>(request.prompts.size()) * params.n;
  auto channel = submit_generations(app, ctx, request.prompts, params);
  if (params.stream) {
    HttpResponse stream;
    stream.content_type = "text/event-stream";
    stream.stream = make_event_stream(channel, n_choices, params.n, format, app, ctx);
    co_return stream;
  }
  const std::vector<ChoiceResult> results = co_await collect_choices(*channel, n_choices, params.n, app, ctx);
  std::vector<engine::Usage> usages;
  for (const ChoiceResult& c : results) usages.push_back(c.usage);
  const UsageTotals usage = usage_totals(*ctx.stats, usages, params.n);
  // A response with logprobs for many choices is megabytes of JSON: built on the work pool.
  std::string body = co_await app.work->run([&] { return dump_json(format->response(results, usage)); });
  co_return HttpResponse::json(200, std::move(body));
}

void name_ignored_fields(HttpResponse& response, const std::vector<std::string>& ignored) {
  if (!ignored.empty()) response.headers.emplace_back(kIgnoredFieldsHeader, ignored_fields_header(ignored));
}

std::shared_ptr<Channel> submit_generations(App& app, RequestContext& ctx,
                                            const std::vector<std::vector<int32_t>>& prompts,
                                            const GenerationParams& params) {
  auto channel = std::make_shared<Channel>(ctx.executor, app.metrics.get(), params.n);
  const auto deadline = Clock::now() + std::chrono::seconds(app.settings.request_timeout_s);
  std::vector<engine::GenerationRequest> requests;
  int index = 0;
  for (const auto& prompt : prompts) {
    for (int j = 0; j < params.n; ++j, ++index) {
      engine::GenerationRequest req;
      req.prompt = prompt;
      req.sampling = params.sampling;
      req.sampling.seed += static_cast<uint64_t>(j);
      req.sampling.logprobs = params.n_logprobs >= 0;
      req.sampling.n_logprobs = std::max(params.n_logprobs, 0);
      req.max_tokens = params.max_tokens;
      req.prompt_logprobs = params.prompt_logprobs;
      req.reuse_prefix = params.cache_prompt;
      req.stop = params.stop;
      req.ignore_eos = params.ignore_eos;
      req.grammar = params.grammar;
      req.grammar_triggers = params.grammar_triggers;
      req.shown_tokens = params.shown_tokens;
      req.images = params.images;  // (the pixels are shared)
      req.deadline = deadline;
      req.sink = channel->sink(index);
      requests.push_back(std::move(req));
    }
  }
  throw_if_refused(app.scheduler->submit_all(std::move(requests)));
  // A stream finds out from its writes when the client has really gone; a client that only
  // stopped sending may still be reading it.
  ctx.disconnect->subscribe([channel] { channel->cancel(); }, !params.stream);
  return channel;
}

void throw_if_refused(engine::SubmitStatus status) {
  switch (status) {
    case engine::SubmitStatus::kAccepted: return;
    case engine::SubmitStatus::kQueueFull: {
      ApiError e(429, "server is busy: the request queue is full; retry later", "rate_limit_error",
                 std::nullopt, "queue_full");
      e.retry_after = 1;
      throw e;
    }
    case engine::SubmitStatus::kDraining: {
      ApiError e(503, "server is shutting down", "server_error", std::nullopt, "unavailable");
      e.retry_after = 5;
      throw e;
    }
    case engine::SubmitStatus::kTooLarge:
    case engine::SubmitStatus::kPromptTooLong:
    case engine::SubmitStatus::kEmptyPrompt:
      // the request parsers refuse all of these first, with the limit in the message.
      throw ApiError(500, "the scheduler refused a request that passed validation", "server_error");
  }
}

TokenTimer::TokenTimer(Metrics& metrics, RequestStats& stats)
    : metrics_(metrics), stats_(stats), start_(Clock::now()), last_(start_) {}

void TokenTimer::on_token() {
  const auto now = Clock::now();
  if (first_) {
    const double s = std::chrono::duration<double>(now - start_).count();
    stats_.ttft_ms = s * 1000;
    metrics_.observe_ttft(s);
    first_ = false;
  } else {
    metrics_.observe_token_latency(std::chrono::duration<double>(now - last_).count());
  }
  stats_.last_token_ms = std::chrono::duration<double, std::milli>(now - start_).count();
  last_ = now;
}

std::optional<ApiError> choice_error(const ChannelItem& item) {
  if (item.reason == engine::FinishReason::kError) {
    return ApiError(500, "generation failed: " + item.error, "server_error");
  }
  if (item.reason == engine::FinishReason::kTimeout) {
    return ApiError(504, "request deadline exceeded (--request-timeout)", "timeout_error", std::nullopt, "timeout");
  }
  if (item.reason == engine::FinishReason::kCancelled) {
    return ApiError(503, "request cancelled (server shutting down or client gone)", "server_error");
  }
  return std::nullopt;
}

net::awaitable<std::vector<ChoiceResult>> collect_choices(Channel& channel, int n_choices, int n_per_prompt,
                                                          App& app, RequestContext& ctx) {
  std::vector<ChoiceResult> results(static_cast<size_t>(n_choices));
  TokenTimer timer(*app.metrics, *ctx.stats);
  int open = n_choices;
  std::optional<ApiError> failure;
  while (open > 0) {
    ChannelItem item = co_await channel.receive();
    ChoiceResult& r = results[static_cast<size_t>(item.index)];
    if (!item.finished) {
      if (item.token.prompt) {
        r.prompt_tokens.push_back(std::move(item.token));
        continue;
      }
      if (item.token.token >= 0) timer.on_token();
      r.text += item.token.text;
      if (item.token.token >= 0) r.tokens.push_back(std::move(item.token));
      continue;
    }
    --open;
    r.reason = item.reason;
    r.usage = item.usage;
    if (!failure) failure = choice_error(item);
  }
  std::vector<engine::Usage> usages;
  for (const ChoiceResult& r : results) usages.push_back(r.usage);
  (void)usage_totals(*ctx.stats, usages, n_per_prompt);  // the access log sees failed requests' tokens too
  if (failure) throw *failure;
  co_return results;
}

UsageTotals usage_totals(RequestStats& stats, const std::vector<engine::Usage>& per_choice, int n_per_prompt) {
  UsageTotals u;
  for (size_t i = 0; i < per_choice.size(); ++i) {
    if (i % static_cast<size_t>(n_per_prompt) == 0) {
      u.prompt_tokens += per_choice[i].prompt_tokens;
      u.cached_tokens += per_choice[i].cached_tokens;
    }
    u.completion_tokens += per_choice[i].completion_tokens;
  }
  stats.prompt_tokens = u.prompt_tokens;
  stats.completion_tokens = u.completion_tokens;
  u.ttft_ms = stats.ttft_ms;
  u.last_token_ms = stats.last_token_ms;
  return u;
}

}  // namespace server
