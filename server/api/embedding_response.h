// The bodies of /v1/embeddings (OpenAI's list of embedding objects) and /v1/rerank (Jina/Cohere's
// results, best first).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api/app.h"
#include "server/api/embedding_request.h"

namespace server {

// v (n,) cut to `dimensions` when given, then divided by its L2 norm when `normalize` (a zero
// vector stays zero).
void shape_embedding(std::vector<float>& v, std::optional<int64_t> dimensions, bool normalize);

// The little-endian f32 bytes of v, base64-encoded (OpenAI's encoding_format "base64").
std::string base64_floats(const std::vector<float>& v);

// {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": ...}], "model",
// "usage": {"prompt_tokens", "total_tokens"}}; `vectors` are already shaped.
nlohmann::json embeddings_json(const App& app, const EmbeddingRequest& request,
                               const std::vector<std::vector<float>>& vectors, int64_t prompt_tokens);

// {"object": "list", "model", "results": [{"index", "relevance_score", "document": {"text"}}],
// "usage"}: the top_n documents by score (the head's first output), best first, ties by index.
nlohmann::json rerank_json(const App& app, const RerankRequest& request, const std::vector<float>& scores,
                           int64_t prompt_tokens);

}  // namespace server
