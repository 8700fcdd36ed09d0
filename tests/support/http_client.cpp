#include "tests/support/http_client.h"

#include <utility>  // Boost 1.74 + GCC 12: see server/asio.h

#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

namespace ggufd::test {

std::vector<std::string> HttpReply::events() const {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return out;
}

HttpReply http_request(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                       const std::map<std::string, std::string>& headers) {
  namespace net = boost::asio;
  namespace http = boost::beast::http;
  net::io_context io;
  net::ip::tcp::socket socket(io);
  socket.connect({net::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req);
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  parser.skip(method == "HEAD");  // a HEAD response's Content-Length is the GET body's, unsent
  http::read(socket, buffer, parser);
  HttpReply r;
  r.status = static_cast<int>(parser.get().result_int());
  r.body = parser.get().body();
  for (const auto& f : parser.get()) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  boost::system::error_code ec;
  socket.shutdown(net::ip::tcp::socket::shutdown_both, ec);
  return r;
}

std::string raw_exchange(uint16_t port, const std::string& bytes) {
  namespace net = boost::asio;
  net::io_context io;
  net::ip::tcp::socket socket(io);
  socket.connect({net::ip::make_address("127.0.0.1"), port});
  net::write(socket, net::buffer(bytes));
  timeval tv{5, 0};
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(socket.native_handle(), buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string watch_stream(uint16_t port, const std::string& target, const std::function<bool(const std::string&)>& done,
                         std::chrono::milliseconds timeout, const std::function<void()>& during) {
  namespace net = boost::asio;
  net::io_context io;
  net::ip::tcp::socket socket(io);
  socket.connect({net::ip::make_address("127.0.0.1"), port});
  net::write(socket, net::buffer("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  timeval tv{0, 100000};
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out;
  bool started = false;
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline && !done(out)) {
    const ssize_t n = ::recv(socket.native_handle(), buf, sizeof buf, 0);
    if (n == 0) break;
    if (n > 0) out.append(buf, static_cast<size_t>(n));
    if (!started && out.find("\r\n\r\n") != std::string::npos) {
      started = true;
      if (during) during();
    }
  }
  boost::system::error_code ec;
  socket.shutdown(net::ip::tcp::socket::shutdown_both, ec);
  return out;
}

}  // namespace ggufd::test
