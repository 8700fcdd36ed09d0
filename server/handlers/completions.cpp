// POST /v1/completions: OpenAI's legacy completions (text_completion objects), streamed or not.
#include <nlohmann/json.hpp>

#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/completion_request.h"
#include "server/api/request_json.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"
#include "server/work_pool.h"

namespace server {

using nlohmann::json;

namespace {

// The legacy logprobs object. With echo and logprobs, the prompt's tokens come first: its first
// token has no logprob (nothing precedes it), the others come from `scored`.
json logprobs_json(const App& app, const std::vector<int32_t>* prompt, const std::vector<engine::TokenEvent>& scored,
                   const std::vector<engine::TokenEvent>& tokens) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  auto add = [&](int32_t id, json logprob, json top) {
    const std::string piece(app.tokenizer->piece(id));
    toks.push_back(piece);
    lps.push_back(std::move(logprob));
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += piece.size();
  };
  auto top_of = [&](const engine::TokenEvent& t) {
    json top = json::object();
    for (const engine::TokenLogprob& alt : t.top) top[std::string(app.tokenizer->piece(alt.id))] = alt.logprob;
    return top;
  };
  if (prompt != nullptr && !prompt->empty()) {
    add((*prompt)[0], nullptr, nullptr);
    for (const engine::TokenEvent& t : scored) add(t.token, t.logprob, top_of(t));
  }
  for (const engine::TokenEvent& t : tokens) add(t.token, t.logprob, top_of(t));
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json envelope(const App& app, const std::string& id, int64_t created, json choices) {
  return json{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", app.model_id},
              {"system_fingerprint", "ggufd"}, {"choices", std::move(choices)}};
}

StreamFormat stream_format(const App& app, const CompletionRequest& r, const std::string& id, int64_t created) {
  const bool with_usage = r.params.include_usage;
  auto chunk = [&app, id, created, with_usage](int index, const std::string& text, json finish, json logprobs) {
    json c = envelope(app, id, created,
                      json::array({{{"text", text}, {"index", index}, {"logprobs", std::move(logprobs)},
                                    {"finish_reason", std::move(finish)}}}));
    if (with_usage) c["usage"] = nullptr;
    return c;
  };
  StreamFormat f;
  const int n = r.params.n;
  if (r.echo) {
    f.start_after_prompt = r.params.prompt_logprobs;
    f.start = [&app, chunk, r, n](int i, const std::vector<engine::TokenEvent>& scored) {
      const auto& prompt = r.prompts[static_cast<size_t>(i / n)];
      json lp = r.params.prompt_logprobs ? logprobs_json(app, &prompt, scored, {}) : json(nullptr);
      return chunk(i, r.prompt_texts[static_cast<size_t>(i / n)], nullptr, std::move(lp));
    };
  }
  const bool want_logprobs = r.params.n_logprobs >= 0;
  f.token = [chunk, want_logprobs, &app](int i, const engine::TokenEvent& t) {
    return chunk(i, t.text, nullptr, want_logprobs && t.token >= 0 ? logprobs_json(app, nullptr, {}, {t}) : json(nullptr));
  };
  f.finish = [chunk](int i, engine::FinishReason reason) {
    return chunk(i, "", engine::finish_reason_name(reason), nullptr);
  };
  f.usage = [&app, id, created](const json& usage) {
    json c = envelope(app, id, created, json::array());
    c["usage"] = usage;
    return c;
  };
  return f;
}

std::string response_body(const App& app, const CompletionRequest& r, const std::string& id, int64_t created,
                          const std::vector<ChoiceResult>& results, json usage) {
  const int n = r.params.n;
  json choices = json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const ChoiceResult& c = results[i];
    const auto& prompt = r.prompts[i / static_cast<size_t>(n)];
    json logprobs = nullptr;
    if (r.params.n_logprobs >= 0) {
      logprobs = logprobs_json(app, r.params.prompt_logprobs ? &prompt : nullptr, c.prompt_tokens, c.tokens);
    }
    choices.push_back({{"text", r.echo ? r.prompt_texts[i / static_cast<size_t>(n)] + c.text : c.text},
                       {"index", i},
                       {"logprobs", std::move(logprobs)},
                       {"finish_reason", engine::finish_reason_name(c.reason)}});
  }
  json response = envelope(app, id, created, std::move(choices));
  response["usage"] = std::move(usage);
  return dump_json(response);
}

}  // namespace

void add_completions_routes(Router& router, App& app) {
  router.add("POST", "/v1/completions", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    require_ready(app);
    const CompletionRequest r = co_await app.work->run([&app, &req] { return prepare_completion(app, req.body); });
    const int n_choices = static_cast<int>(r.prompts.size()) * r.params.n;
    auto channel = submit_generations(app, ctx, r.prompts, r.params);
    const std::string id = make_id("cmpl-");
    const int64_t created = unix_now();
    if (r.params.stream) {
      HttpResponse stream;
      stream.content_type = "text/event-stream";
      stream.stream = make_event_stream(channel, n_choices, r.params.n, r.params.include_usage,
                                        stream_format(app, r, id, created), app, ctx);
      co_return stream;
    }
    const std::vector<ChoiceResult> results = co_await collect_choices(*channel, n_choices, r.params.n, app, ctx);
    std::vector<engine::Usage> usages;
    for (const ChoiceResult& c : results) usages.push_back(c.usage);
    json usage = usage_json(*ctx.stats, usages, r.params.n);
    std::string body = co_await app.work->run(
        [&] { return response_body(app, r, id, created, results, std::move(usage)); });
    co_return HttpResponse::json(200, std::move(body));
  }, RouteOptions::json_api());
}

}  // namespace server
