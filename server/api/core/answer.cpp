#include "server/api/core/answer.h"

namespace server {

namespace tools = engine::tools;

AnswerStream::AnswerStream(const tools::AnswerOptions& options) {
  if (options.reasoning != tools::AnswerOptions::Reasoning::kNone || options.parse_calls) parser_.emplace(options);
}

AnswerDelta AnswerStream::push(const engine::TokenEvent& token) {
  AnswerDelta d;
  if (!parser_) {
    d.text = token.text;
    return d;
  }
  tools::AnswerParser::Delta p = parser_->push(token.text);
  if (!p.reasoning.empty() && token.token >= 0) ++reasoning_tokens_;
  d.reasoning = std::move(p.reasoning);
  d.text = std::move(p.content);
  d.calls = std::move(p.calls);
  calls_ += static_cast<int>(d.calls.size());
  return d;
}

AnswerDelta AnswerStream::finish() {
  AnswerDelta d;
  if (!parser_) return d;
  tools::AnswerParser::Delta p = parser_->flush();
  d.reasoning = std::move(p.reasoning);
  d.text = std::move(p.content);
  d.calls = std::move(p.calls);
  calls_ += static_cast<int>(d.calls.size());
  return d;
}

Answer read_answer(const tools::AnswerOptions& options, const ChoiceResult& choice) {
  AnswerStream stream(options);
  Answer a;
  auto add = [&a](AnswerDelta d) {
    a.reasoning += d.reasoning;
    a.text += d.text;
    for (tools::ToolCall& c : d.calls) a.calls.push_back(std::move(c));
  };
  if (stream.plain()) {
    a.text = choice.text;
    return a;
  }
  // token by token, to count the reasoning's tokens; then what came after the last token (the
  // decoder's and stop matcher's held-back text)
  size_t consumed = 0;
  for (const engine::TokenEvent& t : choice.tokens) {
    consumed += t.text.size();
    add(stream.push(t));
  }
  if (consumed < choice.text.size()) {
    engine::TokenEvent rest;
    rest.text = choice.text.substr(consumed);
    add(stream.push(rest));
  }
  add(stream.finish());
  a.reasoning_tokens = stream.reasoning_tokens();
  return a;
}

StopKind stop_kind(engine::FinishReason reason, const engine::Usage& usage, bool has_calls) {
  switch (reason) {
    case engine::FinishReason::kStop:
      if (has_calls) return StopKind::kToolCalls;
      return usage.stop_string.empty() ? StopKind::kEnd : StopKind::kStopSequence;
    case engine::FinishReason::kLength: return StopKind::kLength;
    default: return StopKind::kOther;
  }
}

}  // namespace server
