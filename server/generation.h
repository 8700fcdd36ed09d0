// What /v1/completions and /v1/chat/completions share: request fields, submission to the
// scheduler, collecting results, and the server-sent-event stream.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "server/app.h"
#include "server/channel.h"
#include "server/http.h"

namespace server {

// The sampling and stopping fields common to both endpoints, validated.
struct GenerationParams {
  engine::SamplingParams sampling;
  int64_t max_tokens = -1;            // -1: until the context is full
  std::vector<std::string> stop;
  int n = 1;                          // choices per prompt
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  bool ignore_eos = false;
  int n_logprobs = -1;                // -1: no logprobs; else alternatives per token
};

// Reads the common fields (temperature, top_p, top_k, min_p, n, stop, seed, penalties,
// logit_bias, stream, stream_options, ...). `max_tokens_keys` are the accepted names of the
// token limit, in priority order. Throws ApiError (400) naming the offending field.
GenerationParams parse_generation_params(const nlohmann::json& body, const App& app,
                                         int64_t default_max_tokens,
                                         const std::vector<std::string>& max_tokens_keys);

// Refuses (400) any field that is not in `known`, or that is known but unsupported.
void check_fields(const nlohmann::json& body, const std::set<std::string>& known,
                  const std::set<std::string>& unsupported);

// Submits prompts.size() * params.n generations (choice index = prompt * n + j) feeding one
// channel that the disconnect signal cancels. Throws ApiError: 400 context_length_exceeded,
// 429 queue full, 503 draining.
std::shared_ptr<Channel> submit_generations(App& app, RequestContext& ctx,
                                            const std::vector<std::vector<int32_t>>& prompts,
                                            const GenerationParams& params);

// The outcome of one choice, for non-streamed responses.
struct ChoiceResult {
  std::string text;
  std::vector<engine::TokenEvent> tokens;  // every generated token (for logprobs)
  engine::FinishReason reason = engine::FinishReason::Stop;
  engine::Usage usage;
  std::string error;
};

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

// Waits for every choice to finish. Throws ApiError when a choice failed (500 for an engine
// error, 504 for a deadline, 499-style cancellation is reported as 400 "request cancelled").
net::awaitable<std::vector<ChoiceResult>> collect_choices(Channel& channel, int n_choices,
                                                          App& app, RequestContext& ctx);

// Usage object: prompt tokens counted once per prompt, completion tokens over all choices.
nlohmann::json usage_json(const std::vector<engine::Usage>& per_choice, int n_per_prompt);

// usage_json, also recorded in the request's stats (access log) and the token counters.
nlohmann::json account_usage(App& app, RequestStats& stats,
                             const std::vector<engine::Usage>& per_choice, int n_per_prompt);

// Formats the events of a streamed response as SSE "data:" payloads.
struct StreamFormat {
  std::function<nlohmann::json(int index)> start;   // optional first chunk per choice (chat role)
  std::function<nlohmann::json(int index, const engine::TokenEvent&)> token;  // null: skip
  std::function<nlohmann::json(int index, engine::FinishReason)> finish;
  std::function<nlohmann::json(const nlohmann::json& usage)> usage;           // the usage chunk
};

// A ChunkSource producing "data: {...}\n\n" events from the channel, then "data: [DONE]".
std::shared_ptr<ChunkSource> make_event_stream(std::shared_ptr<Channel> channel, int n_choices,
                                               int n_per_prompt, bool include_usage,
                                               StreamFormat format, App& app,
                                               RequestContext& ctx);

// "cmpl-..." / "chatcmpl-...": a random id; and the Unix time now.
std::string make_id(const std::string& prefix);
int64_t unix_now();

}  // namespace server
