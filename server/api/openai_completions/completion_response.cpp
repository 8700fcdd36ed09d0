#include "server/api/openai_completions/completion_response.h"

#include "server/api/openai_shapes.h"

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

std::string CompletionFormatter::stream_start(int index, const std::vector<engine::TokenEvent>& scored_prompt) const {
  if (!request_->echo) return {};
  const int prompt = index / request_->params.n;
  json lp = request_->params.prompt_logprobs ? logprobs(prompt, scored_prompt, {}) : json(nullptr);
  json c = envelope(json::array({choice(index, request_->prompt_texts[static_cast<size_t>(prompt)], std::move(lp), nullptr)}));
  if (request_->params.include_usage) c["usage"] = nullptr;
  return sse_data(c);
}

bool CompletionFormatter::start_after_prompt() const { return request_->echo && request_->params.prompt_logprobs; }

std::string CompletionFormatter::stream_token(int index, const engine::TokenEvent& token) const {
  const bool with_logprobs = request_->params.n_logprobs >= 0 && token.token >= 0;
  json c = envelope(json::array({choice(index, token.text, with_logprobs ? logprobs(-1, {}, {token}) : json(nullptr),
                                        nullptr)}));
  if (request_->params.include_usage) c["usage"] = nullptr;
  return sse_data(c);
}

std::string CompletionFormatter::stream_finish(int index, engine::FinishReason reason, const engine::Usage&) const {
  json c = envelope(json::array({choice(index, "", nullptr, engine::finish_reason_name(reason))}));
  if (request_->params.include_usage) c["usage"] = nullptr;
  return sse_data(c);
}

std::string CompletionFormatter::stream_fail(const ApiError& error) const { return openai_stream_error(error); }

std::string CompletionFormatter::stream_close(const UsageTotals& usage, bool failed) const {
  std::string out;
  if (request_->params.include_usage && !failed) {
    json c = envelope(json::array());
    c["usage"] = openai_usage_json(usage);
    out += sse_data(c);
  }
  return out + "data: [DONE]\n\n";
}

json CompletionFormatter::response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const {
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
  response["usage"] = openai_usage_json(usage);
  return response;
}

}  // namespace server
