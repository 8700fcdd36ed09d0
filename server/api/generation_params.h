// The sampling and stopping fields that /v1/completions and /v1/chat/completions share, read
// from the request JSON and validated against the engine's own rules (engine/runtime/sampling_rules.h).
// Coroutine-free: the request path up to submission runs on the work pool and under the fuzzer.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runtime/sampler.h"
#include "engine/runtime/scheduler.h"
#include "server/api/app.h"

namespace engine::grammar {
class CompiledGrammar;
}

namespace server {

// The validated fields common to both endpoints.
struct GenerationParams {
  engine::SamplingParams sampling;
  int64_t max_tokens = -1;            // -1: until the context is full; 0: nothing generated
  std::vector<std::string> stop;
  int n = 1;                          // choices per prompt
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  bool ignore_eos = false;
  int n_logprobs = -1;                // -1: no logprobs; else alternatives per token
  bool prompt_logprobs = false;       // also score the prompt's tokens (completions' echo)
  bool cache_prompt = true;           // llama-server's: false evaluates the whole prompt (no prefix reuse)
  // response_format / json_schema / grammar (output_constraint.h); null: unconstrained
  std::shared_ptr<const engine::grammar::CompiledGrammar> grammar;
  std::vector<std::string> grammar_triggers;  // a lazy grammar's triggers (tool calls under "auto")
  std::vector<int32_t> shown_tokens;          // control tokens whose text the output keeps (sorted)
  std::vector<engine::PromptImage> images;    // the chat prompt's images (prompt_images.h), decoded and fitted
};

// The accepted names of an endpoint's token limit, in priority order, its default and least value
// (chat: 1, as OpenAI; completions: 0, which scores a prompt without generating).
struct TokenLimit {
  std::vector<std::string> keys;
  int64_t default_value = -1;
  int64_t min = 1;
};

// The sampling fields (temperature, top_p, top_k, min_p, presence_penalty, frequency_penalty,
// repetition_penalty / repeat_penalty, repeat_last_n, logit_bias, seed) over the server's
// defaults. Throws ApiError (400) naming the offending field.
engine::SamplingParams parse_sampling(const nlohmann::json& body, const App& app);

// Reads the common fields (temperature, top_p, top_k, min_p, n, stop, seed, penalties,
// logit_bias, stream, stream_options, ...). Throws ApiError (400) naming the offending field.
GenerationParams parse_generation_params(const nlohmann::json& body, const App& app, const TokenLimit& limit);

// The last gate before the scheduler: the sampling parameters as the engine will see them
// (logprobs included) pass engine::check_sampling, and the request fits the server: its prompts
// fit the context and prompts x n sequences fit what the scheduler can ever hold. 400 otherwise.
void check_generation(const GenerationParams& params, const std::vector<std::vector<int32_t>>& prompts,
                      const App& app);

}  // namespace server
