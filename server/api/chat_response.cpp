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
      harmony_(engine::HarmonyTokens::find(*app_.tokenizer)) {}

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

json ChatFormatter::token_chunk(int index, const engine::TokenEvent& token) const {
  const bool with_logprobs = request_->params.n_logprobs >= 0 && token.token >= 0;
  json delta = json::object();
  if (harmony_) {
    while (streamed_.size() <= static_cast<size_t>(index)) streamed_.emplace_back(*harmony_);
    engine::HarmonyParser::Delta d = streamed_[static_cast<size_t>(index)].push(token.token, token.text);
    if (!d.reasoning.empty()) delta["reasoning_content"] = std::move(d.reasoning);
    if (!d.content.empty()) delta["content"] = std::move(d.content);
  } else if (!token.text.empty()) {
    delta["content"] = token.text;
  }
  if (delta.empty()) {
    if (!with_logprobs) return nullptr;
    delta["content"] = "";
  }
  return chunk(delta_choice(index, std::move(delta), with_logprobs ? logprobs({token}) : json(nullptr), nullptr));
}

json ChatFormatter::message(const ChoiceResult& c) const {
  json m = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
  if (!harmony_) return m;
  // the generated tokens, then the text released after the last one (the final flush)
  engine::HarmonyParser parser(*harmony_);
  std::string content, reasoning;
  size_t covered = 0;
  const auto take = [&](int32_t token, std::string_view text) {
    engine::HarmonyParser::Delta d = parser.push(token, text);
    content += d.content;
    reasoning += d.reasoning;
    covered += text.size();
  };
  for (const engine::TokenEvent& t : c.tokens) take(t.token, t.text);
  if (covered < c.text.size()) take(-1, std::string_view(c.text).substr(covered));
  m["content"] = std::move(content);
  if (!reasoning.empty()) {
    m["reasoning_content"] = reasoning;
    m["reasoning"] = std::move(reasoning);  // the name newer clients read
  }
  return m;
}

json ChatFormatter::finish_chunk(int index, engine::FinishReason reason) const {
  return chunk(delta_choice(index, json::object(), nullptr, engine::finish_reason_name(reason)));
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
