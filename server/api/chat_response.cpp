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
      harmony_(engine::HarmonyParser::applies_to(*app_.tokenizer)) {}

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

engine::HarmonyParser& ChatFormatter::streamed(int index) const {
  while (streamed_.size() <= static_cast<size_t>(index)) streamed_.emplace_back();
  return streamed_[static_cast<size_t>(index)];
}

namespace {

json delta_of(engine::HarmonyParser::Delta d) {
  json delta = json::object();
  if (!d.reasoning.empty()) delta["reasoning_content"] = std::move(d.reasoning);
  if (!d.content.empty()) delta["content"] = std::move(d.content);
  return delta;
}

}  // namespace

json ChatFormatter::text_delta(int index, const std::string& text) const {
  if (harmony_) return delta_of(streamed(index).push(text));
  return text.empty() ? json::object() : json{{"content", text}};
}

json ChatFormatter::token_chunk(int index, const engine::TokenEvent& token) const {
  const bool with_logprobs = request_->params.n_logprobs >= 0 && token.token >= 0;
  json delta = text_delta(index, token.text);
  if (delta.empty()) {
    if (!with_logprobs) return nullptr;
    delta["content"] = "";
  }
  return chunk(delta_choice(index, std::move(delta), with_logprobs ? logprobs({token}) : json(nullptr), nullptr));
}

json ChatFormatter::message(const ChoiceResult& c) const {
  json m = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
  if (!harmony_) return m;
  engine::HarmonyParser parser;
  engine::HarmonyParser::Delta all = parser.push(c.text);
  engine::HarmonyParser::Delta rest = parser.flush();
  m["content"] = all.content + rest.content;
  if (std::string reasoning = all.reasoning + rest.reasoning; !reasoning.empty()) {
    m["reasoning_content"] = reasoning;
    m["reasoning"] = std::move(reasoning);  // the name newer clients read
  }
  return m;
}

json ChatFormatter::finish_chunk(int index, engine::FinishReason reason) const {
  // what a harmony parser still holds (a trailing "<|" that never became a marker) goes out here
  json delta = harmony_ ? delta_of(streamed(index).flush()) : json::object();
  return chunk(delta_choice(index, std::move(delta), nullptr, engine::finish_reason_name(reason)));
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
    out.push_back({{"index", i},
                   {"message", message(c)},
                   {"logprobs", request_->params.n_logprobs >= 0 ? logprobs(c.tokens) : json(nullptr)},
                   {"finish_reason", engine::finish_reason_name(c.reason)}});
  }
  return {{"id", id_}, {"object", "chat.completion"}, {"created", created_}, {"model", app_.model_id},
          {"system_fingerprint", "ggufd"}, {"choices", std::move(out)}, {"usage", usage}};
}

}  // namespace server
