// Ollama's API (POST /api/chat, /api/generate, /api/embed, /api/embeddings) up to submission: the
// body translated into the core request (core/request.h) or an embedding request, and prepared.
// `options` (temperature, top_k, top_p, min_p, seed, stop, num_predict, repeat_penalty,
// repeat_last_n, presence_penalty, frequency_penalty) map onto the core's sampling and limits;
// options that only tune Ollama's runtime (num_ctx, num_gpu, num_thread, num_batch, use_mmap, ...)
// are accepted and named in x-ggufd-ignored-fields, since the context and threads are fixed when
// the model loads; top-level temperature, top_p and max_output_tokens (ollama-ai-provider-v2 sends
// them there) count as options. `format` ("json" or a JSON schema) goes through the grammar engine; `think`
// (a boolean or low / medium / high) sets the template's thinking; `tools` are OpenAI-shaped, and
// OpenAI's `tool_choice` (not Ollama's; "required" or a named function forces a call) is taken too.
// Images, `suffix` (fill-in-the-middle), a `template` override and `context` are refused with a
// 400 naming the field. keep_alive is the registry's (lease_for_body). Coroutine-free (work pool,
// fuzzer).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/api/api_error.h"
#include "server/api/app.h"
#include "server/api/core/request.h"
#include "server/api/embedding_request.h"

namespace server {

// A prepared /api/chat or /api/generate request.
struct OllamaRequest : PreparedRequest {
  bool chat = true;         // /api/chat (message objects) or /api/generate (response strings)
  std::string model;        // the name the client asked for, echoed in every object (or the model's id)
  // Nothing to generate (an empty prompt or no messages): the model is loaded and one object with
  // done_reason "load" answers, as Ollama's clients expect for preloading.
  bool load_only = false;
};

// Throws ApiError (4xx) naming what is wrong; answered in Ollama's shape (ollama_error_json).
OllamaRequest prepare_ollama_chat(const App& app, std::string_view body);
OllamaRequest prepare_ollama_generate(const App& app, std::string_view body);

// /api/embed (`input`: a string or strings; `truncate`, default true; `dimensions`) and the legacy
// /api/embeddings (`prompt`: one string; its vector not normalized, as Ollama's). Throws ApiError.
EmbeddingRequest prepare_ollama_embed(const App& app, std::string_view body, bool legacy);

// The model name a body asks for ("model", or the older "name"), else the model's id.
std::string ollama_model_name(const App& app, const nlohmann::json& body);

// Ollama's error object: {"error": "message"}.
nlohmann::json ollama_error_json(const ApiError& error);

}  // namespace server
