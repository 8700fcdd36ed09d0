#include "server/generation.h"

#include <cmath>
#include <random>

#include "engine/tokenizer/tokenizer.h"
#include "server/api_error.h"
#include "server/request_json.h"

namespace server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kMaxChoices = 16;
constexpr size_t kMaxStops = 16;

std::vector<std::pair<int32_t, float>> parse_logit_bias(const json& body, int32_t n_vocab) {
  std::vector<std::pair<int32_t, float>> out;
  const auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return out;
  if (!it->is_object()) {
    throw invalid_field("logit_bias", "'logit_bias' must be an object mapping token ids to biases, found " +
                                          json_type_name(*it));
  }
  for (const auto& [key, value] : it->items()) {
    char* end = nullptr;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || id < 0 || id >= n_vocab) {
      throw invalid_field("logit_bias", "'logit_bias' key '" + key + "' is not a token id in [0, " +
                                            std::to_string(n_vocab) + ")");
    }
    if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100) {
      throw invalid_field("logit_bias", "'logit_bias' values must be numbers between -100 and 100");
    }
    const double bias = value.get<double>();
    // OpenAI: -100 bans the token.
    out.emplace_back(static_cast<int32_t>(id), bias <= -100 ? -INFINITY : static_cast<float>(bias));
  }
  return out;
}

}  // namespace

void check_fields(const json& body, const std::set<std::string>& known,
                  const std::set<std::string>& unsupported) {
  for (const auto& [key, value] : body.items()) {
    if (unsupported.count(key) != 0 && !value.is_null()) {
      throw invalid_field(key, "'" + key + "' is not supported by this server");
    }
    if (known.count(key) == 0 && unsupported.count(key) == 0) {
      throw invalid_field(key, "Unrecognized request argument supplied: " + key);
    }
  }
}

GenerationParams parse_generation_params(const json& body, const App& app,
                                         int64_t default_max_tokens,
                                         const std::vector<std::string>& max_tokens_keys) {
  GenerationParams p;
  engine::SamplingParams& s = p.sampling;
  s = app.settings.default_sampling;
  const int32_t n_vocab = app.tokenizer->n_vocab();
  s.temperature = static_cast<float>(get_number(body, "temperature", 0, 2).value_or(s.temperature));
  s.top_p = static_cast<float>(get_number(body, "top_p", 0, 1).value_or(s.top_p));
  s.top_k = static_cast<int>(get_int(body, "top_k", 0, n_vocab).value_or(s.top_k));
  s.min_p = static_cast<float>(get_number(body, "min_p", 0, 1).value_or(s.min_p));
  s.presence_penalty = static_cast<float>(get_number(body, "presence_penalty", -2, 2).value_or(s.presence_penalty));
  s.frequency_penalty = static_cast<float>(get_number(body, "frequency_penalty", -2, 2).value_or(s.frequency_penalty));
  for (const char* key : {"repetition_penalty", "repeat_penalty"}) {
    if (auto r = get_number(body, key, 0.01, 10)) s.repeat_penalty = static_cast<float>(*r);
  }
  s.penalty_last_n = static_cast<int>(get_int(body, "repeat_last_n", -1, app.settings.n_ctx).value_or(s.penalty_last_n));
  s.logit_bias = parse_logit_bias(body, n_vocab);
  if (auto seed = get_int(body, "seed", INT64_MIN, INT64_MAX)) {
    s.seed = static_cast<uint64_t>(*seed);
  } else {
    s.seed = std::random_device{}() * uint64_t{0x9E3779B97F4A7C15} + std::random_device{}();
  }
  p.max_tokens = default_max_tokens;
  for (const std::string& key : max_tokens_keys) {
    if (auto m = get_int(body, key, 0, INT32_MAX)) {
      p.max_tokens = *m;
      break;
    }
  }
  p.n = static_cast<int>(get_int(body, "n", 1, kMaxChoices).value_or(1));
  p.stop = get_strings(body, "stop").value_or(std::vector<std::string>{});
  if (p.stop.size() > kMaxStops) {
    throw invalid_field("stop", "'stop' may hold at most " + std::to_string(kMaxStops) + " strings");
  }
  p.stream = get_bool(body, "stream").value_or(false);
  if (const auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!p.stream) throw invalid_field("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (!it->is_object()) throw invalid_field("stream_options", "'stream_options' must be an object");
    p.include_usage = get_bool(*it, "include_usage").value_or(false);
  }
  p.ignore_eos = get_bool(body, "ignore_eos").value_or(false);
  (void)get_string(body, "user");  // accepted for compatibility; type-checked only
  return p;
}

std::shared_ptr<Channel> submit_generations(App& app, RequestContext& ctx,
                                            const std::vector<std::vector<int32_t>>& prompts,
                                            const GenerationParams& params) {
  const int64_t n_ctx = app.settings.n_ctx;
  for (const auto& prompt : prompts) {
    if (prompt.empty()) throw invalid_field("prompt", "the prompt is empty");
    if (static_cast<int64_t>(prompt.size()) >= n_ctx) {
      throw ApiError(400, "This model's maximum context length is " + std::to_string(n_ctx) +
                              " tokens. However, your prompt has " + std::to_string(prompt.size()) +
                              " tokens. Please reduce the length of the prompt.",
                     "invalid_request_error", "messages", "context_length_exceeded");
    }
  }
  auto channel = std::make_shared<Channel>(ctx.executor);
  ctx.disconnect->subscribe([channel] { channel->cancel(); });
  const auto deadline = Clock::now() + std::chrono::seconds(app.settings.request_timeout_s);
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
      req.stop = params.stop;
      req.ignore_eos = params.ignore_eos;
      req.deadline = deadline;
      req.sink = channel->sink(index);
      switch (app.scheduler->submit(std::move(req))) {
        case engine::SubmitStatus::Accepted: break;
        case engine::SubmitStatus::QueueFull: {
          channel->cancel();  // choices already queued end at the next step
          ApiError e(429, "server is busy: the request queue is full; retry later", "rate_limit_error",
                     std::nullopt, "queue_full");
          e.retry_after = 1;
          throw e;
        }
        case engine::SubmitStatus::Draining: {
          channel->cancel();
          ApiError e(503, "server is shutting down", "server_error", std::nullopt, "unavailable");
          e.retry_after = 5;
          throw e;
        }
        case engine::SubmitStatus::PromptTooLong:
        case engine::SubmitStatus::EmptyPrompt:
          throw invalid_field("prompt", "prompt length is not accepted by the scheduler");
      }
    }
  }
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

net::awaitable<std::vector<ChoiceResult>> collect_choices(Channel& channel, int n_choices, App& app,
                                                          RequestContext& ctx) {
  std::vector<ChoiceResult> results(static_cast<size_t>(n_choices));
  TokenTimer timer(app.metrics, *ctx.stats);
  int open = n_choices;
  std::optional<ApiError> failure;
  while (open > 0) {
    ChannelItem item = co_await channel.receive();
    ChoiceResult& r = results[static_cast<size_t>(item.index)];
    if (!item.finished) {
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
  if (failure) throw *failure;
  co_return results;
}

json usage_json(const std::vector<engine::Usage>& per_choice, int n_per_prompt) {
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
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

json account_usage(App& app, RequestStats& stats, const std::vector<engine::Usage>& per_choice,
                   int n_per_prompt) {
  json u = usage_json(per_choice, n_per_prompt);
  stats.prompt_tokens = u["prompt_tokens"].get<int64_t>();
  stats.completion_tokens = u["completion_tokens"].get<int64_t>();
  app.metrics.count_tokens(stats.prompt_tokens, stats.completion_tokens);
  return u;
}

namespace {

// Streams the channel as SSE events; see make_event_stream.
class EventStream : public ChunkSource {
 public:
  EventStream(std::shared_ptr<Channel> channel, int n_choices, int n_per_prompt, bool include_usage,
              StreamFormat format, App& app, RequestContext& ctx)
      : channel_(std::move(channel)), open_(n_choices), n_per_prompt_(n_per_prompt),
        include_usage_(include_usage), format_(std::move(format)), app_(app), stats_(ctx.stats),
        timer_(app.metrics, *stats_), usage_(static_cast<size_t>(n_choices)) {
    if (format_.start) {
      for (int i = 0; i < n_choices; ++i) pending_ += event(format_.start(i));
    }
  }

  net::awaitable<std::optional<std::string>> next() override {
    while (pending_.empty()) {
      if (open_ == 0) {
        if (done_) co_return std::nullopt;
        done_ = true;
        const json usage = account_usage(app_, *stats_, usage_, n_per_prompt_);
        if (include_usage_ && !failed_) pending_ += event(format_.usage(usage));
        pending_ += "data: [DONE]\n\n";
        break;
      }
      ChannelItem item = co_await channel_->receive();
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


  std::shared_ptr<Channel> channel_;
  int open_;
  int n_per_prompt_;
  bool include_usage_;
  StreamFormat format_;
  App& app_;
  std::shared_ptr<RequestStats> stats_;
  TokenTimer timer_;
  std::vector<engine::Usage> usage_;
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
