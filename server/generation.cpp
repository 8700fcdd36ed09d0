#include "server/generation.h"

#include <cmath>
#include <random>

#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::shared_ptr<Channel> submit_generations(App& app, RequestContext& ctx,
                                            const std::vector<std::vector<int32_t>>& prompts,
                                            const GenerationParams& params) {
  auto channel = std::make_shared<Channel>(ctx.executor, &app.metrics, params.n);
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
      req.stop = params.stop;
      req.ignore_eos = params.ignore_eos;
      req.deadline = deadline;
      req.sink = channel->sink(index);
      requests.push_back(std::move(req));
    }
  }
  switch (app.scheduler->submit_all(std::move(requests))) {
    case engine::SubmitStatus::Accepted: break;
    case engine::SubmitStatus::QueueFull: {
      ApiError e(429, "server is busy: the request queue is full; retry later", "rate_limit_error",
                 std::nullopt, "queue_full");
      e.retry_after = 1;
      throw e;
    }
    case engine::SubmitStatus::Draining: {
      ApiError e(503, "server is shutting down", "server_error", std::nullopt, "unavailable");
      e.retry_after = 5;
      throw e;
    }
    case engine::SubmitStatus::TooLarge:
    case engine::SubmitStatus::PromptTooLong:
    case engine::SubmitStatus::EmptyPrompt:
      // check_generation() refuses all of these first, with the limit in the message.
      throw ApiError(500, "the scheduler refused a request that passed validation", "server_error");
  }
  // A stream finds out from its writes when the client has really gone; a client that only
  // stopped sending may still be reading it.
  ctx.disconnect->subscribe([channel] { channel->cancel(); }, !params.stream);
  return channel;
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
  last_ = now;
}

namespace {

// The error a failed choice becomes, or nullopt for a normal finish.
std::optional<ApiError> choice_error(const ChannelItem& item) {
  if (item.reason == engine::FinishReason::Error) {
    return ApiError(500, "generation failed: " + item.error, "server_error");
  }
  if (item.reason == engine::FinishReason::Cancelled) {
    if (!item.error.empty()) return ApiError(504, item.error, "timeout_error", std::nullopt, "timeout");
    return ApiError(503, "request cancelled (server shutting down or client gone)", "server_error");
  }
  return std::nullopt;
}

}  // namespace

net::awaitable<std::vector<ChoiceResult>> collect_choices(Channel& channel, int n_choices, int n_per_prompt,
                                                          App& app, RequestContext& ctx) {
  std::vector<ChoiceResult> results(static_cast<size_t>(n_choices));
  TokenTimer timer(app.metrics, *ctx.stats);
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
  (void)usage_json(*ctx.stats, usages, n_per_prompt);  // the access log sees failed requests' tokens too
  if (failure) throw *failure;
  co_return results;
}

json usage_json(RequestStats& stats, const std::vector<engine::Usage>& per_choice, int n_per_prompt) {
  int64_t prompt = 0;
  int64_t completion = 0;
  int64_t cached = 0;
  for (size_t i = 0; i < per_choice.size(); ++i) {
    if (i % static_cast<size_t>(n_per_prompt) == 0) {
      prompt += per_choice[i].prompt_tokens;
      cached += per_choice[i].cached_tokens;
    }
    completion += per_choice[i].completion_tokens;
  }
  stats.prompt_tokens = prompt;
  stats.completion_tokens = completion;
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

namespace {

// Streams the channel as SSE events; see make_event_stream.
class EventStream : public ChunkSource {
 public:
  EventStream(std::shared_ptr<Channel> channel, int n_choices, int n_per_prompt, bool include_usage,
              StreamFormat format, App& app, RequestContext& ctx)
      : channel_(std::move(channel)), open_(n_choices), n_per_prompt_(n_per_prompt),
        include_usage_(include_usage), format_(std::move(format)), app_(app), stats_(ctx.stats),
        timer_(app.metrics, *stats_), usage_(static_cast<size_t>(n_choices)),
        prompt_(static_cast<size_t>(n_choices)), started_(static_cast<size_t>(n_choices), false) {
    if (format_.start && !format_.start_after_prompt) {
      for (int i = 0; i < n_choices; ++i) start(i);
    }
  }

  net::awaitable<std::optional<std::string>> next() override {
    while (pending_.empty()) {
      if (open_ == 0) {
        if (done_) co_return std::nullopt;
        done_ = true;
        const json usage = usage_json(*stats_, usage_, n_per_prompt_);
        if (include_usage_ && !failed_) pending_ += event(format_.usage(usage));
        pending_ += "data: [DONE]\n\n";
        break;
      }
      ChannelItem item = co_await channel_->receive();
      if (item.token.prompt) {
        prompt_[static_cast<size_t>(item.index)].push_back(std::move(item.token));
        continue;
      }
      if (format_.start && !started_[static_cast<size_t>(item.index)]) start(item.index);
      if (!item.finished) {
        if (item.token.token >= 0) timer_.on_token();
        if (!item.token.text.empty() || item.token.token >= 0) {
          const json chunk = format_.token(item.index, item.token);
          if (!chunk.is_null()) pending_ += event(chunk);
        }
        continue;
      }
      --open_;
      usage_[static_cast<size_t>(item.index)] = item.usage;
      if (std::optional<ApiError> e = choice_error(item)) {
        if (!failed_) pending_ += event(json{{"error", {{"message", e->what()}, {"type", e->type()},
                                                         {"param", nullptr}, {"code", e->code() ? json(*e->code()) : json(nullptr)}}}});
        failed_ = true;
      } else {
        pending_ += event(format_.finish(item.index, item.reason));
      }
    }
    std::string out = std::move(pending_);
    pending_.clear();
    co_return out;
  }

  void cancel() override { channel_->cancel(); }

 private:
  static std::string event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

  void start(int index) {
    const auto i = static_cast<size_t>(index);
    started_[i] = true;
    pending_ += event(format_.start(index, prompt_[i]));
    prompt_[i].clear();
  }

  std::shared_ptr<Channel> channel_;
  int open_;
  int n_per_prompt_;
  bool include_usage_;
  StreamFormat format_;
  App& app_;
  std::shared_ptr<RequestStats> stats_;
  TokenTimer timer_;
  std::vector<engine::Usage> usage_;
  std::vector<std::vector<engine::TokenEvent>> prompt_;  // scored prompt tokens not yet sent, per choice
  std::vector<bool> started_;                            // whether format_.start ran, per choice
  std::string pending_;
  bool done_ = false;
  bool failed_ = false;
};

}  // namespace

std::shared_ptr<ChunkSource> make_event_stream(std::shared_ptr<Channel> channel, int n_choices,
                                               int n_per_prompt, bool include_usage,
                                               StreamFormat format, App& app, RequestContext& ctx) {
  return std::make_shared<EventStream>(std::move(channel), n_choices, n_per_prompt, include_usage,
                                       std::move(format), app, ctx);
}

std::string make_id(const std::string& prefix) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace server
