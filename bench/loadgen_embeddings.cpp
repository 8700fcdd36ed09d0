// bench/loadgen --mode embeddings: N concurrent clients on /v1/embeddings, each request an `input`
// array of B distinct English-like texts of 30-60 words; embeddings/s, inputs/s, prompt tokens/s
// (from usage) and request latency percentiles, for every (clients, batch) pair.
#include <utility>  // Boost 1.74 + GCC 12: see server/asio.h

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "bench/loadgen.h"

namespace loadgen {

namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;

struct EmbedSample {
  bool ok = false;
  std::string error;
  double latency_ms = 0;
  int vectors = 0;
  int dim = 0;
  long prompt_tokens = 0;
};

// Checks an embeddings response: `n` vectors, indices 0..n-1, one dimension.
void check_embeddings(const json& j, int n, EmbedSample& s) {
  if (!j.contains("data") || !j["data"].is_array()) throw std::runtime_error("no data array");
  const json& data = j["data"];
  if (static_cast<int>(data.size()) != n) {
    throw std::runtime_error(std::to_string(data.size()) + " embeddings for " + std::to_string(n) + " inputs");
  }
  std::vector<bool> seen(static_cast<size_t>(n));
  for (const json& e : data) {
    const int index = e.value("index", -1);
    if (index < 0 || index >= n || seen[static_cast<size_t>(index)]) throw std::runtime_error("bad index");
    seen[static_cast<size_t>(index)] = true;
    const json& v = e.at("embedding");
    // float: an array; base64: the little-endian float32 bytes, 16 characters per 3 floats.
    const int dim = v.is_array() ? static_cast<int>(v.size()) : static_cast<int>(v.get<std::string>().size() * 3 / 16);
    if (dim == 0 || (s.dim != 0 && dim != s.dim)) throw std::runtime_error("empty or ragged embeddings");
    s.dim = dim;
  }
  s.vectors = n;
  if (j.contains("usage") && j["usage"].is_object()) s.prompt_tokens = j["usage"].value("prompt_tokens", 0L);
}

EmbedSample embed_one(const Options& o, const std::vector<std::string>& inputs) {
  EmbedSample s;
  try {
    net::io_context io;
    net::ip::tcp::socket socket(io);
    socket.connect({net::ip::make_address(o.host), o.port});
    json body = {{"input", inputs}, {"encoding_format", o.encoding}};
    if (!o.model.empty()) body["model"] = o.model;
    http::request<http::string_body> req{http::verb::post, "/v1/embeddings", 11};
    req.set(http::field::host, o.host);
    req.set(http::field::content_type, "application/json");
    req.body() = body.dump();
    req.prepare_payload();
    const auto start = Clock::now();
    http::write(socket, req);
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    http::read(socket, buffer, parser);
    s.latency_ms = ms_between(start, Clock::now());
    const auto& res = parser.get();
    if (res.result_int() != 200) {
      s.error = "HTTP " + std::to_string(res.result_int()) + ": " + res.body().substr(0, 200);
      return s;
    }
    check_embeddings(json::parse(res.body()), static_cast<int>(inputs.size()), s);
    s.ok = true;
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

std::vector<std::string> make_inputs(const Options& o, int client, int request, int batch) {
  std::vector<std::string> inputs;
  for (int i = 0; i < batch; ++i) {
    const uint64_t key = (static_cast<uint64_t>(client) << 40) ^ (static_cast<uint64_t>(request) << 20) ^
                         static_cast<uint64_t>(i) ^ (static_cast<uint64_t>(batch) << 56);
    const int span = o.max_words - o.min_words + 1;
    inputs.push_back(make_text(key, o.min_words + static_cast<int>((key * 2654435761u) % static_cast<uint64_t>(span))));
  }
  return inputs;
}
}  // namespace

json run_embeddings_level(const Options& o, int n_clients, int batch) {
  for (int w = 0; w < o.warmup; ++w) embed_one(o, make_inputs(o, 1000 + w, 0, batch));
  std::vector<EmbedSample> samples;
  std::mutex mutex;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < n_clients; ++c) {
    threads.emplace_back([&, c] {
      for (int r = 0; r < o.requests; ++r) {
        EmbedSample s = embed_one(o, make_inputs(o, c, r, batch));
        std::lock_guard<std::mutex> lock(mutex);
        samples.push_back(std::move(s));
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall_s = ms_between(start, Clock::now()) / 1000.0;

  std::vector<double> latency;
  long vectors = 0, tokens = 0;
  int failed = 0, dim = 0;
  std::string first_error;
  for (const EmbedSample& s : samples) {
    if (!s.ok) {
      if (failed++ == 0) first_error = s.error;
      continue;
    }
    latency.push_back(s.latency_ms);
    vectors += s.vectors;
    tokens += s.prompt_tokens;
    dim = s.dim;
  }
  double sum = 0;
  for (double l : latency) sum += l;
  auto per_s = [wall_s](double n) { return wall_s > 0 ? n / wall_s : 0.0; };
  const auto n_requests = static_cast<double>(samples.size());
  json j = {{"mode", "embeddings"},
            {"clients", n_clients},
            {"batch", batch},
            {"requests", samples.size()},
            {"failed", failed},
            {"embeddings", vectors},
            {"dim", dim},
            {"prompt_tokens", tokens},
            {"tokens_per_input", vectors > 0 ? static_cast<double>(tokens) / static_cast<double>(vectors) : 0.0},
            {"wall_s", wall_s},
            {"embeddings_s", per_s(static_cast<double>(vectors))},           // vectors in 200 responses
            {"inputs_s", per_s(n_requests * batch)},                         // inputs sent, failed included
            {"requests_s", per_s(n_requests)},
            {"prompt_tokens_s", per_s(static_cast<double>(tokens))},
            {"latency_ms", {{"mean", latency.empty() ? 0.0 : sum / static_cast<double>(latency.size())},
                            {"p50", percentile(latency, 50)},
                            {"p90", percentile(latency, 90)},
                            {"p99", percentile(latency, 99)}}}};
  if (failed > 0) j["first_error"] = first_error;
  return j;
}

}  // namespace loadgen
