// A plain TCP connection to the server for tests that need byte-level control: half-closes,
// pipelining, held bodies, idle sockets, reading with deadlines.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ggufd::test {

class RawConnection {
 public:
  explicit RawConnection(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect() failed");
    }
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  void send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send() failed");
      done += static_cast<size_t>(n);
    }
  }
  // No more bytes from us; we still read (a TCP half-close).
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Reads until `until` appears in what was received, the server closes, or `timeout` passes.
  // Everything received so far is kept in received().
  bool read_until(const std::string& until, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received_.find(until) == std::string::npos) {
      if (!read_some(deadline)) return received_.find(until) != std::string::npos;
    }
    return true;
  }
  // Reads until the server closes (true) or `timeout` passes (false).
  bool read_to_close(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (read_some(deadline)) {
    }
    return closed_;
  }
  bool closed_by_server() const { return closed_; }
  const std::string& received() const { return received_; }

 private:
  // One read before `deadline`; false on close, error or timeout.
  bool read_some(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[8192];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    received_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  std::string received_;
  bool closed_ = false;
};

// "POST <target> HTTP/1.1" with a JSON body and the given extra header lines ("Name: value\r\n").
inline std::string post_request(const std::string& target, const std::string& body, const std::string& extra = "",
                                const std::string& version = "HTTP/1.1") {
  return "POST " + target + " " + version + "\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace ggufd::test
