// A choice's output as every dialect sees it: reasoning, text and complete tool calls, split from
// the model's tokens by the request's AnswerOptions (engine/text/tools/answer_parser.h), streamed
// piece by piece or read whole -- the same result either way. Call ids are the dialect's to give.
// Coroutine-free (server/api).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "engine/text/tools/answer_parser.h"
#include "server/api/core/formatter.h"

namespace server {

// What one token (or the end) adds to a choice.
struct AnswerDelta {
  std::string reasoning;
  std::string text;
  std::vector<engine::tools::ToolCall> calls;  // complete calls of offered functions
  bool empty() const { return reasoning.empty() && text.empty() && calls.empty(); }
};

// A whole answer.
struct Answer {
  std::string reasoning;
  std::string text;
  std::vector<engine::tools::ToolCall> calls;
  int64_t reasoning_tokens = 0;  // generated tokens that went to the reasoning
};

// One choice's streamed output. Not thread-safe; one per choice.
class AnswerStream {
 public:
  explicit AnswerStream(const engine::tools::AnswerOptions& options);

  // Without reasoning or calls to read, text passes through unchanged.
  bool plain() const { return !parser_; }
  AnswerDelta push(const engine::TokenEvent& token);
  // What the parsers still hold (a cut marker, a call without its closing tag).
  AnswerDelta finish();
  int calls() const { return calls_; }
  int64_t reasoning_tokens() const { return reasoning_tokens_; }

 private:
  std::optional<engine::tools::AnswerParser> parser_;
  int calls_ = 0;
  int64_t reasoning_tokens_ = 0;
};

// The answer of a collected choice, as AnswerStream gives it piece by piece.
Answer read_answer(const engine::tools::AnswerOptions& options, const ChoiceResult& choice);

// The reason a choice ended as the dialects tell it apart.
enum class StopKind {
  kEnd,           // the model ended its answer (end token, or a grammar that is complete)
  kStopSequence,  // a stop string matched (engine::Usage::stop_string)
  kToolCalls,     // it ended with tool calls
  kLength,        // the token limit or the context
  kOther,         // cancelled, timed out, failed (an error, not a finish)
};
StopKind stop_kind(engine::FinishReason reason, const engine::Usage& usage, bool has_calls);

}  // namespace server
