// The formatter of Ollama's /api/chat and /api/generate: NDJSON objects, one a line, streamed by
// default, or one object (stream: false); and Ollama's time stamps.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api/core/answer.h"
#include "server/api/core/formatter.h"
#include "server/api/ollama/ollama_request.h"

namespace server {

// Streamed, each piece of output is one line {"model", "created_at", "message": {"role":
// "assistant", "content", "thinking"?, "tool_calls"?} (chat) | "response", "thinking"? (generate),
// "done": false}; tool calls come whole ({"id", "function": {"index", "name", "arguments": {...}}}).
// The last line has done: true, done_reason ("stop", or "length" for num_predict or the
// context), total_duration, load_duration (0: the model was loaded before the request reached
// generation), prompt_eval_count (the prompt's tokens, those from the prefix cache included),
// prompt_eval_duration (to the first token), eval_count and eval_duration, in nanoseconds. A
// failed choice is the line {"error": "..."}. Unstreamed, one object has the whole answer and the
// final fields. Nothing is sent as a keep-alive (an NDJSON line must be an object).
// Ownership: shares the request and `ttft_ms` (the request's time to first
// token in ms, < 0 until known; the request stats'). Thread-safety: as Formatter.
class OllamaFormatter : public Formatter {
 public:
  OllamaFormatter(std::shared_ptr<const OllamaRequest> request, std::shared_ptr<const double> ttft_ms);

  std::string stream_start(int index, const std::vector<engine::TokenEvent>& scored_prompt) const override;
  std::string stream_token(int index, const engine::TokenEvent& token) const override;
  std::string stream_finish(int index, engine::FinishReason reason, const engine::Usage& usage) const override;
  std::string stream_fail(const ApiError& error) const override;
  std::string stream_close(const UsageTotals& usage, bool failed) const override;
  std::string keep_alive() const override { return {}; }
  nlohmann::json response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const override;

 private:
  nlohmann::json head() const;
  // head() with the output: a message (chat) or response (generate), thinking and calls when any.
  nlohmann::json output(const std::string& text, const std::string& reasoning,
                        const std::vector<engine::tools::ToolCall>& calls) const;
  std::string piece(const AnswerDelta& d) const;
  nlohmann::json final_fields(nlohmann::json object, const char* reason, const UsageTotals& usage) const;
  nlohmann::json calls_json(const std::vector<engine::tools::ToolCall>& calls) const;

  std::shared_ptr<const OllamaRequest> request_;
  std::shared_ptr<const double> ttft_ms_;
  std::chrono::steady_clock::time_point start_;
  mutable AnswerStream stream_;
  mutable int calls_ = 0;
  mutable const char* reason_ = "stop";
};

// The one object that answers a request with nothing to generate: done, done_reason ("load" for a
// load-only request, OllamaRequest::load_only; "unload" for one with keep_alive 0 too), and an
// empty message (chat) or response (generate).
nlohmann::json ollama_done_json(const std::string& model, bool chat, const char* reason);

// A time as Ollama writes it (RFC 3339, UTC): "2026-11-29T15:26:06.123456789Z".
std::string ollama_time(std::chrono::system_clock::time_point t);
std::string ollama_time_of(int64_t unix_seconds);

// One NDJSON line: the object's JSON text and "\n".
std::string ndjson_line(const nlohmann::json& object);

}  // namespace server
