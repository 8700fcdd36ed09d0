// What /v1/completions and /v1/chat/completions share after a request is parsed: submission to
// the scheduler, collecting results, and the server-sent-event stream.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "server/api/app.h"
#include "server/api/generation_params.h"
#include "server/channel.h"
#include "server/http.h"

namespace server {

// Submits prompts.size() * params.n generations (choice index = prompt * n + j), all or none,
// feeding one channel that the disconnect signal cancels. The request must have passed
// check_generation(). Throws ApiError: 429 queue full, 503 draining.
std::shared_ptr<Channel> submit_generations(App& app, RequestContext& ctx,
                                            const std::vector<std::vector<int32_t>>& prompts,
                                            const GenerationParams& params);

// The outcome of one choice, for non-streamed responses.
struct ChoiceResult {
  std::string text;
  std::vector<engine::TokenEvent> prompt_tokens;  // scored prompt tokens 1.. (prompt_logprobs)
  std::vector<engine::TokenEvent> tokens;         // every generated token (for logprobs)
  engine::FinishReason reason = engine::FinishReason::Stop;
  engine::Usage usage;
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

// Waits for every choice to finish. The usage lands in the request's stats whatever happens.
// Throws ApiError when a choice failed (500 for an engine error, 504 for a deadline, 503 when
// cancelled by shutdown).
net::awaitable<std::vector<ChoiceResult>> collect_choices(Channel& channel, int n_choices, int n_per_prompt,
                                                          App& app, RequestContext& ctx);

// Usage object: prompt tokens counted once per prompt, completion tokens over all choices; also
// recorded in the request's stats (access log). Token counters in /metrics are kept by the
// Channel, so cancelled requests count too.
nlohmann::json usage_json(RequestStats& stats, const std::vector<engine::Usage>& per_choice, int n_per_prompt);

// Formats the events of a streamed response as SSE "data:" payloads.
struct StreamFormat {
  // Optional first chunk per choice (chat: the role; completions: the echoed prompt, with the
  // scored prompt tokens when they were asked for: then it is sent once they have all arrived).
  std::function<nlohmann::json(int index, const std::vector<engine::TokenEvent>& prompt)> start;
  bool start_after_prompt = false;
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
