// The accepted range of every numeric sampling setting: the one set of rules that the sampler,
// the HTTP request layer (400 naming the field) and `ggufd serve`'s configuration all check
// against. Header-only data, so config/ can use it without linking the engine.
#pragma once

#include <string_view>

namespace engine::sampling_rules {

// An inclusive range. `name` is the SamplingParams field it governs.
struct Range {
  std::string_view name;
  double min;
  double max;
};

inline constexpr Range kTemperature{"temperature", 0.0, 2.0};     // OpenAI's range; 0: greedy
inline constexpr Range kTopP{"top_p", 0.0, 1.0};                   // 0: the most likely token only
inline constexpr Range kTopK{"top_k", 0.0, 1 << 30};               // 0: off; > n_vocab: all
inline constexpr Range kMinP{"min_p", 0.0, 1.0};
inline constexpr Range kRepeatPenalty{"repeat_penalty", 0.01, 10.0};
inline constexpr Range kPresencePenalty{"presence_penalty", -2.0, 2.0};
inline constexpr Range kFrequencyPenalty{"frequency_penalty", -2.0, 2.0};
inline constexpr Range kPenaltyLastN{"penalty_last_n", -1.0, 1 << 30};  // -1: every token
inline constexpr Range kLogitBias{"logit_bias", -100.0, 100.0};   // -100 bans the token
inline constexpr Range kLogprobs{"n_logprobs", 0.0, 20.0};         // alternatives per token

// Temperatures below this sample greedily: 1/T would overflow the weights (T = 1e-40 made every
// weight NaN), and long before that the distribution is already a point mass.
inline constexpr float kGreedyBelow = 1e-5f;

inline constexpr bool contains(const Range& r, double x) { return x >= r.min && x <= r.max; }

}  // namespace engine::sampling_rules
