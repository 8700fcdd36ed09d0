// /v1/chat/completions' formatter: chat.completion objects or chat.completion.chunk events.
#pragma once

#include <memory>
#include <vector>

#include "server/api/app.h"
#include "server/api/core/answer.h"
#include "server/api/core/formatter.h"
#include "server/api/openai_chat/chat_request.h"

namespace server {

// Each choice's output is split by the core (core/answer.h): reasoning to reasoning_content (and
// `reasoning`), tool calls to tool_calls (finish_reason "tool_calls"), the rest to content.
// Streamed, a call goes out once it is complete: a delta with its index, id, type and name, then
// one with its arguments; unstreamed and streamed output give the same calls.
// Ownership: borrows the App (which outlives every request); shares the request.
// Thread-safety: as Formatter (one call at a time); the per-choice stream state is mutable.
class ChatFormatter : public Formatter {
 public:
  ChatFormatter(const App& app, std::shared_ptr<const ChatRequest> request);

  std::string stream_start(int index, const std::vector<engine::TokenEvent>& scored_prompt) const override;
  std::string stream_token(int index, const engine::TokenEvent& token) const override;
  std::string stream_finish(int index, engine::FinishReason reason, const engine::Usage& usage) const override;
  std::string stream_fail(const ApiError& error) const override;
  std::string stream_close(const UsageTotals& usage, bool failed) const override;
  nlohmann::json response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const override;

  // The chunks of a generated piece of choice `index`: one chunk, an array of chunks (a call's
  // two deltas), or null to send nothing.
  nlohmann::json token_chunk(int index, const engine::TokenEvent& token) const;
  // The end of choice `index`: one chunk or an array (the last holds finish_reason).
  nlohmann::json finish_chunk(int index, engine::FinishReason reason) const;

 private:
  nlohmann::json chunk(nlohmann::json choices) const;
  nlohmann::json delta_choice(int index, nlohmann::json delta, nlohmann::json logprobs, nlohmann::json finish) const;
  // OpenAI's logprobs object ({"content": [...]}) of `tokens`.
  nlohmann::json logprobs(const std::vector<engine::TokenEvent>& tokens) const;
  // The message of an unstreamed choice, and whether it holds calls.
  nlohmann::json message(const ChoiceResult& c, bool& has_calls) const;
  // The chunks of one parsed piece of choice `index` (empty array: nothing to send).
  nlohmann::json delta_chunks(int index, AnswerDelta d, nlohmann::json logprobs) const;
  AnswerStream& streamed(int index) const;
  nlohmann::json tool_call_json(const engine::tools::ToolCall& call) const;

  const App& app_;
  std::shared_ptr<const ChatRequest> request_;
  std::string id_;
  int64_t created_;
  mutable std::vector<std::unique_ptr<AnswerStream>> streamed_;  // by choice index, while streaming
};

}  // namespace server
