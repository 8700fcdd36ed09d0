// /v1/messages' formatter: Anthropic's message object, or its stream of events (message_start,
// content_block_start / _delta / _stop, message_delta, message_stop, ping); and Anthropic's
// error shape, which is also the route's.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api/api_error.h"
#include "server/api/app.h"
#include "server/api/core/answer.h"
#include "server/api/core/formatter.h"
#include "server/api/anthropic_messages/messages_request.h"

namespace server {

// Content blocks in the order they appear: thinking (the model's reasoning, signature ""), text,
// tool_use (id "toolu_...", input an object) per call; a new block starts when the kind of output
// changes, white space alone opens no text block. stop_reason: end_turn (also when the operator's
// --max-tokens, below the request's max_tokens, ended the answer), stop_sequence (with
// stop_sequence), max_tokens (the request's limit or the context), tool_use. usage: input_tokens (the prompt
// tokens computed), cache_read_input_tokens (those taken from the prefix cache), output_tokens.
// Streamed, `event:` equals the data's type; keep-alives are ping events.
// Ownership: borrows the App; shares the request. Thread-safety: as Formatter.
class MessagesFormatter : public Formatter {
 public:
  MessagesFormatter(const App& app, std::shared_ptr<const MessagesRequest> request);

  std::string stream_open() const override;
  std::string stream_start(int index, const std::vector<engine::TokenEvent>& scored_prompt) const override;
  std::string stream_token(int index, const engine::TokenEvent& token) const override;
  std::string stream_finish(int index, engine::FinishReason reason, const engine::Usage& usage) const override;
  std::string stream_fail(const ApiError& error) const override;
  std::string stream_close(const UsageTotals& usage, bool failed) const override;
  std::string keep_alive() const override;
  nlohmann::json response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const override;

 private:
  enum class Open { kNone, kThinking, kText };

  std::string add(AnswerDelta d) const;
  std::string open(Open kind) const;
  std::string close() const;
  std::string add_call(const engine::tools::ToolCall& call) const;
  nlohmann::json tool_use(const engine::tools::ToolCall& call) const;
  nlohmann::json usage_json(const UsageTotals& usage) const;
  // The operator's --max-tokens (not the request's max_tokens, nor the context) ended the answer.
  bool cut_by_server(const engine::Usage& usage) const;

  const App& app_;
  std::shared_ptr<const MessagesRequest> request_;
  mutable AnswerStream stream_;
  mutable int blocks_ = 0;             // content blocks started
  mutable Open open_ = Open::kNone;
  mutable std::string pending_space_;  // white space not yet sent
  mutable engine::FinishReason reason_ = engine::FinishReason::kStop;
  mutable std::string stop_string_;
  mutable bool server_cap_ = false;
};

// Anthropic's error object: {"type": "error", "error": {"type", "message"}}, the type from the
// status (invalid_request_error, authentication_error, permission_error, not_found_error,
// request_too_large, rate_limit_error, overloaded_error, api_error).
nlohmann::json anthropic_error_json(const ApiError& error);

}  // namespace server
