// Server load generator against an OpenAI-compatible server (ggufd serve, or llama-server for
// comparison), one JSON object per line for each load level.
//
// Completions (default): N concurrent streaming clients on /v1/completions; aggregate generated
// tokens/s, time to first token (p50/p99) and inter-token latency.
//
//   loadgen --port 8080 --clients 1,4,8,16 --requests 2 --max-tokens 64
//
// Each client runs `requests` completions one after another, each streamed with
// ignore_eos so every request generates exactly max_tokens. Time to first token runs until the
// first event carrying a token (a chat stream's opening role chunk does not count).
//
// Chat with a shared system prompt: N concurrent streaming clients on /v1/chat/completions, every
// request the same system message of about S tokens (sized with the server's /tokenize) and a
// user message of its own; besides the above, prompt tokens/s and the prompt tokens the server
// reports as reused (usage.prompt_tokens_details.cached_tokens, totals; null when it reports
// none). `warmup` untimed requests first put the system prompt in the server's cache (0: cold).
//
//   loadgen --mode chat --port 8080 --clients 8 --system-tokens 2000 --max-tokens 64
//
// Prefix: the same on /v1/completions, each prompt the system text, a blank line and the user
// text. A chat stream shows a token only when it has text, so a random-weight model that samples
// textless filler tokens gives chat mode no time to first token (null); prefix mode still does.
//
// Embeddings: N concurrent clients on /v1/embeddings, each request an `input` array of B
// distinct English-like texts of 30-60 words; embeddings/s, inputs/s, prompt tokens/s (from
// usage) and request latency percentiles, for every (clients, batch) pair.
//
//   loadgen --mode embeddings --port 8080 --clients 1,2 --batch 1,32 --requests 8
//
// Clients are threads with blocking sockets: the generator itself is idle next to the server it
// measures. The modes live in loadgen_stream.cpp and loadgen_embeddings.cpp.
#include <utility>  // Boost 1.74 + GCC 12: see server/asio.h

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <iostream>

#include "bench/loadgen.h"

namespace loadgen {

namespace net = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  return v[i];
}

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


std::pair<int, std::string> post_json(const Options& o, const std::string& target, const json& body) {
  net::io_context io;
  net::ip::tcp::socket socket(io);
  socket.connect({net::ip::make_address(o.host), o.port});
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, o.host);
  req.set(http::field::content_type, "application/json");
  req.body() = body.dump();
  req.prepare_payload();
  http::write(socket, req);
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  http::read(socket, buffer, parser);
  return {parser.get().result_int(), parser.get().body()};
}

}  // namespace loadgen

int main(int argc, char** argv) {
  using namespace loadgen;
  Options o;
  CLI::App app{"Concurrent clients against an OpenAI-compatible server: /v1/completions or /v1/chat/completions "
               "(streamed), or /v1/embeddings"};
  app.add_option("--mode", o.mode, "completions, chat, prefix or embeddings (default completions)")
      ->check(CLI::IsMember({"completions", "chat", "prefix", "embeddings"}));
  app.add_option("--host", o.host, "server address (default 127.0.0.1)");
  app.add_option("--port", o.port, "server port (default 8080)");
  app.add_option("--model", o.model, "model id to request (default: none sent)");
  app.add_option("--clients", o.clients, "concurrency levels (default 1,4,8,16)")->delimiter(',');
  app.add_option("--requests", o.requests, "requests per client per level (default 2)")->check(CLI::PositiveNumber);
  app.add_option("--max-tokens", o.max_tokens, "tokens generated per request (default 64)")->check(CLI::PositiveNumber);
  app.add_option("--prompt-words", o.prompt_words, "completions: prompt length in words (default 32)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--system-tokens", o.system_tokens, "chat, prefix: tokens of the shared system prompt (default 2000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--user-words", o.user_words, "chat, prefix: words of each request's user message (default 24)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "embeddings: inputs per request, one level each (default 1,32)")->delimiter(',');
  app.add_option("--min-words", o.min_words, "embeddings: shortest input in words (default 30)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-words", o.max_words, "embeddings: longest input in words (default 60)")
      ->check(CLI::PositiveNumber);
  app.add_option("--encoding", o.encoding, "embeddings: encoding_format (default float)")
      ->check(CLI::IsMember({"float", "base64"}));
  app.add_option("--warmup", o.warmup, "chat, prefix, embeddings: untimed requests before each level (default 1)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  const bool embeddings = o.mode == "embeddings";
  if (embeddings && o.max_words < o.min_words) {
    std::cerr << "loadgen: --max-words must be at least --min-words\n";
    return 2;
  }
  for (int n : o.clients) {
    if (n < 1) {
      std::cerr << "loadgen: --clients values must be positive, got " << n << "\n";
      return 2;
    }
  }
  for (int b : embeddings ? o.batch : std::vector<int>{}) {
    if (b < 1) {
      std::cerr << "loadgen: --batch values must be positive, got " << b << "\n";
      return 2;
    }
  }
  std::string system_prompt;
  int system_tokens = -1;
  const bool shared = o.mode == "chat" || o.mode == "prefix";
  if (shared) {
    try {
      system_prompt = make_system_prompt(o, system_tokens);
    } catch (const std::exception& e) {
      std::cerr << "loadgen: cannot reach " << o.host << ":" << o.port << ": " << e.what() << "\n";
      return 1;
    }
    if (system_tokens < 0) std::cerr << "loadgen: the server has no /tokenize; system prompt sized by estimate\n";
  }

  json levels = json::array();
  for (int n : o.clients) {
    for (int b : embeddings ? o.batch : std::vector<int>{0}) {
      json level = embeddings ? run_embeddings_level(o, n, b)
                              : run_stream_level(o, n, shared ? &system_prompt : nullptr);
      if (shared) level["system_prompt_tokens"] = system_tokens >= 0 ? json(system_tokens) : json(nullptr);
      std::cout << level.dump() << std::endl;
      levels.push_back(std::move(level));
    }
  }
  bool any_failed = false;
  for (const json& l : levels) any_failed = any_failed || l["failed"].get<int>() > 0;
  return any_failed ? 1 : 0;
}
