#include "server/api/openai_completions/completion_request.h"

#include <set>

#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/api_error.h"
#include "server/api/output_constraint.h"
#include "server/api/request_fields.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;

namespace {

// OpenAI's documented fields (suffix, which this server cannot honour, is refused) and llama-server's.
const std::set<std::string> kCompletionFields = {
    "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p", "n", "stop", "seed",
    "presence_penalty", "frequency_penalty", "repetition_penalty", "repeat_penalty",
    "repeat_last_n", "logit_bias", "logprobs", "echo", "stream", "stream_options", "user",
    "ignore_eos", "best_of", "cache_prompt", "n_predict", "parse_special", "response_format", "json_schema",
    "grammar"};
const std::set<std::string> kCompletionUnsupported = {"suffix"};
constexpr size_t kMaxPrompts = 16;
constexpr int64_t kCompletionsDefaultMaxTokens = 16;  // OpenAI's

// "prompt": a string, an array of strings, an array of token ids, or an array of such arrays.
std::vector<std::vector<int32_t>> parse_prompts(const json& body, const App& app, bool parse_special) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw invalid_field("prompt", "'prompt' is required");
  const json& p = *it;
  const int32_t n_vocab = app.tokenizer->n_vocab();
  auto tokenize = [&](const std::string& text) { return app.tokenizer->encode(text, true, parse_special); };
  std::vector<std::vector<int32_t>> prompts;
  if (p.is_string()) {
    prompts.push_back(tokenize(p.get_ref<const std::string&>()));
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    prompts.push_back(to_token_ids(p, "prompt", n_vocab));
  } else if (p.is_array() && !p.empty()) {
    if (p.size() > kMaxPrompts) {
      throw invalid_field("prompt", "at most " + std::to_string(kMaxPrompts) + " prompts per request, found " +
                                        std::to_string(p.size()));
    }
    for (const json& e : p) {
      if (e.is_string()) {
        prompts.push_back(tokenize(e.get_ref<const std::string&>()));
      } else if (e.is_array()) {
        prompts.push_back(to_token_ids(e, "prompt", n_vocab));
      } else {
        throw invalid_field("prompt", "'prompt' array items must be strings or token arrays, found " +
                                          json_type_name(e));
      }
    }
  } else {
    throw invalid_field("prompt", "'prompt' must be a string, an array of strings or an array of "
                                  "token ids");
  }
  return prompts;
}

}  // namespace

CompletionRequest prepare_completion(const App& app, std::string_view text) {
  const json body = parse_object(text, app.settings.max_json_depth);
  CoreRequest core;
  core.ignored_fields = check_fields(body, kCompletionFields, kCompletionUnsupported, app.settings.strict_api);
  check_request_model(body, app);
  if (get_int(body, "best_of", 1, 1).value_or(1) != 1) throw invalid_field("best_of", "'best_of' must be 1");
  GenerationParams& params = core.params;
  // without a limit: --max-tokens, else OpenAI's 16
  const int64_t default_limit = app.settings.max_tokens > 0 ? app.settings.max_tokens : kCompletionsDefaultMaxTokens;
  params = parse_generation_params(body, app, {{"max_tokens", "n_predict"}, default_limit, 0});
  params.n_logprobs = static_cast<int>(get_int(body, "logprobs", 0, 20).value_or(-1));
  params.grammar = parse_output_constraint(body, text, app);
  const bool echo = get_bool(body, "echo").value_or(false);
  params.prompt_logprobs = echo && params.n_logprobs >= 0;
  const bool parse_special = get_bool(body, "parse_special").value_or(true);
  core.raw_prompts = parse_prompts(body, app, parse_special);
  CompletionRequest r;
  r.echo = echo;
  prepare_generation(app, std::move(core), r);
  if (r.echo) {
    for (const auto& p : r.prompts) r.prompt_texts.push_back(app.tokenizer->decode(p));
  }
  return r;
}

}  // namespace server
