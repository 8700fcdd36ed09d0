// One formatter per OpenAI endpoint: how a generation's results become that endpoint's JSON, for
// a streamed response (chunk by chunk) and an unstreamed one (one body) from the same pieces.
// Coroutine-free (server/api): the event stream and the handlers drive it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"

namespace server {

// The outcome of one choice, collected for an unstreamed response.
struct ChoiceResult {
  std::string text;
  std::vector<engine::TokenEvent> prompt_tokens;  // scored prompt tokens 1.. (prompt_logprobs)
  std::vector<engine::TokenEvent> tokens;         // every generated token (for logprobs)
  engine::FinishReason reason = engine::FinishReason::kStop;
  engine::Usage usage;
};

// Thread-safety: const methods only; a formatter is built per request and may be used from the
// session's strand and the work pool, one at a time.
class ResponseFormatter {
 public:
  virtual ~ResponseFormatter() = default;

  // The first chunk of choice `index` (chat: the role; completions with echo: the prompt, with
  // its scored tokens when they were asked for), or null for none.
  virtual nlohmann::json start_chunk(int index, const std::vector<engine::TokenEvent>& scored_prompt) const = 0;
  // Whether start_chunk needs the scored prompt, so waits until it has all arrived.
  virtual bool start_after_prompt() const = 0;
  // A generated piece of choice `index`: one chunk, an array of chunks, or null to send nothing.
  virtual nlohmann::json token_chunk(int index, const engine::TokenEvent& token) const = 0;
  // The end of choice `index`: one chunk or an array of chunks (the last holds finish_reason).
  virtual nlohmann::json finish_chunk(int index, engine::FinishReason reason) const = 0;
  // The last chunk when the client asked for usage (stream_options.include_usage).
  virtual nlohmann::json usage_chunk(const nlohmann::json& usage) const = 0;
  // The unstreamed response.
  virtual nlohmann::json response(const std::vector<ChoiceResult>& choices, const nlohmann::json& usage) const = 0;
};

// "cmpl-..." / "chatcmpl-...": a random id; and the Unix time now.
std::string make_id(const std::string& prefix);
int64_t unix_now();

}  // namespace server
