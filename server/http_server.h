// The HTTP/1.1 server: accepts connections and runs one coroutine per session.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/http.h"
#include "server/router.h"

namespace server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;                        // 0: pick a free port (see HttpServer::port())
  size_t body_limit = 8 << 20;                 // bytes; larger requests get 413
  size_t header_limit = 16 << 10;              // bytes; larger headers get 431
  std::chrono::seconds header_timeout{10};     // to receive a new connection's first request head
  std::chrono::seconds read_timeout{30};       // to receive a request's body
  std::chrono::seconds idle_timeout{60};       // keep-alive wait for the next request head
  std::chrono::seconds write_timeout{60};      // for one write to make progress
  int max_connections = 512;                   // at the cap, the longest-idle connection is closed
                                               // for a new one; with none idle, new ones get 503
  std::vector<std::string> api_keys;           // empty: no authentication
  std::vector<std::string> cors_origins;       // "*" or exact origins; empty: no CORS headers
};

// One line of the access log, produced after each response.
struct AccessRecord {
  std::string method;
  std::string path;            // raw (percent-encoded) as the client sent it: escape before logging
  std::string endpoint;        // the matched route pattern, or "other"
  int status = 0;
  double total_ms = 0;
  RequestStats stats;
};

// Accepts connections on one port and serves them with the Router.
//
// Sessions are coroutines on strands of the io_context the caller runs (on any number of threads).
// Keep-alive, timeouts, header and body limits, a connection cap, API keys and CORS are enforced
// here, before the router. A request's head is checked before its body is read: a missing API key
// (401), an unknown route (404/405), a JSON route without Content-Type application/json (415) or
// a body over the route's limit (413) is answered at once and the connection closed, so no
// unauthenticated or unwanted body is ever buffered; "Expect: 100-continue" is answered once the
// head passed.
//
// While a response is computed, the connection is watched: a reset cancels the request; so does
// the end of the client's stream on a keep-alive connection, unless the response is a stream,
// which goes on until a write fails (a half-closed client still reads it). A client that asked
// for "Connection: close" (or spoke HTTP/1.0) may half-close after its request and still gets any
// response. Bytes a pipelining client sends meanwhile are kept for its next request.
//
// Ownership: borrows the io_context and router, which must outlive it.
// Thread-safety: start()/stop_accepting() from the io_context's threads or before run.
class HttpServer {
 public:
  using AccessLog = std::function<void(const AccessRecord&)>;

  HttpServer(net::io_context& io, const Router& router, HttpOptions options, AccessLog log);
  ~HttpServer();

  // Binds and starts accepting. Throws std::system_error when the address is unusable.
  void start();
  // Closes the listening socket; sessions in progress go on until their response is done.
  void stop_accepting();
  uint16_t port() const;
  int active_connections() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace server
