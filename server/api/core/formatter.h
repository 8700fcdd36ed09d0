// The output side of the core: what a generation gives back (a stream of events per choice, or
// the collected results), and the interface each dialect's formatter implements to turn it into
// its wire format -- the events of a stream and the body of an unstreamed response, from the same
// pieces. One formatter per endpoint (openai_chat/, openai_completions/, openai_responses/,
// anthropic_messages/). The stream driver (server/event_stream.cpp) and the unstreamed path
// (server/generation.cpp) call it; neither knows any dialect.
// Coroutine-free (server/api).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "server/api/api_error.h"

namespace server {

// The outcome of one choice, collected for an unstreamed response.
struct ChoiceResult {
  std::string text;
  std::vector<engine::TokenEvent> prompt_tokens;  // scored prompt tokens 1.. (prompt_logprobs)
  std::vector<engine::TokenEvent> tokens;         // every generated token (for logprobs)
  engine::FinishReason reason = engine::FinishReason::kStop;
  engine::Usage usage;
};

// A request's token counts: prompts counted once per prompt, completions over all choices.
struct UsageTotals {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens taken from the prefix cache
  double ttft_ms = -1;        // from the request's start to its first generated token (-1: none)
  double last_token_ms = -1;  // ... to its last generated token
};

// Thread-safety: one call at a time (a formatter is built per request and used from the
// session's strand, and for an unstreamed body from the work pool); per-choice stream state is
// kept in mutable members for that reason.
class Formatter {
 public:
  virtual ~Formatter() = default;

  // --- streamed: each returns the SSE text to send (empty: nothing)
  // Once, before anything else (Responses: response.created; Messages: message_start).
  virtual std::string stream_open() const { return {}; }
  // The start of choice `index` (chat: the role; completions with echo: the prompt, with its
  // scored tokens when asked for).
  virtual std::string stream_start(int index, const std::vector<engine::TokenEvent>& scored_prompt) const = 0;
  // Whether stream_start needs the scored prompt, so waits until it has all arrived.
  virtual bool start_after_prompt() const { return false; }
  // A generated piece of choice `index`.
  virtual std::string stream_token(int index, const engine::TokenEvent& token) const = 0;
  // The end of choice `index`, which finished well.
  virtual std::string stream_finish(int index, engine::FinishReason reason, const engine::Usage& usage) const = 0;
  // A choice failed (the first one only; the others still stream to their end).
  virtual std::string stream_fail(const ApiError& error) const = 0;
  // After every choice has ended; `failed`: stream_fail was sent.
  virtual std::string stream_close(const UsageTotals& usage, bool failed) const = 0;
  // Sent when nothing else was for a while (a long prefill), so clients with idle timeouts wait.
  virtual std::string keep_alive() const { return ": keep-alive\n\n"; }

  // --- unstreamed
  virtual nlohmann::json response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const = 0;
};

// One SSE event: "data: {json}\n\n", or with a name "event: NAME\ndata: {json}\n\n".
std::string sse_data(const nlohmann::json& data);
std::string sse_event(std::string_view name, const nlohmann::json& data);

// A random id: prefix + 24 letters and digits ("chatcmpl-...", "resp_...", "msg_...").
std::string make_id(const std::string& prefix);
// The Unix time now, in seconds.
int64_t unix_now();

}  // namespace server
