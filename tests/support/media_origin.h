// A plain-HTTP origin for the remote image tests (hub/fetch.h, --allow-remote-media): listens on
// 127.0.0.1 (a free port), reads one request per connection and answers by path with what the
// test registered: a whole reply, or a handler that writes what it likes (a trickle, a body longer
// than its Content-Length, a stream that goes on until the client hangs up). It counts requests
// and the bytes each path's handler got out, and closes every connection after one answer.
// Thread-safety: routes are added before the first request; the counters may be read any time.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ggufd::test {

class MediaOrigin {
 public:
  // One accepted connection. send() returns false once the client has gone (or the origin stops).
  class Connection {
   public:
    Connection(int fd, const std::atomic<bool>& stopping) : fd_(fd), stopping_(stopping) {}
    bool send(std::string_view bytes) {
      while (!bytes.empty()) {
        if (stopping_.load()) return false;
        pollfd p{fd_, POLLOUT, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<size_t>(n));
        sent += static_cast<size_t>(n);
      }
      return true;
    }
    // Sleeps `d`, or less when the origin stops; false then.
    bool pause(std::chrono::milliseconds d) {
      const auto until = std::chrono::steady_clock::now() + d;
      while (std::chrono::steady_clock::now() < until) {
        if (stopping_.load()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return true;
    }
    size_t sent = 0;  // bytes written so far, head included

   private:
    int fd_;
    const std::atomic<bool>& stopping_;
  };
  using Handler = std::function<void(Connection&)>;

  MediaOrigin() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(listen_fd_);
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~MediaOrigin() {
    stopping_.store(true);
    acceptor_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(mu_);
      workers.swap(workers_);
    }
    for (std::thread& t : workers) t.join();
    ::close(listen_fd_);
  }
  MediaOrigin(const MediaOrigin&) = delete;
  MediaOrigin& operator=(const MediaOrigin&) = delete;

  uint16_t port() const { return port_; }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  void route(const std::string& path, Handler h) { routes_[path] = std::move(h); }
  // A whole reply: status line, the headers given, Content-Length, the body.
  void reply(const std::string& path, int status, const std::string& body,
             const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    route(path, [status, body, headers](Connection& c) { c.send(head(status, headers, body.size()) + body); });
  }
  // "HTTP/1.1 <status> X\r\n<headers>[Content-Length]\r\nConnection: close\r\n\r\n" (no length: -1).
  static std::string head(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                          int64_t content_length) {
    const char* reason = status < 300 ? " OK" : status < 400 ? " Found" : " Error";
    std::string h = "HTTP/1.1 " + std::to_string(status) + reason + "\r\n";
    for (const auto& [k, v] : headers) h += k + ": " + v + "\r\n";
    if (content_length >= 0) h += "Content-Length: " + std::to_string(content_length) + "\r\n";
    return h + "Connection: close\r\n\r\n";
  }

  // Requests served for `path` so far.
  int requests(const std::string& path) const {
    std::lock_guard lock(mu_);
    const auto it = requests_.find(path);
    return it == requests_.end() ? 0 : it->second;
  }
  // Bytes the last finished connection for `path` wrote (head included); 0 if none finished.
  size_t sent(const std::string& path) const {
    std::lock_guard lock(mu_);
    const auto it = sent_.find(path);
    return it == sent_.end() ? 0 : it->second;
  }
  // Connections for `path` whose handler has returned.
  int finished(const std::string& path) const {
    std::lock_guard lock(mu_);
    const auto it = finished_.find(path);
    return it == finished_.end() ? 0 : it->second;
  }

 private:
  void accept_loop() {
    while (!stopping_.load()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard lock(mu_);
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    std::string request;
    char buf[4096];
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (request.find("\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < give_up &&
           !stopping_.load()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    const size_t sp1 = request.find(' '), sp2 = request.find(' ', sp1 + 1);
    const bool parsed = sp1 != std::string::npos && sp2 != std::string::npos;
    const std::string path = parsed ? request.substr(sp1 + 1, sp2 - sp1 - 1) : "";
    Connection c(fd, stopping_);
    {
      std::lock_guard lock(mu_);
      ++requests_[path];
    }
    const auto it = routes_.find(path);
    if (it != routes_.end()) {
      it->second(c);
    } else {
      c.send(head(404, {{"Content-Type", "text/plain"}}, 9) + "not found");
    }
    {
      std::lock_guard lock(mu_);
      sent_[path] = c.sent;
      ++finished_[path];
    }
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::map<std::string, Handler> routes_;
  mutable std::mutex mu_;
  std::map<std::string, int> requests_;
  std::map<std::string, size_t> sent_;
  std::map<std::string, int> finished_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

}  // namespace ggufd::test
