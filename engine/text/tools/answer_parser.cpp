#include "engine/text/tools/answer_parser.h"

namespace engine::tools {

AnswerParser::AnswerParser(AnswerOptions options) : o_(std::move(options)) {
  if (o_.reasoning == AnswerOptions::Reasoning::kThink) think_.emplace(o_.starts_in_think, o_.think_tags);
  if (o_.reasoning == AnswerOptions::Reasoning::kHarmony) harmony_.emplace(o_.parse_calls);
  if (o_.parse_calls && o_.syntax != ToolSyntax::kHarmony) calls_.emplace(o_.syntax, o_.names, o_.tools);
}

void AnswerParser::pass(std::string reasoning, std::string content, std::vector<HarmonyParser::Call> calls, Delta& d) {
  d.reasoning += reasoning;
  // harmony: a message to a function; one we did not offer (or with arguments that are not an
  // object) is dropped: it is neither a call the client can run nor text addressed to the user
  for (HarmonyParser::Call& c : calls) {
    const nlohmann::ordered_json args = nlohmann::ordered_json::parse(c.arguments, nullptr, false);
    if (args.is_discarded()) continue;
    if (auto call = call_from_json({{"name", c.name}, {"arguments", args}}, o_.names)) d.calls.push_back(std::move(*call));
  }
  if (!calls_) {
    d.content += content;
    return;
  }
  ToolCallParser::Delta t = calls_->push(content);
  d.content += t.content;
  for (ToolCall& c : t.calls) d.calls.push_back(std::move(c));
}

AnswerParser::Delta AnswerParser::push(std::string_view text) {
  Delta d;
  if (harmony_) {
    HarmonyParser::Delta h = harmony_->push(text);
    pass(std::move(h.reasoning), std::move(h.content), std::move(h.calls), d);
  } else if (think_) {
    ThinkParser::Delta t = think_->push(text);
    pass(std::move(t.reasoning), std::move(t.content), {}, d);
  } else {
    pass({}, std::string(text), {}, d);
  }
  return d;
}

AnswerParser::Delta AnswerParser::flush() {
  Delta d;
  if (harmony_) {
    HarmonyParser::Delta h = harmony_->flush();
    pass(std::move(h.reasoning), std::move(h.content), std::move(h.calls), d);
  } else if (think_) {
    ThinkParser::Delta t = think_->flush();
    pass(std::move(t.reasoning), std::move(t.content), {}, d);
  }
  if (calls_) {
    ToolCallParser::Delta t = calls_->flush();
    d.content += t.content;
    for (ToolCall& c : t.calls) d.calls.push_back(std::move(c));
  }
  return d;
}

}  // namespace engine::tools
