// /v1/chat/completions' formatter: chat.completion objects or chat.completion.chunk events.
#pragma once

#include <memory>
#include <vector>

#include "engine/text/harmony.h"

#include "server/api/app.h"
#include "server/api/chat_request.h"
#include "server/api/response_format.h"

namespace server {

// With a harmony vocabulary (gpt-oss), the analysis channel's text goes to reasoning_content and
// the final channel's to content (engine/text/harmony.h); otherwise all text is content.
// Ownership: borrows the App (which outlives every request); shares the request.
// Thread-safety: as ResponseFormatter (one call at a time); token_chunk keeps each streamed
// choice's harmony state, which is why it is mutable.
class ChatFormatter : public ResponseFormatter {
 public:
  ChatFormatter(const App& app, std::shared_ptr<const ChatRequest> request);

  nlohmann::json start_chunk(int index, const std::vector<engine::TokenEvent>& scored_prompt) const override;
  bool start_after_prompt() const override { return false; }
  nlohmann::json token_chunk(int index, const engine::TokenEvent& token) const override;
  nlohmann::json finish_chunk(int index, engine::FinishReason reason) const override;
  nlohmann::json usage_chunk(const nlohmann::json& usage) const override;
  nlohmann::json response(const std::vector<ChoiceResult>& choices, const nlohmann::json& usage) const override;

 private:
  nlohmann::json chunk(nlohmann::json choices) const;
  nlohmann::json delta_choice(int index, nlohmann::json delta, nlohmann::json logprobs, nlohmann::json finish) const;
  // OpenAI's logprobs object ({"content": [...]}) of `tokens`.
  nlohmann::json logprobs(const std::vector<engine::TokenEvent>& tokens) const;
  // The message of an unstreamed choice: content, and reasoning_content when there was any.
  nlohmann::json message(const ChoiceResult& c) const;

  const App& app_;
  std::shared_ptr<const ChatRequest> request_;
  std::string id_;
  int64_t created_;
  // The delta object of one streamed piece of choice `index` (empty: nothing to send).
  nlohmann::json text_delta(int index, const std::string& text) const;
  engine::HarmonyParser& streamed(int index) const;

  bool harmony_;
  mutable std::vector<engine::HarmonyParser> streamed_;  // by choice index, while streaming
};

}  // namespace server
