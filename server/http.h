// HTTP request/response values passed between the session and the handlers (no Beast here).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/asio.h"

namespace server {

struct HttpRequest {
  std::string method;                           // "GET", "POST", ...
  std::string target;                           // as sent: path and query
  std::string path;                             // decoded path without the query
  std::map<std::string, std::string> query;     // decoded query parameters
  std::map<std::string, std::string> headers;   // lower-cased names
  std::map<std::string, std::string> params;    // path parameters filled by the router ("id")
  std::string body;

  // A header's value, or empty when absent. `name` must be lower case.
  std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// A body produced piece by piece (server-sent events). The session writes each chunk as it comes.
//
// Thread-safety: next() is awaited on the session's strand only; cancel() may be called from it
// too (when the client goes away), and must make a pending next() return promptly.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  // The next piece of the body, or nullopt at its end.
  virtual net::awaitable<std::optional<std::string>> next() = 0;
  virtual void cancel() = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<ChunkSource> stream;          // when set, `body` is ignored and chunks are sent
  std::shared_ptr<void> hold;                   // kept until the body is sent (the model's lease)

  static HttpResponse json(int status, std::string body) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }
};

// Fired when the client goes away before the response is complete. kReset: the connection
// broke (a reset, a failed write). kEndOfStream: the client stopped sending, which looks the same
// whether it closed the socket or only half-closed it and still reads. A subscriber that learns
// on its own when the client has really gone (a stream: its next write fails) waits for kReset.
// Thread-safety: used on the session's strand only.
class DisconnectSignal {
 public:
  enum class Kind { kEndOfStream, kReset };

  // Runs `f` when the signal fires (at once if it already has): on either kind, or with
  // `on_end_of_stream` false only on kReset.
  void subscribe(std::function<void()> f, bool on_end_of_stream = true) {
    if (reset_ || (end_of_stream_ && on_end_of_stream)) {
      f();
    } else {
      subscribers_.push_back({std::move(f), on_end_of_stream});
    }
  }
  void fire(Kind kind) {
    if (reset_) return;
    (kind == Kind::kReset ? reset_ : end_of_stream_) = true;
    std::vector<Subscriber> waiting;
    for (Subscriber& s : subscribers_) {
      if (kind == Kind::kReset || s.on_end_of_stream) {
        s.f();
      } else {
        waiting.push_back(std::move(s));
      }
    }
    subscribers_.swap(waiting);
  }
  bool fired() const { return reset_ || end_of_stream_; }

 private:
  struct Subscriber {
    std::function<void()> f;
    bool on_end_of_stream;
  };
  bool end_of_stream_ = false;
  bool reset_ = false;
  std::vector<Subscriber> subscribers_;
};

// Token counts and timings a handler reports for the access log and metrics; filled in as the
// response is produced (for streams, by the time the last chunk is sent).
struct RequestStats {
  std::string endpoint;           // route pattern, for metrics labels ("/v1/completions")
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  double ttft_ms = -1;            // time to first generated token
  double last_token_ms = -1;      // time to the last generated token (so far)
};

// What a handler may use besides the request.
struct RequestContext {
  net::any_io_executor executor;               // the session's strand
  std::shared_ptr<DisconnectSignal> disconnect;
  std::shared_ptr<RequestStats> stats;
};

}  // namespace server
