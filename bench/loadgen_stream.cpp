// bench/loadgen's streaming modes. completions: N clients on /v1/completions with short prompts
// of their own. chat: N clients on /v1/chat/completions, every request the same long system
// message and a user message of its own, so a server that shares prompt prefixes across slots
// computes the system prompt once. prefix: the same on /v1/completions, the prompt being the
// system text, a blank line and the user text. All stream with ignore_eos (each request generates
// exactly max_tokens) and ask for the usage chunk (stream_options.include_usage).
#include <utility>  // Boost 1.74 + GCC 12: see server/asio.h

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cmath>
#include <mutex>
#include <thread>

#include "bench/loadgen.h"

namespace loadgen {

namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;

// What one streamed request measured.
struct Sample {
  bool ok = false;
  std::string error;
  double ttft_ms = 0;
  std::vector<double> gaps_ms;  // between consecutive events carrying tokens
  bool timed = false;           // whether any event carried one (ttft_ms is then set)
  int tokens = 0;               // usage.completion_tokens
  int prompt_tokens = 0;        // usage.prompt_tokens
  int cached_tokens = -1;       // usage.prompt_tokens_details.cached_tokens; -1: not reported
};

// True when a chunk's first choice stands for generated tokens. Completions: a `text` before the
// finish (servers send one chunk per token even when its text is empty, an incomplete UTF-8
// character or a token without text). Chat: non-empty delta.content or delta.reasoning_content,
// as servers send no chunk for a token without text, and a server may send the opening role
// chunk before the prompt is evaluated. So a chat stream of a random-weight model over a
// vocabulary of filler tokens may carry none: prefix mode measures the same workload then.
bool carries_token(const json& choice) {
  auto nonempty = [](const json& o, const char* key) {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
  };
  if (!choice.is_object()) return false;
  const auto text = choice.find("text");
  if (text != choice.end()) return text->is_string() && choice.value("finish_reason", json()).is_null();
  const auto delta = choice.find("delta");
  return delta != choice.end() && delta->is_object() &&
         (nonempty(*delta, "content") || nonempty(*delta, "reasoning_content"));
}

// Splits the streamed body into SSE events and timestamps the ones that carry tokens.
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
    if (j.is_discarded() || !j.is_object()) return;
    // An error event ends a stream that has already answered 200 (llama-server sends
    // {"error": {"code": 500, "message": ...}}): the request failed, with the server's reason.
    if (const auto e = j.find("error"); e != j.end() && s_.error.empty()) {
      const auto m = e->is_object() ? e->find("message") : e->end();
      const std::string why = m != e->end() && m->is_string() ? m->get<std::string>() : e->dump();
      s_.error = "stream error event: " + why.substr(0, 200);
    }
    if (const auto u = j.find("usage"); u != j.end() && u->is_object()) read_usage(*u);
    const auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array() || choices->empty() || !carries_token((*choices)[0])) return;
    const auto now = Clock::now();
    if (!s_.timed) {
      s_.ttft_ms = ms_between(start_, now);
      s_.timed = true;
    } else {
      s_.gaps_ms.push_back(ms_between(last_, now));
    }
    last_ = now;
  }

  void read_usage(const json& u) {
    s_.tokens = u.value("completion_tokens", 0);
    s_.prompt_tokens = u.value("prompt_tokens", 0);
    const auto details = u.find("prompt_tokens_details");
    if (details != u.end() && details->is_object() && details->contains("cached_tokens")) {
      s_.cached_tokens = details->value("cached_tokens", -1);
    }
  }

  Sample& s_;
  Clock::time_point start_, last_;
  std::string pending_;
};

// One streamed request of `body` to `target`.
Sample stream_one(const Options& o, const std::string& target, json body) {
  Sample s;
  try {
    net::io_context io;
    net::ip::tcp::socket socket(io);
    socket.connect({net::ip::make_address(o.host), o.port});
    body["max_tokens"] = o.max_tokens;
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    body["ignore_eos"] = true;
    body["temperature"] = 0.8;
    body["seed"] = 1;
    if (!o.model.empty()) body["model"] = o.model;
    http::request<http::string_body> req{http::verb::post, target, 11};
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
    s.ok = s.tokens > 0 && s.error.empty();
    if (!s.ok && s.error.empty()) s.error = "no usage chunk in the stream";
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

std::string make_prompt(int client, int request, int words) {
  std::string p = "Story " + std::to_string(client) + "." + std::to_string(request) + ":";
  static const char* kWords[] = {"Once", "upon", "a", "time", "there", "was", "a", "little", "dog"};
  for (int i = 0; i < words; ++i) p += std::string(" ") + kWords[(i + client) % 9];
  return p;
}

// Request r of client c: a completion of a short prompt, or (with a system prompt) a chat turn or
// a completion after the system prompt, with a user message no other request has.
std::pair<std::string, json> make_request(const Options& o, int client, int request, const std::string* system) {
  if (system == nullptr) return {"/v1/completions", {{"prompt", make_prompt(client, request, o.prompt_words)}}};
  const uint64_t key = (uint64_t{1} << 62) ^ (static_cast<uint64_t>(client) << 24) ^ static_cast<uint64_t>(request);
  const std::string user = "Request " + std::to_string(client) + "." + std::to_string(request) + ": " +
                           make_text(key, o.user_words);
  if (o.mode == "prefix") return {"/v1/completions", {{"prompt", *system + "\n\n" + user}}};
  return {"/v1/chat/completions",
          {{"messages", json::array({{{"role", "system"}, {"content", *system}}, {{"role", "user"}, {"content", user}}})}}};
}

// Tokens of `text` by the server's POST /tokenize; -1 when it has none.
int count_tokens(const Options& o, const std::string& text) {
  try {
    const auto [status, body] = post_json(o, "/tokenize", {{"content", text}});
    if (status != 200) return -1;
    const json j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.contains("tokens") || !j["tokens"].is_array()) return -1;
    return static_cast<int>(j["tokens"].size());
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

std::string make_system_prompt(const Options& o, int& tokens) {
  const std::string head = "You are a helpful assistant. Read the following notes before you answer.\n\n";
  constexpr uint64_t kKey = 0x5157E3;  // the same text on every run and server
  int words = std::max(1, static_cast<int>(std::lround(o.system_tokens / 1.3)));
  std::string text = head + make_text(kKey, words);
  tokens = count_tokens(o, text);
  // make_text(key, w) grows with w word by word: rescale the word count by the measured ratio.
  for (int i = 0; i < 6 && tokens > 0 && std::abs(tokens - o.system_tokens) > o.system_tokens / 100; ++i) {
    words = std::max(1, static_cast<int>(std::lround(static_cast<double>(words) * o.system_tokens / tokens)));
    text = head + make_text(kKey, words);
    tokens = count_tokens(o, text);
  }
  return text;
}

json run_stream_level(const Options& o, int n_clients, const std::string* system_prompt) {
  // With a system prompt: untimed requests first, so it is what a deployed one is: already seen.
  for (int w = 0; system_prompt != nullptr && w < o.warmup; ++w) {
    auto [target, body] = make_request(o, 1000 + w, 0, system_prompt);
    stream_one(o, target, std::move(body));
  }
  std::vector<Sample> samples;
  std::mutex mutex;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < n_clients; ++c) {
    threads.emplace_back([&, c] {
      for (int r = 0; r < o.requests; ++r) {
        auto [target, body] = make_request(o, c, r, system_prompt);
        Sample s = stream_one(o, target, std::move(body));
        std::lock_guard<std::mutex> lock(mutex);
        samples.push_back(std::move(s));
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall_s = ms_between(start, Clock::now()) / 1000.0;

  std::vector<double> ttft, gaps;
  long tokens = 0, prompt_tokens = 0, cached_tokens = 0;
  int failed = 0, with_cached = 0;
  std::string first_error;
  for (const Sample& s : samples) {
    if (!s.ok) {
      if (failed++ == 0) first_error = s.error;
      continue;
    }
    if (s.timed) ttft.push_back(s.ttft_ms);
    gaps.insert(gaps.end(), s.gaps_ms.begin(), s.gaps_ms.end());
    tokens += s.tokens;
    prompt_tokens += s.prompt_tokens;
    if (s.cached_tokens >= 0) {
      cached_tokens += s.cached_tokens;
      ++with_cached;
    }
  }
  double gap_sum = 0;
  for (double g : gaps) gap_sum += g;
  auto per_s = [wall_s](long n) { return wall_s > 0 ? static_cast<double>(n) / wall_s : 0.0; };
  json j = {{"mode", o.mode},
            {"clients", n_clients},
            {"requests", samples.size()},
            {"failed", failed},
            {"generated_tokens", tokens},
            {"prompt_tokens", prompt_tokens},
            // prompt tokens the server says it reused (null: it reported none)
            {"cached_tokens", with_cached > 0 ? json(cached_tokens) : json(nullptr)},
            {"wall_s", wall_s},
            {"aggregate_tok_s", per_s(tokens)},
            {"prompt_tokens_s", per_s(prompt_tokens)},
            // of the requests whose stream carried tokens (null: none did, see carries_token)
            {"ttft_ms", ttft.empty() ? json(nullptr) : json{{"p50", percentile(ttft, 50)}, {"p99", percentile(ttft, 99)}}},
            {"itl_ms", gaps.empty() ? json(nullptr)
                                    : json{{"mean", gap_sum / static_cast<double>(gaps.size())},
                                           {"p50", percentile(gaps, 50)},
                                           {"p99", percentile(gaps, 99)}}}};
  if (failed > 0) j["first_error"] = first_error;
  return j;
}

}  // namespace loadgen
