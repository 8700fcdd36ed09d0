#include "server/api/generation_params.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;

namespace {

constexpr int kMaxChoices = 16;
constexpr size_t kMaxStops = 16;

std::vector<std::pair<int32_t, float>> parse_logit_bias(const json& body, int32_t n_vocab) {
  std::vector<std::pair<int32_t, float>> out;
  const auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return out;
  if (!it->is_object()) {
    throw invalid_field("logit_bias", "'logit_bias' must be an object mapping token ids to biases, found " +
                                          json_type_name(*it));
  }
  for (const auto& [key, value] : it->items()) {
    int64_t id = 0;
    const bool digits = !key.empty() && key.size() <= 10 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) id = std::stoll(key);
    if (!digits || id >= n_vocab) {
      throw invalid_field("logit_bias", "'logit_bias' key '" + excerpt(key) + "' is not a token id in [0, " +
                                            std::to_string(n_vocab) + ")");
    }
    const auto& rule = engine::sampling_rules::kLogitBias;
    if (!value.is_number() || !engine::sampling_rules::contains(rule, value.get<double>())) {
      throw invalid_field("logit_bias", "'logit_bias' values must be numbers between -100 and 100");
    }
    const double bias = value.get<double>();
    // OpenAI: -100 bans the token.
    out.emplace_back(static_cast<int32_t>(id), bias <= -100 ? -INFINITY : static_cast<float>(bias));
  }
  return out;
}

// A sampling field of the request, within the engine's rule for it (sampling_rules).
std::optional<double> get_sampling_number(const json& body, const std::string& key,
                                          const engine::sampling_rules::Range& rule) {
  return get_number(body, key, rule.min, rule.max);
}

// "seed": an integer in [0, 2^64), or -1 for a random one (llama-server's convention).
uint64_t parse_seed(const json& body) {
  const auto it = body.find("seed");
  if (it != body.end() && !it->is_null()) {
    if (it->is_number_unsigned()) return it->get<uint64_t>();
    if (it->is_number_integer() && it->get<int64_t>() >= 0) return static_cast<uint64_t>(it->get<int64_t>());
    if (!(it->is_number_integer() && it->get<int64_t>() == -1)) {
      throw invalid_field("seed", "'seed' must be an integer between 0 and 18446744073709551615, or -1 for a "
                                  "random seed; found " + (it->is_number() ? it->dump() : json_type_name(*it)));
    }
  }
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

}  // namespace

engine::SamplingParams parse_sampling(const json& body, const App& app) {
  namespace rules = engine::sampling_rules;
  engine::SamplingParams s = app.settings.default_sampling;
  const int32_t n_vocab = app.tokenizer->n_vocab();
  s.temperature = static_cast<float>(get_sampling_number(body, "temperature", rules::kTemperature).value_or(s.temperature));
  s.top_p = static_cast<float>(get_sampling_number(body, "top_p", rules::kTopP).value_or(s.top_p));
  s.top_k = static_cast<int>(get_int(body, "top_k", 0, static_cast<int64_t>(rules::kTopK.max)).value_or(s.top_k));
  s.min_p = static_cast<float>(get_sampling_number(body, "min_p", rules::kMinP).value_or(s.min_p));
  s.presence_penalty = static_cast<float>(
      get_sampling_number(body, "presence_penalty", rules::kPresencePenalty).value_or(s.presence_penalty));
  s.frequency_penalty = static_cast<float>(
      get_sampling_number(body, "frequency_penalty", rules::kFrequencyPenalty).value_or(s.frequency_penalty));
  for (const char* key : {"repetition_penalty", "repeat_penalty"}) {
    if (auto r = get_sampling_number(body, key, rules::kRepeatPenalty)) s.repeat_penalty = static_cast<float>(*r);
  }
  s.penalty_last_n = static_cast<int>(get_int(body, "repeat_last_n", -1, static_cast<int64_t>(rules::kPenaltyLastN.max))
                                          .value_or(s.penalty_last_n));
  s.logit_bias = parse_logit_bias(body, n_vocab);
  s.seed = parse_seed(body);
  return s;
}

GenerationParams parse_generation_params(const json& body, const App& app, const TokenLimit& limit) {
  GenerationParams p;
  p.sampling = parse_sampling(body, app);
  p.max_tokens = limit.default_value;
  for (const std::string& key : limit.keys) {
    if (auto m = get_int(body, key, limit.min, INT32_MAX)) {
      p.max_tokens = *m;
      break;
    }
  }
  p.n = static_cast<int>(get_int(body, "n", 1, kMaxChoices).value_or(1));
  p.stop = get_strings(body, "stop").value_or(std::vector<std::string>{});
  if (p.stop.size() > kMaxStops) {
    throw invalid_field("stop", "'stop' may hold at most " + std::to_string(kMaxStops) + " strings");
  }
  p.stream = get_bool(body, "stream").value_or(false);
  // Unstreamed, stream_options means nothing and is ignored (clients send it on every request).
  if (const auto it = body.find("stream_options"); p.stream && it != body.end() && !it->is_null()) {
    if (!it->is_object()) throw invalid_field("stream_options", "'stream_options' must be an object");
    p.include_usage = get_bool(*it, "include_usage").value_or(false);
  }
  p.ignore_eos = get_bool(body, "ignore_eos").value_or(false);
  p.cache_prompt = get_bool(body, "cache_prompt").value_or(true);
  (void)get_string(body, "user");  // accepted for compatibility; type-checked only
  return p;
}


void check_generation(const GenerationParams& params, const std::vector<std::vector<int32_t>>& prompts,
                      const App& app) {
  engine::SamplingParams s = params.sampling;
  s.n_logprobs = std::max(params.n_logprobs, 0);
  if (auto e = engine::check_sampling(s, app.tokenizer->n_vocab())) {
    static const std::map<std::string, std::string> kRequestName = {
        {"repeat_penalty", "repetition_penalty"}, {"penalty_last_n", "repeat_last_n"}, {"n_logprobs", "logprobs"}};
    const auto it = kRequestName.find(e->field);
    throw invalid_field(it == kRequestName.end() ? e->field : it->second, e->message);
  }
  const int64_t n_ctx = app.settings.n_ctx;
  if (!params.images.empty() && params.prompt_logprobs) {
    throw invalid_field("prompt_logprobs", "a prompt with images cannot be scored (prompt_logprobs, echo)");
  }
  for (const auto& prompt : prompts) {
    if (prompt.empty()) throw invalid_field("prompt", "the prompt is empty");
    if (static_cast<int64_t>(prompt.size()) >= n_ctx) {
      throw context_exceeded(n_ctx, "your prompt has " + std::to_string(prompt.size()) + " tokens",
                             "reduce the length of the prompt");
    }
  }
  const int64_t sequences = static_cast<int64_t>(prompts.size()) * params.n;
  const int64_t capacity = app.settings.n_slots + app.settings.max_queue;
  if (sequences > capacity) {
    throw invalid_field(
        "n", "this request needs " + std::to_string(sequences) + " sequences (" + std::to_string(prompts.size()) +
                 " prompt(s) x n = " + std::to_string(params.n) + "), more than this server can ever hold: " +
                 std::to_string(capacity) + " (" + std::to_string(app.settings.n_slots) + " slots + " +
                 std::to_string(app.settings.max_queue) + " queued; --parallel, --queue-limit)");
  }
}

}  // namespace server
