// POST /v1/completions up to submission: the body parsed, validated and tokenized, as a core
// request of raw prompts (core/request.h). Coroutine-free (it runs on the work pool, and under the
// request-path fuzzer).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/app.h"
#include "server/api/core/request.h"

namespace server {

// `prompts`: token ids, BOS included as the model wants.
struct CompletionRequest : PreparedRequest {
  bool echo = false;
  std::vector<std::string> prompt_texts;      // with echo: each prompt as text
};

// Throws ApiError (4xx) naming what is wrong. `prompt` is a string, an array of strings, an
// array of token ids or an array of such arrays; special tokens in prompt text are parsed unless
// "parse_special": false (raw prompts are the client's own template). max_tokens 0 with echo
// and logprobs scores the prompt without generating.
CompletionRequest prepare_completion(const App& app, std::string_view body);

}  // namespace server
