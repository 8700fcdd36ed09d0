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
  std::chrono::seconds read_timeout{30};       // to receive one whole request
  std::chrono::seconds idle_timeout{60};       // keep-alive wait for the next request
  std::chrono::seconds write_timeout{60};      // for one write to make progress
  int max_connections = 512;                   // beyond this, new connections get 503 and close
  std::vector<std::string> api_keys;           // empty: no authentication
  std::vector<std::string> cors_origins;       // "*" or exact origins; empty: no CORS headers
};

// One line of the access log, produced after each response.
struct AccessRecord {
  std::string method;
  std::string path;
  std::string endpoint;        // the matched route pattern, or "other"
  int status = 0;
  double total_ms = 0;
  RequestStats stats;
};

// Accepts connections on one port and serves them with the Router.
//
// Sessions are coroutines on strands of the io_context the caller runs (on any number of threads).
// Keep-alive, request timeouts, header and body limits, a connection cap, API keys and CORS are
// enforced here, before the router. Ownership: borrows the io_context and router, which must
// outlive it. Thread-safety: start()/stop_accepting() from the io_context's threads or before run.
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
