// POST /v1/completions: OpenAI's legacy completions (text_completion objects), streamed or not.
#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"
#include "server/request_json.h"

namespace server {

using nlohmann::json;

namespace {

const std::set<std::string> kKnown = {
    "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p", "n", "stop", "seed",
    "presence_penalty", "frequency_penalty", "repetition_penalty", "repeat_penalty",
    "repeat_last_n", "logit_bias", "logprobs", "echo", "stream", "stream_options", "user",
    "ignore_eos", "best_of", "cache_prompt", "n_predict"};
const std::set<std::string> kUnsupported = {"suffix"};

// "prompt": a string, an array of strings, an array of token ids, or an array of such arrays.
std::vector<std::vector<int32_t>> parse_prompts(const json& body, const App& app) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw invalid_field("prompt", "'prompt' is required");
  const json& p = *it;
  auto tokenize = [&](const std::string& text) { return app.tokenizer->encode(text, true, true); };
  std::vector<std::vector<int32_t>> prompts;
  if (p.is_string()) {
    prompts.push_back(tokenize(p.get<std::string>()));
  } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
    prompts.push_back(*get_token_ids(body, "prompt", app.tokenizer->n_vocab()));
  } else if (p.is_array() && !p.empty()) {
    for (const json& e : p) {
      if (e.is_string()) {
        prompts.push_back(tokenize(e.get<std::string>()));
      } else if (e.is_array()) {
        prompts.push_back(*get_token_ids(json{{"prompt", e}}, "prompt", app.tokenizer->n_vocab()));
      } else {
        throw invalid_field("prompt", "'prompt' array items must be strings or token arrays, found " +
                                          json_type_name(e));
      }
    }
  } else {
    throw invalid_field("prompt", "'prompt' must be a string, an array of strings or an array of "
                                  "token ids");
  }
  if (prompts.size() > 16) throw invalid_field("prompt", "at most 16 prompts per request");
  return prompts;
}

json logprobs_json(const App& app, const std::vector<engine::TokenEvent>& tokens) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  for (const engine::TokenEvent& t : tokens) {
    const std::string piece(app.tokenizer->piece(t.token));
    toks.push_back(piece);
    lps.push_back(t.logprob);
    json top = json::object();
    for (const engine::TokenLogprob& alt : t.top) top[std::string(app.tokenizer->piece(alt.id))] = alt.logprob;
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += piece.size();
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

}  // namespace

void add_completions_routes(Router& router, App& app) {
  router.add("POST", "/v1/completions", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    ctx.stats->endpoint = "/v1/completions";
    require_ready(app);
    const json body = parse_object(req.body);
    check_fields(body, kKnown, kUnsupported);
    if (auto model = get_string(body, "model")) require_model(app, *model);
    if (get_int(body, "best_of", 1, 1).value_or(1) != 1) throw invalid_field("best_of", "'best_of' must be 1");
    GenerationParams params = parse_generation_params(body, app, app.settings.default_max_tokens,
                                                      {"max_tokens", "n_predict"});
    params.n_logprobs = static_cast<int>(get_int(body, "logprobs", 0, 20).value_or(-1));
    const bool echo = get_bool(body, "echo").value_or(false);
    if (echo && params.n_logprobs >= 0) {
      throw invalid_field("echo", "'echo' together with 'logprobs' is not supported");
    }
    const std::vector<std::vector<int32_t>> prompts = parse_prompts(body, app);
    const int n = params.n;
    const int n_choices = static_cast<int>(prompts.size()) * n;
    auto channel = submit_generations(app, ctx, prompts, params);
    const std::string id = make_id("cmpl-");
    const int64_t created = unix_now();
    std::vector<std::string> prompt_texts;  // for echo; copied into the stream, which outlives us
    if (echo) {
      for (const auto& p : prompts) prompt_texts.push_back(app.tokenizer->decode(p));
    }
    auto prompt_text = [prompt_texts, n](int index) { return prompt_texts[static_cast<size_t>(index / n)]; };
    auto envelope = [id, created, &app](json choices) {
      return json{{"id", id}, {"object", "text_completion"}, {"created", created},
                  {"model", app.model_id}, {"system_fingerprint", "ggufd"}, {"choices", std::move(choices)}};
    };

    if (params.stream) {
      StreamFormat f;
      const bool with_usage = params.include_usage;
      auto chunk = [envelope, with_usage](int index, const std::string& text, json finish, json logprobs) {
        json c = envelope(json::array({{{"text", text}, {"index", index}, {"logprobs", std::move(logprobs)},
                                        {"finish_reason", std::move(finish)}}}));
        if (with_usage) c["usage"] = nullptr;
        return c;
      };
      if (echo) f.start = [chunk, prompt_text](int i) { return chunk(i, prompt_text(i), nullptr, nullptr); };
      const bool want_logprobs = params.n_logprobs >= 0;
      f.token = [chunk, want_logprobs, &app](int i, const engine::TokenEvent& t) {
        return chunk(i, t.text, nullptr,
                     want_logprobs && t.token >= 0 ? logprobs_json(app, {t}) : json(nullptr));
      };
      f.finish = [chunk](int i, engine::FinishReason r) {
        return chunk(i, "", engine::finish_reason_name(r), nullptr);
      };
      f.usage = [envelope](const json& usage) {
        json c = envelope(json::array());
        c["usage"] = usage;
        return c;
      };
      HttpResponse r;
      r.content_type = "text/event-stream";
      r.stream = make_event_stream(channel, n_choices, n, params.include_usage, std::move(f), app, ctx);
      co_return r;
    }

    const std::vector<ChoiceResult> results = co_await collect_choices(*channel, n_choices, app, ctx);
    json choices = json::array();
    std::vector<engine::Usage> usages;
    for (size_t i = 0; i < results.size(); ++i) {
      const ChoiceResult& c = results[i];
      choices.push_back({{"text", echo ? prompt_text(static_cast<int>(i)) + c.text : c.text},
                         {"index", i},
                         {"logprobs", params.n_logprobs >= 0 ? logprobs_json(app, c.tokens) : json(nullptr)},
                         {"finish_reason", engine::finish_reason_name(c.reason)}});
      usages.push_back(c.usage);
    }
    json response = envelope(std::move(choices));
    response["usage"] = account_usage(app, *ctx.stats, usages, n);
    co_return HttpResponse::json(200, dump_json(response));
  });
}

}  // namespace server
