// POST /v1/chat/completions: messages through the chat template; chat.completion objects or
// chat.completion.chunk events.
#include <nlohmann/json.hpp>

#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/chat_request.h"
#include "server/api/request_json.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"
#include "server/work_pool.h"

namespace server {

using nlohmann::json;

namespace {

json token_logprob(const App& app, int32_t id, float logprob) {
  const std::string piece(app.tokenizer->piece(id));
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(c);
  return {{"token", piece}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}

json logprobs_json(const App& app, const std::vector<engine::TokenEvent>& tokens) {
  json content = json::array();
  for (const engine::TokenEvent& t : tokens) {
    json entry = token_logprob(app, t.token, t.logprob);
    json top = json::array();
    for (const engine::TokenLogprob& alt : t.top) top.push_back(token_logprob(app, alt.id, alt.logprob));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

StreamFormat stream_format(const App& app, const ChatRequest& r, const std::string& id, int64_t created) {
  const bool with_usage = r.params.include_usage;
  auto chunk = [id, created, model = app.model_id, with_usage](json choices) {
    json c = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
              {"system_fingerprint", "ggufd"}, {"choices", std::move(choices)}};
    if (with_usage) c["usage"] = nullptr;
    return c;
  };
  auto choice = [](int index, json delta, json logprobs, json finish) {
    return json::array({{{"index", index}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)},
                         {"finish_reason", std::move(finish)}}});
  };
  StreamFormat f;
  f.start = [chunk, choice](int i, const std::vector<engine::TokenEvent>&) {
    return chunk(choice(i, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr));
  };
  const bool want_logprobs = r.params.n_logprobs >= 0;
  f.token = [chunk, choice, want_logprobs, &app](int i, const engine::TokenEvent& t) -> json {
    if (t.text.empty() && !(want_logprobs && t.token >= 0)) return nullptr;
    return chunk(choice(i, {{"content", t.text}},
                        want_logprobs && t.token >= 0 ? logprobs_json(app, {t}) : json(nullptr), nullptr));
  };
  f.finish = [chunk, choice](int i, engine::FinishReason reason) {
    return chunk(choice(i, json::object(), nullptr, engine::finish_reason_name(reason)));
  };
  f.usage = [chunk](const json& usage) {
    json c = chunk(json::array());
    c["usage"] = usage;
    return c;
  };
  return f;
}

std::string response_body(const App& app, const ChatRequest& r, const std::string& id, int64_t created,
                          const std::vector<ChoiceResult>& results, json usage) {
  json choices = json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const ChoiceResult& c = results[i];
    choices.push_back({{"index", i},
                       {"message", {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}}},
                       {"logprobs", r.params.n_logprobs >= 0 ? logprobs_json(app, c.tokens) : json(nullptr)},
                       {"finish_reason", engine::finish_reason_name(c.reason)}});
  }
  const json response = {{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", app.model_id},
                         {"system_fingerprint", "ggufd"}, {"choices", std::move(choices)},
                         {"usage", std::move(usage)}};
  return dump_json(response);
}

}  // namespace

void add_chat_completions_routes(Router& router, App& app) {
  router.add("POST", "/v1/chat/completions", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    require_ready(app);
    const ChatRequest r = co_await app.work->run([&app, &req] { return prepare_chat(app, req.body); });
    const int n_choices = r.params.n;
    auto channel = submit_generations(app, ctx, {r.prompt}, r.params);
    const std::string id = make_id("chatcmpl-");
    const int64_t created = unix_now();
    if (r.params.stream) {
      HttpResponse stream;
      stream.content_type = "text/event-stream";
      stream.stream = make_event_stream(channel, n_choices, n_choices, r.params.include_usage,
                                        stream_format(app, r, id, created), app, ctx);
      co_return stream;
    }
    const std::vector<ChoiceResult> results = co_await collect_choices(*channel, n_choices, n_choices, app, ctx);
    std::vector<engine::Usage> usages;
    for (const ChoiceResult& c : results) usages.push_back(c.usage);
    json usage = usage_json(*ctx.stats, usages, n_choices);
    std::string body = co_await app.work->run(
        [&] { return response_body(app, r, id, created, results, std::move(usage)); });
    co_return HttpResponse::json(200, std::move(body));
  }, RouteOptions::json_api());
}

}  // namespace server
