// /v1/chat/completions' formatter: chat.completion objects or chat.completion.chunk events.
#pragma once

#include <memory>
#include <vector>

#include "engine/text/tools/answer_parser.h"

#include "server/api/app.h"
#include "server/api/chat_request.h"
#include "server/api/response_format.h"

namespace server {

// The output of each choice is split by an AnswerParser (engine/text/tools/answer_parser.h) as the
// request says: reasoning (<think> blocks, harmony's analysis channel) to reasoning_content (and
// `reasoning`), tool calls to tool_calls (finish_reason "tool_calls"), the rest to content.
// Streamed, a call goes out once it is complete: a delta with its index, id, type and name, then
// one with its arguments; unstreamed and streamed output give the same calls.
// Ownership: borrows the App (which outlives every request); shares the request.
// Thread-safety: as ResponseFormatter (one call at a time); the per-choice stream state is
// mutable for that reason.
class ChatFormatter : public ResponseFormatter {
 public:
  ChatFormatter(const App& app, std::shared_ptr<const ChatRequest> request);

  nlohmann::json start_chunk(int index, const std::vector<engine::TokenEvent>& scored_prompt) const override;
  bool start_after_prompt() const override { return false; }
  // May be an array of chunks (a call's two deltas).
  nlohmann::json token_chunk(int index, const engine::TokenEvent& token) const override;
  nlohmann::json finish_chunk(int index, engine::FinishReason reason) const override;
  nlohmann::json usage_chunk(const nlohmann::json& usage) const override;
  nlohmann::json response(const std::vector<ChoiceResult>& choices, const nlohmann::json& usage) const override;

 private:
  // One streamed choice: its parser, the calls sent so far.
  struct Stream {
    engine::tools::AnswerParser parser;
    int n_calls = 0;
  };

  nlohmann::json chunk(nlohmann::json choices) const;
  nlohmann::json delta_choice(int index, nlohmann::json delta, nlohmann::json logprobs, nlohmann::json finish) const;
  // OpenAI's logprobs object ({"content": [...]}) of `tokens`.
  nlohmann::json logprobs(const std::vector<engine::TokenEvent>& tokens) const;
  // The message of an unstreamed choice, and whether it holds calls.
  nlohmann::json message(const ChoiceResult& c, bool& has_calls) const;
  // The chunks of one parsed piece of choice `index` (empty array: nothing to send).
  nlohmann::json delta_chunks(int index, engine::tools::AnswerParser::Delta d, nlohmann::json logprobs) const;
  Stream& streamed(int index) const;
  nlohmann::json tool_call_json(const engine::tools::ToolCall& call) const;
  const char* finish_name(engine::FinishReason reason, bool has_calls) const;

  const App& app_;
  std::shared_ptr<const ChatRequest> request_;
  std::string id_;
  int64_t created_;
  bool plain_;  // no reasoning and no calls to read: text goes straight to content
  mutable std::vector<std::unique_ptr<Stream>> streamed_;  // by choice index, while streaming
};

}  // namespace server
