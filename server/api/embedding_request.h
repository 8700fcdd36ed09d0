// POST /v1/embeddings and POST /v1/rerank up to submission: the body parsed, validated and
// tokenized. Coroutine-free (runs on the work pool, and under the request-path fuzzer).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/app.h"

namespace server {

// Inputs per request at most (OpenAI's limit for /v1/embeddings; documents for /v1/rerank).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;  // token ids of each input, special tokens as the model adds them
  bool base64 = false;                       // encoding_format "base64": little-endian f32, base64
  std::optional<int64_t> dimensions;         // keep the first n components (then re-normalize)
  bool normalize = true;                     // L2-normalize each vector
  std::vector<std::string> ignored_fields;   // unknown top-level fields (request_fields.h)
};

// Throws ApiError (4xx) naming what is wrong: the model gives no embeddings (a generation model
// without --pooling, or a reranker), `input` missing or of the wrong shape, empty, with token ids
// outside the vocabulary, longer than the context (unless "truncate": true), too many inputs;
// bad encoding_format or dimensions.
EmbeddingRequest prepare_embeddings(const App& app, std::string_view body);

struct RerankRequest {
  std::vector<std::vector<int32_t>> inputs;  // query and document i, as the model pairs them
  std::vector<std::string> documents;        // each document's text
  size_t top_n = 0;                          // results returned (the best first)
  bool return_documents = false;             // each result carries its document
  std::vector<std::string> ignored_fields;
};

// Jina/Cohere shape: `query` (string), `documents` (strings or {"text": ...} objects), `top_n`,
// `return_documents`. Throws ApiError (4xx), also when the model is not a reranker (pooling rank).
RerankRequest prepare_rerank(const App& app, std::string_view body);

}  // namespace server
