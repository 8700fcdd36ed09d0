#include "server/api/embedding_response.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace server {

using nlohmann::json;

void shape_embedding(std::vector<float>& v, std::optional<int64_t> dimensions, bool normalize) {
  if (dimensions && static_cast<size_t>(*dimensions) < v.size()) v.resize(static_cast<size_t>(*dimensions));
  if (!normalize) return;
  double sum = 0.0;
  for (float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0.0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= inv;
}

std::string base64_floats(const std::vector<float>& v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());  // (the hosts we build for are little-endian)
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = static_cast<uint32_t>(bytes[i]) << 16 | (i + 1 < bytes.size() ? bytes[i + 1] << 8 : 0) |
                       (i + 2 < bytes.size() ? bytes[i + 2] : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

namespace {

json usage(int64_t prompt_tokens) { return {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}; }

}  // namespace

json embeddings_json(const App& app, const EmbeddingRequest& request, const std::vector<std::vector<float>>& vectors,
                     int64_t prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    json e = {{"object", "embedding"}, {"index", i}};
    if (request.base64) {
      e["embedding"] = base64_floats(vectors[i]);
    } else {
      e["embedding"] = vectors[i];
    }
    data.push_back(std::move(e));
  }
  return {{"object", "list"}, {"data", std::move(data)}, {"model", app.model_id}, {"usage", usage(prompt_tokens)}};
}

json rerank_json(const App& app, const RerankRequest& request, const std::vector<float>& scores, int64_t prompt_tokens) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  order.resize(std::min(order.size(), request.top_n));
  json results = json::array();
  for (size_t i : order) {
    json r = {{"index", i}, {"relevance_score", scores[i]}};
    if (request.return_documents) r["document"] = {{"text", request.documents[i]}};
    results.push_back(std::move(r));
  }
  return {{"object", "list"}, {"model", app.model_id}, {"results", std::move(results)}, {"usage", usage(prompt_tokens)}};
}

}  // namespace server
