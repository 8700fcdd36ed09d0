// `ggufd health`: GET /health of a running server and exit 0 when it answers 200. The
// container's HEALTHCHECK uses it, so the runtime image needs no HTTP client of its own. Host
// and port come from the same flags / GGUFD_HOST / GGUFD_PORT the server reads.
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/ggufd/commands.h"

namespace ggufd {

namespace {

struct HealthOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  int timeout_s = 3;
};

// The HTTP status line's code of GET /health, or -1 with `error` set.
int get_health(const HealthOptions& o, std::string& error) {
  // A server listening on every interface is reached through loopback.
  const std::string host = (o.host == "0.0.0.0" || o.host == "::") ? "127.0.0.1" : o.host;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), std::to_string(o.port).c_str(), &hints, &found); rc != 0) {
    error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return -1;
  }
  const int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  timeval tv{o.timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const bool connected = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
  freeaddrinfo(found);
  if (!connected) {
    if (fd >= 0) close(fd);
    error = "cannot connect to " + host + ":" + std::to_string(o.port);
    return -1;
  }
  const std::string request = "GET /health HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
  std::string reply;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[512];
    for (ssize_t n; reply.size() < 4096 && (n = recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, size_t(n));
  }
  close(fd);
  // "HTTP/1.1 200 OK"
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.size() < 12) {
    error = "no HTTP reply from " + host + ":" + std::to_string(o.port);
    return -1;
  }
  return std::atoi(reply.c_str() + 9);
}

}  // namespace

Command add_health(CLI::App& app) {
  auto o = std::make_shared<HealthOptions>();
  app.add_option("--host", o->host, "server address (default 127.0.0.1)")->envname("GGUFD_HOST");
  app.add_option("--port", o->port, "server port (default 8080)")->envname("GGUFD_PORT")->check(CLI::Range(1, 65535));
  app.add_option("--timeout", o->timeout_s, "seconds to wait (default 3)")->check(CLI::Range(1, 300));
  return [o] {
    std::string error;
    const int status = get_health(*o, error);
    if (status == 200) {
      std::printf("healthy\n");
      return 0;
    }
    if (status < 0) {
      std::fprintf(stderr, "ggufd health: %s\n", error.c_str());
    } else {
      std::fprintf(stderr, "ggufd health: /health answered %d (loading or shutting down)\n", status);
    }
    return 1;
  };
}

}  // namespace ggufd
