// /v1/completions' formatter: text_completion objects, streamed or not (OpenAI's legacy shape).
#pragma once

#include <memory>

#include "server/api/app.h"
#include "server/api/core/formatter.h"
#include "server/api/openai_completions/completion_request.h"

namespace server {

// Ownership: borrows the App (which outlives every request); shares the request.
class CompletionFormatter : public Formatter {
 public:
  CompletionFormatter(const App& app, std::shared_ptr<const CompletionRequest> request);

  std::string stream_start(int index, const std::vector<engine::TokenEvent>& scored_prompt) const override;
  bool start_after_prompt() const override;
  std::string stream_token(int index, const engine::TokenEvent& token) const override;
  std::string stream_finish(int index, engine::FinishReason reason, const engine::Usage& usage) const override;
  std::string stream_fail(const ApiError& error) const override;
  std::string stream_close(const UsageTotals& usage, bool failed) const override;
  nlohmann::json response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const override;

 private:
  // One choice object: the pieces a chunk and the unstreamed response share.
  nlohmann::json choice(int index, const std::string& text, nlohmann::json logprobs, nlohmann::json finish) const;
  nlohmann::json envelope(nlohmann::json choices) const;
  // The legacy logprobs object of `tokens`, preceded by the prompt's (`scored` for its tokens after
  // the first) when `prompt_index` >= 0.
  nlohmann::json logprobs(int prompt_index, const std::vector<engine::TokenEvent>& scored,
                          const std::vector<engine::TokenEvent>& tokens) const;

  const App& app_;
  std::shared_ptr<const CompletionRequest> request_;
  std::string id_;
  int64_t created_;
};

}  // namespace server
