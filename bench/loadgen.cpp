// Server load generator: N concurrent streaming clients against an OpenAI-compatible
// /v1/completions (ggufd serve, or llama-server for comparison). For each concurrency level it
// reports aggregate generated tokens/s, time to first token (p50/p99) and inter-token latency
// as one JSON object per line.
//
//   loadgen --port 8080 --clients 1,4,8,16 --requests 2 --max-tokens 64
//
// Each client runs `requests` completions one after another, each streamed with
// ignore_eos so every request generates exactly max_tokens. Clients are threads with blocking
// sockets: the generator itself is idle next to the server it measures.
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
#include <string>
#include <thread>
#include <vector>

namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string model;  // empty: the server's only model
  std::vector<int> clients{1, 4, 8, 16};
  int requests = 2;
  int max_tokens = 64;
  int prompt_words = 32;
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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Concurrent streaming clients against an OpenAI-compatible /v1/completions"};
  app.add_option("--host", o.host, "server address (default 127.0.0.1)");
  app.add_option("--port", o.port, "server port (default 8080)");
  app.add_option("--model", o.model, "model id to request (default: none sent)");
  app.add_option("--clients", o.clients, "concurrency levels (default 1,4,8,16)")->delimiter(',');
  app.add_option("--requests", o.requests, "requests per client per level (default 2)")->check(CLI::PositiveNumber);
  app.add_option("--max-tokens", o.max_tokens, "tokens generated per request (default 64)")->check(CLI::PositiveNumber);
  app.add_option("--prompt-words", o.prompt_words, "prompt length in words (default 32)")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  json levels = json::array();
  for (int n : o.clients) {
    if (n < 1) {
      std::cerr << "loadgen: --clients values must be positive, got " << n << "\n";
      return 2;
    }
    json level = run_level(o, n);
    std::cout << level.dump() << std::endl;
    levels.push_back(std::move(level));
  }
  bool any_failed = false;
  for (const json& l : levels) any_failed = any_failed || l["failed"].get<int>() > 0;
  return any_failed ? 1 : 0;
}
