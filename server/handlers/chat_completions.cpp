// POST /v1/chat/completions: messages through the chat template; chat.completion objects or
// chat.completion.chunk events.
#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"
#include "server/request_json.h"

namespace server {

using nlohmann::json;

namespace {

const std::set<std::string> kKnown = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
    "min_p", "n", "stop", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty",
    "repeat_penalty", "repeat_last_n", "logit_bias", "logprobs", "top_logprobs", "stream",
    "stream_options", "user", "ignore_eos", "response_format", "chat_template_kwargs",
    "parallel_tool_calls", "store", "metadata", "cache_prompt", "n_predict"};
const std::set<std::string> kUnsupported = {"tools", "tool_choice", "functions", "function_call",
                                            "audio", "modalities", "prediction"};

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

void check_unsupported(const json& body) {
  for (const char* key : {"tools", "functions"}) {
    if (body.contains(key) && body[key].is_array() && body[key].empty()) continue;  // "no tools"
    if (body.contains(key) && !body[key].is_null()) {
      throw invalid_field(key, std::string("'") + key + "' (tool calling) is not supported by this server yet");
    }
  }
  if (const auto rf = body.find("response_format"); rf != body.end() && !rf->is_null()) {
    if (!rf->is_object() || rf->value("type", "") != "text") {
      throw invalid_field("response_format", "only response_format {\"type\": \"text\"} is supported; "
                                             "json_object and json_schema are not supported yet");
    }
  }
}

}  // namespace

void add_chat_completions_routes(Router& router, App& app) {
  router.add("POST", "/v1/chat/completions", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    ctx.stats->endpoint = "/v1/chat/completions";
    require_ready(app);
    json body = parse_object(req.body);
    check_unsupported(body);
    for (const char* key : {"tools", "functions"}) body.erase(key);  // empty lists, checked above
    check_fields(body, kKnown, kUnsupported);
    if (auto model = get_string(body, "model")) require_model(app, *model);
    GenerationParams params = parse_generation_params(body, app, -1,
                                                      {"max_completion_tokens", "max_tokens", "n_predict"});
    if (get_bool(body, "logprobs").value_or(false)) {
      params.n_logprobs = static_cast<int>(get_int(body, "top_logprobs", 0, 20).value_or(0));
    } else if (body.contains("top_logprobs") && !body["top_logprobs"].is_null()) {
      throw invalid_field("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    }
    const json messages = body.contains("messages") ? body["messages"] : json();
    const json extra = body.contains("chat_template_kwargs") ? body["chat_template_kwargs"] : json();
    const std::vector<std::vector<int32_t>> prompts = {chat_prompt_tokens(app, messages, extra)};
    const int n_choices = params.n;
    auto channel = submit_generations(app, ctx, prompts, params);
    const std::string id = make_id("chatcmpl-");
    const int64_t created = unix_now();
    const std::string model = app.model_id;

    if (params.stream) {
      const bool with_usage = params.include_usage;
      auto chunk = [id, created, model, with_usage](json choices) {
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
      f.start = [chunk, choice](int i) {
        return chunk(choice(i, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr));
      };
      const bool want_logprobs = params.n_logprobs >= 0;
      f.token = [chunk, choice, want_logprobs, &app](int i, const engine::TokenEvent& t) -> json {
        if (t.text.empty() && !(want_logprobs && t.token >= 0)) return nullptr;
        return chunk(choice(i, {{"content", t.text}},
                            want_logprobs && t.token >= 0 ? logprobs_json(app, {t}) : json(nullptr), nullptr));
      };
      f.finish = [chunk, choice](int i, engine::FinishReason r) {
        return chunk(choice(i, json::object(), nullptr, engine::finish_reason_name(r)));
      };
      f.usage = [chunk](const json& usage) {
        json c = chunk(json::array());
        c["usage"] = usage;
        return c;
      };
      HttpResponse r;
      r.content_type = "text/event-stream";
      r.stream = make_event_stream(channel, n_choices, n_choices, params.include_usage, std::move(f), app, ctx);
      co_return r;
    }

    const std::vector<ChoiceResult> results = co_await collect_choices(*channel, n_choices, app, ctx);
    json choices = json::array();
    std::vector<engine::Usage> usages;
    for (size_t i = 0; i < results.size(); ++i) {
      const ChoiceResult& c = results[i];
      choices.push_back({{"index", i},
                         {"message", {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}}},
                         {"logprobs", params.n_logprobs >= 0 ? logprobs_json(app, c.tokens) : json(nullptr)},
                         {"finish_reason", engine::finish_reason_name(c.reason)}});
      usages.push_back(c.usage);
    }
    json response = {{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", model},
                     {"system_fingerprint", "ggufd"}, {"choices", std::move(choices)},
                     {"usage", account_usage(app, *ctx.stats, usages, n_choices)}};
    co_return HttpResponse::json(200, dump_json(response));
  });
}

}  // namespace server
