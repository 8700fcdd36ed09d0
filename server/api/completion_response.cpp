#include "server/api/completion_response.h"

#include "engine/text/tokenizer/tokenizer.h"

namespace server {

using nlohmann::json;

CompletionFormatter::CompletionFormatter(const App& app, std::shared_ptr<const CompletionRequest> request)
    : app_(app), request_(std::move(request)), id_(make_id("cmpl-")), created_(unix_now()) {}

json CompletionFormatter::envelope(json choices) const {
  json c = {{"id", id_}, {"object", "text_completion"}, {"created", created_}, {"model", app_.model_id},
            {"system_fingerprint", "ggufd"}, {"choices", std::move(choices)}};
  return c;
}

json CompletionFormatter::choice(int index, const std::string& text, json logprobs, json finish) const {
  return {{"text", text}, {"index", index}, {"logprobs", std::move(logprobs)}, {"finish_reason", std::move(finish)}};
}

// With echo and logprobs, the prompt's tokens come first: its first token has no logprob
// (nothing precedes it), the others come from `scored`.
json CompletionFormatter::logprobs(int prompt_index, const std::vector<engine::TokenEvent>& scored,
                                   const std::vector<engine::TokenEvent>& tokens) const {
  const engine::Tokenizer& tok = *app_.tokenizer;
  json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  auto add = [&](int32_t id, json logprob, json top) {
    const std::string piece(tok.piece(id));
    toks.push_back(piece);
    lps.push_back(std::move(logprob));
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += piece.size();
  };
  auto top_of = [&](const engine::TokenEvent& t) {
    json top = json::object();
    for (const engine::TokenLogprob& alt : t.top) top[std::string(tok.piece(alt.id))] = alt.logprob;
    return top;
  };
  if (prompt_index >= 0) {
    const auto& prompt = request_->prompts[static_cast<size_t>(prompt_index)];
    if (!prompt.empty()) add(prompt[0], nullptr, nullptr);
    for (const engine::TokenEvent& t : scored) add(t.token, t.logprob, top_of(t));
  }
  for (const engine::TokenEvent& t : tokens) add(t.token, t.logprob, top_of(t));
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json CompletionFormatter::start_chunk(int index, const std::vector<engine::TokenEvent>& scored_prompt) const {
  if (!request_->echo) return nullptr;
  const int prompt = index / request_->params.n;
  json lp = request_->params.prompt_logprobs ? logprobs(prompt, scored_prompt, {}) : json(nullptr);
  json c = envelope(json::array({choice(index, request_->prompt_texts[static_cast<size_t>(prompt)], std::move(lp), nullptr)}));
  if (request_->params.include_usage) c["usage"] = nullptr;
  return c;
}

bool CompletionFormatter::start_after_prompt() const { return request_->echo && request_->params.prompt_logprobs; }

json CompletionFormatter::token_chunk(int index, const engine::TokenEvent& token) const {
  const bool with_logprobs = request_->params.n_logprobs >= 0 && token.token >= 0;
  json c = envelope(json::array({choice(index, token.text, with_logprobs ? logprobs(-1, {}, {token}) : json(nullptr),
                                        nullptr)}));
  if (request_->params.include_usage) c["usage"] = nullptr;
  return c;
}

json CompletionFormatter::finish_chunk(int index, engine::FinishReason reason) const {
  json c = envelope(json::array({choice(index, "", nullptr, engine::finish_reason_name(reason))}));
  if (request_->params.include_usage) c["usage"] = nullptr;
  return c;
}

json CompletionFormatter::usage_chunk(const json& usage) const {
  json c = envelope(json::array());
  c["usage"] = usage;
  return c;
}

json CompletionFormatter::response(const std::vector<ChoiceResult>& choices, const json& usage) const {
  const CompletionRequest& r = *request_;
  json out = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    const int prompt = static_cast<int>(i) / r.params.n;
    json lp = nullptr;
    if (r.params.n_logprobs >= 0) lp = logprobs(r.params.prompt_logprobs ? prompt : -1, c.prompt_tokens, c.tokens);
    const std::string text = r.echo ? r.prompt_texts[static_cast<size_t>(prompt)] + c.text : c.text;
    out.push_back(choice(static_cast<int>(i), text, std::move(lp), engine::finish_reason_name(c.reason)));
  }
  json response = envelope(std::move(out));
  response["usage"] = usage;
  return response;
}

}  // namespace server
