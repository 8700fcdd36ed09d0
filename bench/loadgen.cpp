// Server load generator against an OpenAI-compatible server (ggufd serve, or llama-server for
// comparison), one JSON object per line for each load level.
//
// Completions (default): N concurrent streaming clients on /v1/completions; aggregate generated
// tokens/s, time to first token (p50/p99) and inter-token latency.
//
//   loadgen --port 8080 --clients 1,4,8,16 --requests 2 --max-tokens 64
//
// Each client runs `requests` completions one after another, each streamed with
// ignore_eos so every request generates exactly max_tokens.
//
// Embeddings: N concurrent clients on /v1/embeddings, each request an `input` array of B
// distinct English-like texts of 30-60 words; embeddings/s, inputs/s, prompt tokens/s (from
// usage) and request latency percentiles, for every (clients, batch) pair.
//
//   loadgen --mode embeddings --port 8080 --clients 1,2 --batch 1,32 --requests 8
//
// Clients are threads with blocking sockets: the generator itself is idle next to the server it
// measures.
#include <utility>  // Boost 1.74 + GCC 12: see server/asio.h

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string mode = "completions";  // or "embeddings"
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string model;  // empty: the server's only model
  std::vector<int> clients{1, 4, 8, 16};
  int requests = 2;
  int max_tokens = 64;
  int prompt_words = 32;
  // Embeddings.
  std::vector<int> batch{1, 32};  // inputs per request
  int min_words = 30, max_words = 60;
  std::string encoding = "float";  // encoding_format: float or base64
  int warmup = 1;                  // untimed requests before each level
};

// What one streamed request measured.
struct Sample {
  bool ok = false;
  std::string error;
  double ttft_ms = 0;
  std::vector<double> gaps_ms;  // between consecutive content events
  int tokens = 0;               // usage.completion_tokens
};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string make_prompt(int client, int request, int words) {
  std::string p = "Story " + std::to_string(client) + "." + std::to_string(request) + ":";
  static const char* kWords[] = {"Once", "upon", "a", "time", "there", "was", "a", "little", "dog"};
  for (int i = 0; i < words; ++i) p += std::string(" ") + kWords[(i + client) % 9];
  return p;
}

// Splits the streamed body into SSE events and timestamps the ones that carry text.
class EventReader {
 public:
  explicit EventReader(Sample& s, Clock::time_point start) : s_(s), start_(start) {}

  void feed(const char* data, size_t n) {
    pending_.append(data, n);
    size_t end;
    while ((end = pending_.find("\n\n")) != std::string::npos) {
      on_event(pending_.substr(0, end));
      pending_.erase(0, end + 2);
    }
  }

 private:
  void on_event(const std::string& event) {
    if (event.rfind("data: ", 0) != 0) return;
    const std::string payload = event.substr(6);
    if (payload == "[DONE]") return;
    const json j = json::parse(payload, nullptr, false);
    if (j.is_discarded()) return;
    if (j.contains("usage") && j["usage"].is_object()) s_.tokens = j["usage"].value("completion_tokens", 0);
    if (!j.contains("choices") || j["choices"].empty()) return;
    const auto now = Clock::now();
    if (!seen_first_) {
      s_.ttft_ms = ms_between(start_, now);
      seen_first_ = true;
    } else {
      s_.gaps_ms.push_back(ms_between(last_, now));
    }
    last_ = now;
  }

  Sample& s_;
  Clock::time_point start_, last_;
  bool seen_first_ = false;
  std::string pending_;
};

Sample stream_one(const Options& o, const std::string& prompt) {
  Sample s;
  try {
    net::io_context io;
    net::ip::tcp::socket socket(io);
    socket.connect({net::ip::make_address(o.host), o.port});
    json body = {{"prompt", prompt}, {"max_tokens", o.max_tokens}, {"stream", true},
                 {"stream_options", {{"include_usage", true}}}, {"ignore_eos", true},
                 {"temperature", 0.8}, {"seed", 1}};
    if (!o.model.empty()) body["model"] = o.model;
    http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
    req.set(http::field::host, o.host);
    req.set(http::field::content_type, "application/json");
    req.body() = body.dump();
    req.prepare_payload();
    const auto start = Clock::now();
    http::write(socket, req);

    boost::beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    http::read_header(socket, buffer, parser);
    if (parser.get().result_int() != 200) {
      s.error = "HTTP " + std::to_string(parser.get().result_int());
      return s;
    }
    EventReader events(s, start);
    char chunk[8192];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      boost::system::error_code ec;
      http::read_some(socket, buffer, parser, ec);
      if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
      events.feed(chunk, sizeof chunk - parser.get().body().size);
    }
    s.ok = s.tokens > 0;
    if (!s.ok) s.error = "no usage chunk in the stream";
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  return v[i];
}

json run_level(const Options& o, int n_clients) {
  std::vector<Sample> samples;
  std::mutex mutex;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < n_clients; ++c) {
    threads.emplace_back([&, c] {
      for (int r = 0; r < o.requests; ++r) {
        Sample s = stream_one(o, make_prompt(c, r, o.prompt_words));
        std::lock_guard<std::mutex> lock(mutex);
        samples.push_back(std::move(s));
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall_s = ms_between(start, Clock::now()) / 1000.0;

  std::vector<double> ttft, gaps;
  long tokens = 0;
  int failed = 0;
  std::string first_error;
  for (const Sample& s : samples) {
    if (!s.ok) {
      if (failed++ == 0) first_error = s.error;
      continue;
    }
    ttft.push_back(s.ttft_ms);
    gaps.insert(gaps.end(), s.gaps_ms.begin(), s.gaps_ms.end());
    tokens += s.tokens;
  }
  double gap_sum = 0;
  for (double g : gaps) gap_sum += g;
  json j = {{"clients", n_clients},
            {"requests", samples.size()},
            {"failed", failed},
            {"generated_tokens", tokens},
            {"wall_s", wall_s},
            {"aggregate_tok_s", wall_s > 0 ? static_cast<double>(tokens) / wall_s : 0.0},
            {"ttft_ms", {{"p50", percentile(ttft, 50)}, {"p99", percentile(ttft, 99)}}},
            {"itl_ms", {{"mean", gaps.empty() ? 0.0 : gap_sum / static_cast<double>(gaps.size())},
                        {"p50", percentile(gaps, 50)},
                        {"p99", percentile(gaps, 99)}}}};
  if (failed > 0) j["first_error"] = first_error;
  return j;
}

// ---------------------------------------------------------------------------------------------
// Embeddings

// English-like text of `words` words (sentences of 6-15 words, a comma now and then), different
// for every (client, request, input): `key` seeds it.
std::string make_text(uint64_t key, int words) {
  static const char* kWords[] = {
      "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "on", "by", "be",
      "this", "are", "from", "at", "or", "an", "which", "can", "their", "has", "more", "other", "when",
      "system", "data", "model", "search", "query", "document", "server", "result", "user", "time", "people",
      "water", "city", "river", "history", "language", "computer", "network", "energy", "market", "price",
      "company", "research", "study", "health", "school", "music", "film", "game", "player", "team", "season",
      "government", "policy", "country", "region", "population", "species", "forest", "climate", "temperature",
      "information", "retrieval", "embedding", "vector", "similarity", "question", "answer", "library", "book",
      "author", "published", "described", "developed", "increased", "reported", "including", "between",
      "during", "several", "important", "different", "available", "recent", "large", "small", "public",
      "local", "national", "early", "modern", "quickly", "carefully", "usually", "however", "although",
      "because", "against", "without", "through", "process", "method", "approach", "performance", "memory",
      "storage", "quality", "design", "structure", "function", "example", "number", "level", "power"};
  constexpr uint64_t kCount = sizeof kWords / sizeof kWords[0];
  uint64_t state = key * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  auto next = [&state] {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::string text;
  int sentence_left = 0;
  for (int i = 0; i < words; ++i) {
    std::string w = kWords[next() % kCount];
    if (sentence_left == 0) {
      sentence_left = 6 + static_cast<int>(next() % 10);
      w[0] = static_cast<char>(w[0] - 'a' + 'A');
      if (i > 0) text += ". ";
    } else {
      text += next() % 9 == 0 ? ", " : " ";
    }
    text += w;
    --sentence_left;
  }
  return text + ".";
}

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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Concurrent clients against an OpenAI-compatible /v1/completions (streamed) or /v1/embeddings"};
  app.add_option("--mode", o.mode, "completions or embeddings (default completions)")
      ->check(CLI::IsMember({"completions", "embeddings"}));
  app.add_option("--host", o.host, "server address (default 127.0.0.1)");
  app.add_option("--port", o.port, "server port (default 8080)");
  app.add_option("--model", o.model, "model id to request (default: none sent)");
  app.add_option("--clients", o.clients, "concurrency levels (default 1,4,8,16)")->delimiter(',');
  app.add_option("--requests", o.requests, "requests per client per level (default 2)")->check(CLI::PositiveNumber);
  app.add_option("--max-tokens", o.max_tokens, "tokens generated per request (default 64)")->check(CLI::PositiveNumber);
  app.add_option("--prompt-words", o.prompt_words, "prompt length in words (default 32)")->check(CLI::NonNegativeNumber);
  app.add_option("--batch", o.batch, "embeddings: inputs per request, one level each (default 1,32)")->delimiter(',');
  app.add_option("--min-words", o.min_words, "embeddings: shortest input in words (default 30)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-words", o.max_words, "embeddings: longest input in words (default 60)")
      ->check(CLI::PositiveNumber);
  app.add_option("--encoding", o.encoding, "embeddings: encoding_format (default float)")
      ->check(CLI::IsMember({"float", "base64"}));
  app.add_option("--warmup", o.warmup, "embeddings: untimed requests before each level (default 1)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  const bool embeddings = o.mode == "embeddings";
  if (embeddings && o.max_words < o.min_words) {
    std::cerr << "loadgen: --max-words must be at least --min-words\n";
    return 2;
  }

  json levels = json::array();
  for (int n : o.clients) {
    if (n < 1) {
      std::cerr << "loadgen: --clients values must be positive, got " << n << "\n";
      return 2;
    }
    for (int b : embeddings ? o.batch : std::vector<int>{0}) {
      if (embeddings && b < 1) {
        std::cerr << "loadgen: --batch values must be positive, got " << b << "\n";
        return 2;
      }
      json level = embeddings ? run_embeddings_level(o, n, b) : run_level(o, n);
      std::cout << level.dump() << std::endl;
      levels.push_back(std::move(level));
    }
  }
  bool any_failed = false;
  for (const json& l : levels) any_failed = any_failed || l["failed"].get<int>() > 0;
  return any_failed ? 1 : 0;
}
