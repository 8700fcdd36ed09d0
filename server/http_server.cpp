// Listener and sessions on Boost.Beast: one short coroutine per connection.
#include "server/http_server.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/api_error.h"
#include "server/url.h"

namespace server {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kAwait = net::use_awaitable;

HttpRequest to_request(http::request<http::string_body>&& req) {
  HttpRequest r;
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  const size_t q = r.target.find('?');
  r.path = url_decode(r.target.substr(0, q), false);
  if (q != std::string::npos) r.query = parse_query(r.target.substr(q + 1));
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(field.value());
  }
  r.body = std::move(req.body());
  return r;
}

bool key_matches(const std::string& given, const std::string& key) {
  // Constant time in the key's length, so response timing does not leak a prefix match.
  unsigned diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) diff |= key[i] ^ (i < given.size() ? given[i] : 0);
  return diff == 0;
}

// State shared between a session and its disconnect watcher (both on the session's strand).
struct Watch {
  bool active = true;
  std::shared_ptr<DisconnectSignal> signal = std::make_shared<DisconnectSignal>();
};

// The response head and body as a Beast message. Built outside the coroutine and kept on the
// heap: GCC 12 mis-destroys some Beast messages that live in a coroutine frame.
std::unique_ptr<http::response<http::string_body>> to_message(HttpResponse& res, unsigned version,
                                                              bool keep_alive) {
  auto out = std::make_unique<http::response<http::string_body>>(static_cast<http::status>(res.status), version);
  if (!res.content_type.empty()) out->set(http::field::content_type, res.content_type);
  for (const auto& [name, value] : res.headers) out->set(name, value);
  out->keep_alive(keep_alive);
  out->body() = std::move(res.body);
  out->prepare_payload();
  return out;
}

std::unique_ptr<http::response<http::empty_body>> to_stream_head(const HttpResponse& res, unsigned version,
                                                                 bool keep_alive) {
  auto head = std::make_unique<http::response<http::empty_body>>(static_cast<http::status>(res.status), version);
  head->set(http::field::content_type, res.content_type);
  head->set(http::field::cache_control, "no-cache");
  head->set("X-Accel-Buffering", "no");  // tell nginx-like proxies not to buffer events
  for (const auto& [name, value] : res.headers) head->set(name, value);
  head->keep_alive(keep_alive);
  head->chunked(true);
  return head;
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<Impl> {
  Impl(net::io_context& io_, const Router& router_, HttpOptions options_, AccessLog log_)
      : io(io_), router(router_), opt(std::move(options_)), log(std::move(log_)), acceptor(io_) {}

  net::io_context& io;
  const Router& router;
  HttpOptions opt;
  AccessLog log;
  tcp::acceptor acceptor;
  std::atomic<int> active{0};
  uint16_t bound_port = 0;

  net::awaitable<void> accept_loop();
  net::awaitable<void> session(tcp::socket socket);
  net::awaitable<void> refuse(tcp::socket socket);
  net::awaitable<void> watch_disconnect(beast::tcp_stream& stream, std::shared_ptr<Watch> w);
  net::awaitable<HttpResponse> respond(HttpRequest& req, RequestContext& ctx);
  std::optional<HttpResponse> check_access(const HttpRequest& req) const;
  void add_cors(const HttpRequest& req, HttpResponse& res) const;
  net::awaitable<bool> write(beast::tcp_stream& stream, HttpResponse& res, unsigned version,
                             bool keep_alive, DisconnectSignal& disconnect);
};

net::awaitable<void> HttpServer::Impl::accept_loop() {
  auto self = shared_from_this();
  for (;;) {
    beast::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(net::make_strand(io),
                                                        net::redirect_error(kAwait, ec));
    if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;  // e.g. EMFILE: keep serving the connections we have
    // Streamed tokens are small writes: without TCP_NODELAY, Nagle's algorithm holds each one
    // until the previous is acknowledged, and delayed ACKs turn that into bursts every ~40 ms.
    socket.set_option(tcp::no_delay(true), ec);
    const auto executor = socket.get_executor();
    if (active.load() >= opt.max_connections) {
      net::co_spawn(executor, refuse(std::move(socket)), net::detached);
    } else {
      net::co_spawn(executor, session(std::move(socket)), net::detached);
    }
  }
}

// Over the connection cap: answer 503 and close, without reading the request.
net::awaitable<void> HttpServer::Impl::refuse(tcp::socket socket) {
  auto self = shared_from_this();
  beast::tcp_stream stream(std::move(socket));
  HttpResponse res = HttpResponse::json(503, error_body(503, "too many connections; retry later", "server_error",
                                                       std::nullopt, "too_many_connections"));
  res.headers.emplace_back("Retry-After", "1");
  auto out = to_message(res, 11, false);
  stream.expires_after(std::chrono::seconds(5));
  beast::error_code ec;
  co_await http::async_write(stream, *out, net::redirect_error(kAwait, ec));
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

// Fires the request's disconnect signal if the peer closes while we compute the response.
net::awaitable<void> HttpServer::Impl::watch_disconnect(beast::tcp_stream& stream,
                                                        std::shared_ptr<Watch> w) {
  beast::error_code ec;
  co_await stream.socket().async_wait(tcp::socket::wait_read, net::redirect_error(kAwait, ec));
  if (!w->active || ec) co_return;  // response done (socket may be gone) or wait cancelled
  char c = 0;
  const ssize_t n = ::recv(stream.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) w->signal->fire();
  // n > 0: a pipelined request, not a disconnect; it is read after this response.
}

std::optional<HttpResponse> HttpServer::Impl::check_access(const HttpRequest& req) const {
  if (req.method == "OPTIONS" && !opt.cors_origins.empty()) {
    HttpResponse r;
    r.status = 204;
    r.content_type.clear();
    r.headers = {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                 {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                 {"Access-Control-Max-Age", "86400"}};
    return r;
  }
  if (opt.api_keys.empty() || req.path == "/health") return std::nullopt;
  const std::string auth = req.header("authorization");
  const std::string prefix = "Bearer ";
  if (auth.rfind(prefix, 0) == 0) {
    const std::string given = auth.substr(prefix.size());
    for (const std::string& key : opt.api_keys) {
      if (key_matches(given, key)) return std::nullopt;
    }
  }
  HttpResponse r = HttpResponse::json(
      401, error_body(401,
                      auth.empty() ? "missing API key: send 'Authorization: Bearer <key>'"
                                   : "invalid API key",
                      "invalid_request_error", std::nullopt, "invalid_api_key"));
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

void HttpServer::Impl::add_cors(const HttpRequest& req, HttpResponse& res) const {
  const std::string origin = req.header("origin");
  if (origin.empty() || opt.cors_origins.empty()) return;
  for (const std::string& allowed : opt.cors_origins) {
    if (allowed == "*" || allowed == origin) {
      res.headers.emplace_back("Access-Control-Allow-Origin", allowed == "*" ? "*" : origin);
      res.headers.emplace_back("Vary", "Origin");
      return;
    }
  }
}

net::awaitable<HttpResponse> HttpServer::Impl::respond(HttpRequest& req, RequestContext& ctx) {
  // Plain statements only: GCC 12 miscompiles co_await inside ?: and in `co_return co_await`.
  HttpResponse res;
  if (std::optional<HttpResponse> denied = check_access(req)) {
    res = std::move(*denied);
  } else {
    res = co_await router.dispatch(req, ctx);
  }
  add_cors(req, res);
  co_return res;
}

// Writes a whole response, or a chunked event stream. Returns false if the connection broke.
net::awaitable<bool> HttpServer::Impl::write(beast::tcp_stream& stream, HttpResponse& res,
                                             unsigned version, bool keep_alive,
                                             DisconnectSignal& disconnect) {
  beast::error_code ec;
  if (!res.stream) {
    auto out = to_message(res, version, keep_alive);
    stream.expires_after(opt.write_timeout);
    co_await http::async_write(stream, *out, net::redirect_error(kAwait, ec));
    co_return !ec;
  }
  auto head = to_stream_head(res, version, keep_alive);
  auto sr = std::make_unique<http::response_serializer<http::empty_body>>(*head);
  stream.expires_after(opt.write_timeout);
  co_await http::async_write_header(stream, *sr, net::redirect_error(kAwait, ec));
  disconnect.subscribe([src = res.stream] { src->cancel(); });
  while (!ec) {
    std::optional<std::string> chunk = co_await res.stream->next();
    if (!chunk) break;
    if (chunk->empty()) continue;
    stream.expires_after(opt.write_timeout);
    co_await net::async_write(stream, http::make_chunk(net::buffer(*chunk)),
                              net::redirect_error(kAwait, ec));
  }
  if (ec) {
    disconnect.fire();
    co_return false;
  }
  stream.expires_after(opt.write_timeout);
  co_await net::async_write(stream, http::make_chunk_last(), net::redirect_error(kAwait, ec));
  co_return !ec;
}

net::awaitable<void> HttpServer::Impl::session(tcp::socket socket) {
  auto self = shared_from_this();
  ++active;
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  beast::error_code ec;
  for (bool first = true;; first = false) {
    auto parser = std::make_unique<http::request_parser<http::string_body>>();  // heap: see to_message
    parser->body_limit(opt.body_limit);
    parser->header_limit(static_cast<std::uint32_t>(opt.header_limit));
    stream.expires_after(first ? opt.read_timeout : opt.idle_timeout);
    co_await http::async_read_header(stream, buffer, *parser, net::redirect_error(kAwait, ec));
    if (!ec) {
      stream.expires_after(opt.read_timeout);
      co_await http::async_read(stream, buffer, *parser, net::redirect_error(kAwait, ec));
    }
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::eof) {
      break;
    }
    const auto start = Clock::now();
    HttpRequest req;
    HttpResponse res;
    unsigned version = 11;
    bool keep_alive = false;
    RequestContext ctx{stream.get_executor(), nullptr, std::make_shared<RequestStats>()};
    auto watch = std::make_shared<Watch>();
    ctx.disconnect = watch->signal;
    if (ec) {
      const bool too_big = ec == http::error::body_limit || ec == http::error::header_limit;
      const int status = ec == http::error::body_limit ? 413 : ec == http::error::header_limit ? 431 : 400;
      res = HttpResponse::json(status, error_body(status, too_big ? "request too large: " + ec.message()
                                                                  : "malformed HTTP request: " + ec.message(),
                                                  "invalid_request_error", std::nullopt, std::nullopt));
    } else {
      auto raw = parser->release();
      version = raw.version();
      keep_alive = raw.keep_alive();
      req = to_request(std::move(raw));
      stream.expires_never();
      net::co_spawn(stream.get_executor(), watch_disconnect(stream, watch), net::detached);
      res = co_await respond(req, ctx);
    }
    const bool ok = co_await write(stream, res, version, keep_alive, *watch->signal);
    watch->active = false;
    beast::error_code ignored;
    stream.socket().cancel(ignored);  // ends the watcher's pending wait
    if (log) {
      AccessRecord rec{req.method, req.path, ctx.stats->endpoint.empty() ? "other" : ctx.stats->endpoint,
                       res.status,
                       std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                       *ctx.stats};
      log(rec);
    }
    if (!ok || !keep_alive || ec) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  --active;
}

HttpServer::HttpServer(net::io_context& io, const Router& router, HttpOptions options, AccessLog log)
    : impl_(std::make_shared<Impl>(io, router, std::move(options), std::move(log))) {}

HttpServer::~HttpServer() { stop_accepting(); }

void HttpServer::start() {
  const tcp::endpoint endpoint(net::ip::make_address(impl_->opt.host), impl_->opt.port);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(net::socket_base::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen(net::socket_base::max_listen_connections);
  impl_->bound_port = impl_->acceptor.local_endpoint().port();
  net::co_spawn(impl_->acceptor.get_executor(), impl_->accept_loop(), net::detached);
}

void HttpServer::stop_accepting() {
  net::post(impl_->acceptor.get_executor(), [impl = impl_] {
    beast::error_code ec;
    impl->acceptor.close(ec);
  });
}

uint16_t HttpServer::port() const { return impl_->bound_port; }
int HttpServer::active_connections() const { return impl_->active.load(); }

}  // namespace server
