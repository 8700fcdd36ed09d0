// /v1/responses' formatter: the response object, or the stream of typed events that builds it
// (response.created ... response.completed), as OpenAI's Responses API sends them.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api/app.h"
#include "server/api/core/answer.h"
#include "server/api/core/formatter.h"
#include "server/api/openai_responses/responses_request.h"

namespace server {

// Output items, in the order they appear: a reasoning item (its reasoning_text content; with
// reasoning.summary asked, also as its summary), a message item (one output_text part), then a
// function_call item per call (call_id "call_...", item id "fc_..."). A new item starts when the
// kind of output changes. Streamed, each item is announced (output_item.added), filled (content
// parts and deltas; a call's arguments in one delta once the call is complete) and closed with
// its complete form (output_item.done); every event carries `type` and `sequence_number`. The
// end is response.completed -- with status "incomplete" and incomplete_details.reason
// "max_output_tokens" when the token limit cut it (not OpenAI's response.incomplete, which Codex
// CLI does not know) -- or response.failed (error.code). With `store`, the finished response and
// its conversation go to the App's ResponseStore.
// Ownership: borrows the App; shares the request. Thread-safety: as Formatter.
class ResponsesFormatter : public Formatter {
 public:
  ResponsesFormatter(const App& app, std::shared_ptr<const ResponsesRequest> request);

  std::string stream_open() const override;
  std::string stream_start(int index, const std::vector<engine::TokenEvent>& scored_prompt) const override;
  std::string stream_token(int index, const engine::TokenEvent& token) const override;
  std::string stream_finish(int index, engine::FinishReason reason, const engine::Usage& usage) const override;
  std::string stream_fail(const ApiError& error) const override;
  std::string stream_close(const UsageTotals& usage, bool failed) const override;
  // Before any output (a long prefill): response.in_progress again, an event that also resets
  // the idle timers of clients that count events, not comments (Codex CLI); then an SSE comment.
  std::string keep_alive() const override;
  nlohmann::json response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const override;

 private:
  enum class Open { kNone, kReasoning, kMessage };

  // The response object with `status`, the output so far and `usage` (null: none yet).
  nlohmann::json object(const std::string& status, nlohmann::json usage) const;
  std::string event(const std::string& type, nlohmann::json data) const;
  // Streamed pieces: what a delta adds, opening and closing items as the kind changes.
  std::string add(AnswerDelta d) const;
  std::string open(Open kind) const;
  std::string close() const;
  std::string add_call(const engine::tools::ToolCall& call) const;
  // The items of a whole answer (unstreamed).
  void append_items(const Answer& answer) const;
  nlohmann::json reasoning_item(const std::string& id, const std::string& text, const std::string& status) const;
  nlohmann::json message_item(const std::string& id, const std::string& text, const std::string& status) const;
  nlohmann::json call_item(const engine::tools::ToolCall& call, const std::string& call_id) const;
  // The status of a finished item: "incomplete" when the token limit cut the response.
  const char* done_status() const;
  // status, incomplete_details and usage of a finished response; stores it when asked.
  nlohmann::json finished(engine::FinishReason reason, const UsageTotals& usage) const;

  const App& app_;
  std::shared_ptr<const ResponsesRequest> request_;
  int64_t created_;
  mutable AnswerStream stream_;
  mutable int sequence_ = 0;
  mutable nlohmann::json output_ = nlohmann::json::array();  // the items finished so far
  mutable Open open_ = Open::kNone;
  mutable std::string open_id_;
  mutable std::string open_text_;
  mutable Message said_;                                     // the assistant turn, for the store
  mutable std::string pending_space_;                        // white space not yet sent
  mutable engine::FinishReason reason_ = engine::FinishReason::kStop;
  mutable int64_t reasoning_tokens_ = 0;
};

// The error event of a streamed request that failed before generating (a prompt longer than the
// context): response.created, then response.failed with the error's code.
std::string responses_failed_stream(const App& app, std::shared_ptr<const ResponsesRequest> request,
                                    const ApiError& error);

}  // namespace server
