// Server load generator (bench/loadgen): what its three modes share. Each level's runner starts
// its clients as threads with blocking sockets, waits for them and returns one JSON object.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loadgen {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string mode = "completions";  // or "chat", "prefix", "embeddings"
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string model;  // empty: the server's only model
  std::vector<int> clients{1, 4, 8, 16};
  int requests = 2;
  int max_tokens = 64;
  int prompt_words = 32;
  // Chat and prefix.
  int system_tokens = 2000;  // the shared system prompt, measured with the server's /tokenize
  int user_words = 24;       // each request's own user message
  // Embeddings.
  std::vector<int> batch{1, 32};  // inputs per request
  int min_words = 30, max_words = 60;
  std::string encoding = "float";  // encoding_format: float or base64
  int warmup = 1;                  // chat, prefix, embeddings: untimed requests before each level
};

double ms_between(Clock::time_point a, Clock::time_point b);

// The p-th percentile (0..100, nearest rank) of v; 0 for an empty v.
double percentile(std::vector<double> v, double p);

// English-like text of `words` words (sentences of 6-15 words, a comma now and then), different
// for every `key`; for one key, a longer text starts with the shorter one.
std::string make_text(uint64_t key, int words);

// POST `target` with a JSON body; the status code and the response body. Throws on I/O errors.
std::pair<int, std::string> post_json(const Options& o, const std::string& target, const nlohmann::json& body);

// The shared system prompt of chat and prefix modes: English-like text whose token count, by the server's
// POST /tokenize, is close to o.system_tokens. `tokens` gets that count, or -1 when the server
// has no /tokenize (the text is then sized at 1.3 tokens per word).
std::string make_system_prompt(const Options& o, int& tokens);

// n_clients streaming clients, o.requests each: /v1/completions, or with `system_prompt` (chat and
// prefix modes) that system prompt and a user message of their own: on /v1/chat/completions as
// the system and user messages (chat), or on /v1/completions one after the other (prefix).
nlohmann::json run_stream_level(const Options& o, int n_clients, const std::string* system_prompt);

// n_clients clients, o.requests each, on /v1/embeddings with `batch` inputs per request.
nlohmann::json run_embeddings_level(const Options& o, int n_clients, int batch);

}  // namespace loadgen
