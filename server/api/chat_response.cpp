#include "server/api/chat_response.h"

#include "engine/text/tokenizer/tokenizer.h"

namespace server {

using nlohmann::json;

namespace {

json token_logprob(const engine::Tokenizer& tok, int32_t id, float logprob) {
  const std::string piece(tok.piece(id));
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(c);
  return {{"token", piece}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}

}  // namespace

ChatFormatter::ChatFormatter(const App& app, std::shared_ptr<const ChatRequest> request)
    : app_(app),
      request_(std::move(request)),
      id_(make_id("chatcmpl-")),
      created_(unix_now()),
      plain_(request_->answer.reasoning == engine::tools::AnswerOptions::Reasoning::kNone &&
             !request_->answer.parse_calls) {}

json ChatFormatter::logprobs(const std::vector<engine::TokenEvent>& tokens) const {
  const engine::Tokenizer& tok = *app_.tokenizer;
  json content = json::array();
  for (const engine::TokenEvent& t : tokens) {
    json entry = token_logprob(tok, t.token, t.logprob);
    json top = json::array();
    for (const engine::TokenLogprob& alt : t.top) top.push_back(token_logprob(tok, alt.id, alt.logprob));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

json ChatFormatter::chunk(json choices) const {
  json c = {{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", app_.model_id},
            {"system_fingerprint", "ggufd"}, {"choices", std::move(choices)}};
  if (request_->params.include_usage) c["usage"] = nullptr;
  return c;
}

json ChatFormatter::delta_choice(int index, json delta, json logprobs, json finish) const {
  return json::array({{{"index", index}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)},
                       {"finish_reason", std::move(finish)}}});
}

json ChatFormatter::start_chunk(int index, const std::vector<engine::TokenEvent>&) const {
  return chunk(delta_choice(index, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr));
}

ChatFormatter::Stream& ChatFormatter::streamed(int index) const {
  while (streamed_.size() <= static_cast<size_t>(index)) {
    streamed_.push_back(std::make_unique<Stream>(Stream{engine::tools::AnswerParser(request_->answer), 0}));
  }
  return *streamed_[static_cast<size_t>(index)];
}

json ChatFormatter::tool_call_json(const engine::tools::ToolCall& call) const {
  return {{"id", engine::tools::make_call_id(app_.chat_features.syntax)},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

const char* ChatFormatter::finish_name(engine::FinishReason reason, bool has_calls) const {
  return has_calls && reason == engine::FinishReason::kStop ? "tool_calls" : engine::finish_reason_name(reason);
}

json ChatFormatter::delta_chunks(int index, engine::tools::AnswerParser::Delta d, json logprobs) const {
  json out = json::array();
  json delta = json::object();
  if (!d.reasoning.empty()) {
    delta["reasoning_content"] = d.reasoning;
    delta["reasoning"] = std::move(d.reasoning);
  }
  if (!d.content.empty()) delta["content"] = std::move(d.content);
  if (!delta.empty() || !logprobs.is_null()) {
    if (delta.empty()) delta["content"] = "";
    out.push_back(chunk(delta_choice(index, std::move(delta), std::move(logprobs), nullptr)));
  }
  Stream& s = streamed(index);
  for (const engine::tools::ToolCall& call : d.calls) {
    json head = tool_call_json(call);
    head["index"] = s.n_calls;
    head["function"]["arguments"] = "";
    json args = {{"index", s.n_calls}, {"function", {{"arguments", call.arguments}}}};
    ++s.n_calls;
    out.push_back(chunk(delta_choice(index, {{"tool_calls", json::array({std::move(head)})}}, nullptr, nullptr)));
    out.push_back(chunk(delta_choice(index, {{"tool_calls", json::array({std::move(args)})}}, nullptr, nullptr)));
  }
  return out;
}

json ChatFormatter::token_chunk(int index, const engine::TokenEvent& token) const {
  const bool with_logprobs = request_->params.n_logprobs >= 0 && token.token >= 0;
  json lp = with_logprobs ? logprobs({token}) : json(nullptr);
  if (plain_) {
    if (token.text.empty() && !with_logprobs) return nullptr;
    return chunk(delta_choice(index, {{"content", token.text}}, std::move(lp), nullptr));
  }
  json out = delta_chunks(index, streamed(index).parser.push(token.text), std::move(lp));
  if (out.empty()) return nullptr;
  return out.size() == 1 ? json(std::move(out[0])) : out;
}

json ChatFormatter::message(const ChoiceResult& c, bool& has_calls) const {
  has_calls = false;
  json m = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
  if (plain_) return m;
  engine::tools::AnswerParser parser(request_->answer);
  engine::tools::AnswerParser::Delta all = parser.push(c.text);
  engine::tools::AnswerParser::Delta rest = parser.flush();
  std::string content = all.content + rest.content;
  for (engine::tools::ToolCall& call : rest.calls) all.calls.push_back(std::move(call));
  if (std::string reasoning = all.reasoning + rest.reasoning; !reasoning.empty()) {
    m["reasoning_content"] = reasoning;
    m["reasoning"] = std::move(reasoning);  // the name newer clients read
  }
  if (!all.calls.empty()) {
    has_calls = true;
    json calls = json::array();
    for (const engine::tools::ToolCall& call : all.calls) calls.push_back(tool_call_json(call));
    m["tool_calls"] = std::move(calls);
  }
  const bool blank = content.find_first_not_of(" \t\r\n") == std::string::npos;
  m["content"] = blank && has_calls ? json(nullptr) : json(std::move(content));
  return m;
}

json ChatFormatter::finish_chunk(int index, engine::FinishReason reason) const {
  if (plain_) return chunk(delta_choice(index, json::object(), nullptr, engine::finish_reason_name(reason)));
  // what the parsers still hold (a cut marker, a call without its closing tag) goes out first
  Stream& s = streamed(index);
  json out = delta_chunks(index, s.parser.flush(), nullptr);
  out.push_back(chunk(delta_choice(index, json::object(), nullptr, finish_name(reason, s.n_calls > 0))));
  return out.size() == 1 ? json(std::move(out[0])) : out;
}

json ChatFormatter::usage_chunk(const json& usage) const {
  json c = chunk(json::array());
  c["usage"] = usage;
  return c;
}

json ChatFormatter::response(const std::vector<ChoiceResult>& choices, const json& usage) const {
  json out = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    bool has_calls = false;
    json m = message(c, has_calls);
    out.push_back({{"index", i},
                   {"message", std::move(m)},
                   {"logprobs", request_->params.n_logprobs >= 0 ? logprobs(c.tokens) : json(nullptr)},
                   {"finish_reason", finish_name(c.reason, has_calls)}});
  }
  return {{"id", id_}, {"object", "chat.completion"}, {"created", created_}, {"model", app_.model_id},
          {"system_fingerprint", "ggufd"}, {"choices", std::move(out)}, {"usage", usage}};
}

}  // namespace server
