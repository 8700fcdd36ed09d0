// Listener and sessions on Boost.Beast: one short coroutine per connection.
#include "server/http_server.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>
#include <list>
#include <mutex>

#include "server/api/api_error.h"
#include "server/api/request_fields.h"
#include "server/api/url.h"

namespace server {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using Parser = http::request_parser<http::string_body>;

namespace {

constexpr auto kAwait = net::use_awaitable;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Method, target, path, query and headers of a request whose head has been read.
HttpRequest request_head(const Parser::value_type& m) {
  HttpRequest r;
  r.method = std::string(m.method_string());
  r.target = std::string(m.target());
  const size_t q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) r.query = parse_query(r.target.substr(q + 1));
  for (const auto& field : m) r.headers[lower(field.name_string())] = std::string(field.value());
  return r;
}

bool key_matches(const std::string& given, const std::string& key) {
  // Constant time in the key's length, so response timing does not leak a prefix match.
  unsigned diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) diff |= key[i] ^ (i < given.size() ? given[i] : 0);
  return diff == 0;
}

// "application/json", with any parameters ("; charset=utf-8").
bool is_json_media_type(std::string_view content_type) {
  return lower(trim(content_type.substr(0, content_type.find(';')))) == "application/json";
}

HttpResponse refusal(int status, const std::string& message, std::optional<std::string> code = std::nullopt,
                     ErrorBody body = error_json) {
  return error_response(ApiError(status, message, status >= 500 ? "server_error" : "invalid_request_error",
                                 std::nullopt, std::move(code)), body);
}

// The error shape of the route a request head matched (OpenAI's when none did).
ErrorBody errors_of(const Router::Match& route) {
  return route.options != nullptr ? route.options->error_body : error_json;
}

// State shared between a session and its connection watcher (both on the session's strand).
struct Watch {
  bool active = true;
  bool half_close_ok = false;   // the request said it sends nothing more (Connection: close)
  size_t buffer_limit = 0;      // how much of a pipelined next request may be read meanwhile
  std::shared_ptr<DisconnectSignal> signal = std::make_shared<DisconnectSignal>();
};

// The response's own fields. A field named twice is set once, but `Vary` lists add up: CORS's
// `Vary: Origin` joins a file's `Vary: Accept-Encoding` rather than replacing it.
void set_fields(http::fields& out, const HttpResponse& res) {
  for (const auto& [name, value] : res.headers) {
    const auto had = out.find(name);
    if (had != out.end() && beast::iequals(name, "vary")) {
      out.set(name, std::string(had->value()) + ", " + value);
    } else {
      out.set(name, value);
    }
  }
}

// The response head and body as a Beast message. Built outside the coroutine and kept on the
// heap: GCC 12 mis-destroys some Beast messages that live in a coroutine frame.
std::unique_ptr<http::response<http::string_body>> to_message(HttpResponse& res, unsigned version,
                                                              bool keep_alive) {
  auto out = std::make_unique<http::response<http::string_body>>(static_cast<http::status>(res.status), version);
  if (!res.content_type.empty()) out->set(http::field::content_type, res.content_type);
  set_fields(*out, res);
  out->keep_alive(keep_alive);
  out->body() = std::move(res.body);
  out->prepare_payload();
  return out;
}

// The head a GET would have had, for a HEAD request: its Content-Length is the body's, unsent.
std::unique_ptr<http::response<http::empty_body>> to_head_only(const HttpResponse& res, unsigned version,
                                                               bool keep_alive) {
  auto out = std::make_unique<http::response<http::empty_body>>(static_cast<http::status>(res.status), version);
  if (!res.content_type.empty()) out->set(http::field::content_type, res.content_type);
  set_fields(*out, res);
  out->keep_alive(keep_alive);
  if (res.stream) {
    out->chunked(true);
  } else {
    out->content_length(res.body.size());
  }
  return out;
}

std::unique_ptr<http::response<http::empty_body>> to_stream_head(const HttpResponse& res, unsigned version,
                                                                 bool keep_alive) {
  auto head = std::make_unique<http::response<http::empty_body>>(static_cast<http::status>(res.status), version);
  head->set(http::field::content_type, res.content_type);
  head->set(http::field::cache_control, "no-cache");
  head->set("X-Accel-Buffering", "no");  // tell nginx-like proxies not to buffer events
  set_fields(*head, res);
  head->keep_alive(keep_alive);
  head->chunked(true);
  return head;
}

// A session as the connection cap sees it: while it waits for a request head it holds no work
// and may be closed to make room for a new connection.
struct Presence {
  net::any_io_executor executor;
  beast::tcp_stream* stream = nullptr;  // strand only; null once the session has ended
  bool evicted = false;                 // strand only
  std::atomic<bool> idle{false};
  std::atomic<bool> evicting{false};
  std::atomic<Clock::rep> idle_since{0};
};

// Every open session, for choosing which idle one to close at the connection cap.
// Thread-safety: all methods may be called from any thread.
class Sessions {
 public:
  using Entry = std::list<std::shared_ptr<Presence>>::iterator;

  Entry enter(std::shared_ptr<Presence> p) {
    std::lock_guard lock(mu_);
    return sessions_.insert(sessions_.end(), std::move(p));
  }
  void leave(Entry e) {
    std::lock_guard lock(mu_);
    sessions_.erase(e);
  }
  // Closes the session that has waited longest for a request head. False when none waits.
  bool evict_one() {
    std::shared_ptr<Presence> victim;
    {
      std::lock_guard lock(mu_);
      for (const auto& p : sessions_) {
        if (!p->idle || p->evicting) continue;
        if (!victim || p->idle_since < victim->idle_since) victim = p;
      }
      if (!victim) return false;
      victim->evicting = true;
    }
    net::post(victim->executor, [victim] {
      if (victim->stream == nullptr || !victim->idle) {
        victim->evicting = false;  // it started a request meanwhile: keep it
        return;
      }
      victim->evicted = true;
      beast::error_code ec;
      victim->stream->socket().close(ec);
    });
    return true;
  }

 private:
  std::mutex mu_;
  std::list<std::shared_ptr<Presence>> sessions_;
};

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
  Sessions sessions;

  net::awaitable<void> accept_loop();
  net::awaitable<void> session(tcp::socket socket);
  net::awaitable<bool> exchange(beast::tcp_stream& stream, beast::flat_buffer& buffer, Parser& parser,
                                beast::error_code head_error);
  net::awaitable<void> refuse(tcp::socket socket);
  net::awaitable<void> watch(beast::tcp_stream& stream, beast::flat_buffer& buffer, std::shared_ptr<Watch> w);
  std::optional<HttpResponse> screen(const HttpRequest& req, const Router::Match& route,
                                     std::optional<uint64_t> content_length) const;
  std::optional<HttpResponse> check_access(const HttpRequest& req, const Router::Match& route) const;
  size_t body_limit(const Router::Match& route) const;
  void add_cors(const HttpRequest& req, HttpResponse& res) const;
  net::awaitable<bool> write(beast::tcp_stream& stream, HttpResponse& res, unsigned version,
                             bool keep_alive, bool head_only, DisconnectSignal& disconnect);
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
    // At the cap, a connection that is only waiting makes room; a client that opens sockets and
    // sends nothing cannot lock the others (or the health probe) out.
    if (active.load() >= opt.max_connections && !sessions.evict_one()) {
      net::co_spawn(executor, refuse(std::move(socket)), net::detached);
    } else {
      net::co_spawn(executor, session(std::move(socket)), net::detached);
    }
  }
}

// Over the connection cap with no idle connection to close: answer 503 and close, without
// reading the request.
net::awaitable<void> HttpServer::Impl::refuse(tcp::socket socket) {
  auto self = shared_from_this();
  beast::tcp_stream stream(std::move(socket));
  ApiError busy(503, "too many connections; retry later", "server_error", std::nullopt, "too_many_connections");
  busy.retry_after = 1;
  HttpResponse res = error_response(busy);
  auto out = to_message(res, 11, false);
  stream.expires_after(std::chrono::seconds(5));
  beast::error_code ec;
  co_await http::async_write(stream, *out, net::redirect_error(kAwait, ec));
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

// Watches the connection while a response is computed (see the class contract).
net::awaitable<void> HttpServer::Impl::watch(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                             std::shared_ptr<Watch> w) {
  for (;;) {
    beast::error_code ec;
    co_await stream.socket().async_wait(tcp::socket::wait_read, net::redirect_error(kAwait, ec));
    if (!w->active || ec) co_return;  // response done (socket may be gone) or wait cancelled
    if (buffer.size() >= w->buffer_limit) co_return;  // a whole next request is waiting already
    const auto space = buffer.prepare(std::min<size_t>(w->buffer_limit - buffer.size(), 64 << 10));
    const ssize_t n = ::recv(stream.socket().native_handle(), space.data(), space.size(), MSG_DONTWAIT);
    if (n > 0) {
      buffer.commit(static_cast<size_t>(n));  // a pipelined request: read after this response
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n < 0) {
      w->signal->fire(DisconnectSignal::Kind::kReset);
    } else if (!w->half_close_ok) {
      // A keep-alive client stopped sending: gone, or half-closed. Work nobody may read is
      // cancelled; a stream goes on until a write fails.
      w->signal->fire(DisconnectSignal::Kind::kEndOfStream);
    }
    co_return;  // after the end of the stream only writes can tell more
  }
}

std::optional<HttpResponse> HttpServer::Impl::check_access(const HttpRequest& req,
                                                           const Router::Match& route) const {
  if (req.method == "OPTIONS" && !opt.cors_origins.empty()) {
    HttpResponse r;
    r.status = 204;
    r.content_type.clear();
    r.headers = {{"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
                 {"Access-Control-Allow-Headers",
                  "Authorization, Content-Type, X-Api-Key, Anthropic-Version, Anthropic-Beta"},
                 {"Access-Control-Max-Age", "86400"}};
    return r;
  }
  if (opt.api_keys.empty() || (route.options != nullptr && route.options->public_route)) return std::nullopt;
  // Authorization: Bearer (OpenAI's clients) or x-api-key (Anthropic's)
  const std::string auth = req.header("authorization");
  const std::string prefix = "Bearer ";
  const std::string x_api_key = req.header("x-api-key");
  std::vector<std::string> given;
  if (auth.rfind(prefix, 0) == 0) given.push_back(auth.substr(prefix.size()));
  if (!x_api_key.empty()) given.push_back(x_api_key);
  for (const std::string& g : given) {
    for (const std::string& key : opt.api_keys) {
      if (key_matches(g, key)) return std::nullopt;
    }
  }
  const bool none = auth.empty() && x_api_key.empty();
  HttpResponse r = refusal(401, none ? "missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'"
                                     : "invalid API key",
                           "invalid_api_key", errors_of(route));
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

size_t HttpServer::Impl::body_limit(const Router::Match& route) const {
  if (route.options != nullptr && route.options->body_limit) return std::min(*route.options->body_limit, opt.body_limit);
  return opt.body_limit;
}

// What is answered from the head alone: CORS preflight, 401, 404/405, 415, 413, 417.
std::optional<HttpResponse> HttpServer::Impl::screen(const HttpRequest& req, const Router::Match& route,
                                                     std::optional<uint64_t> content_length) const {
  if (std::optional<HttpResponse> denied = check_access(req, route)) return denied;
  if (route.status == 405) return refusal(405, "method " + req.method + " not allowed on this path");
  if (route.status != 200) return refusal(404, "no such endpoint: " + req.method + " " + escape_for_log(req.path, 200), "not_found");
  if (route.options->json_body && !is_json_media_type(req.header("content-type"))) {
    const std::string given = req.header("content-type");
    return refusal(415, "this endpoint takes a JSON body: send 'Content-Type: application/json'" +
                               (given.empty() ? std::string(" (none was sent)") : " (found '" + escape_for_log(given, 100) + "')"),
                      "unsupported_media_type", errors_of(route));
  }
  const size_t limit = body_limit(route);
  if (content_length && *content_length > limit) {
    return refusal(413, "request body of " + std::to_string(*content_length) + " bytes is over this endpoint's limit of " +
                               std::to_string(limit) + " bytes", "body_too_large", errors_of(route));
  }
  const std::string expect = lower(trim(req.header("expect")));
  if (!expect.empty() && expect != "100-continue") {
    return refusal(417, "unsupported Expect: only '100-continue' is understood", std::nullopt, errors_of(route));
  }
  return std::nullopt;
}

void HttpServer::Impl::add_cors(const HttpRequest& req, HttpResponse& res) const {
  const std::string origin = req.header("origin");
  if (origin.empty() || opt.cors_origins.empty()) return;
  for (const std::string& allowed : opt.cors_origins) {
    if (allowed == "*" || allowed == origin) {
      res.headers.emplace_back("Access-Control-Allow-Origin", allowed == "*" ? "*" : origin);
      res.headers.emplace_back("Access-Control-Expose-Headers", kIgnoredFieldsHeader);  // for page scripts
      res.headers.emplace_back("Vary", "Origin");
      return;
    }
  }
}

// Writes a whole response, or a chunked event stream; only its head for a HEAD request (a stream
// is cancelled unread). Returns false if the connection broke.
net::awaitable<bool> HttpServer::Impl::write(beast::tcp_stream& stream, HttpResponse& res,
                                             unsigned version, bool keep_alive, bool head_only,
                                             DisconnectSignal& disconnect) {
  beast::error_code ec;
  if (head_only) {
    if (res.stream) res.stream->cancel();
    auto out = to_head_only(res, version, keep_alive);
    stream.expires_after(opt.write_timeout);
    co_await http::async_write(stream, *out, net::redirect_error(kAwait, ec));
    co_return !ec;
  }
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
  disconnect.subscribe([src = res.stream] { src->cancel(); }, false);
  while (!ec) {
    std::optional<std::string> chunk = co_await res.stream->next();
    if (!chunk) break;
    if (chunk->empty()) continue;
    stream.expires_after(opt.write_timeout);
    co_await net::async_write(stream, http::make_chunk(net::buffer(*chunk)),
                              net::redirect_error(kAwait, ec));
  }
  if (ec) {
    disconnect.fire(DisconnectSignal::Kind::kReset);
    co_return false;
  }
  stream.expires_after(opt.write_timeout);
  co_await net::async_write(stream, http::make_chunk_last(), net::redirect_error(kAwait, ec));
  co_return !ec;
}

// One request and its response, once its head has been read (or failed to be: `head_error`).
// Returns whether the connection may carry another request.
net::awaitable<bool> HttpServer::Impl::exchange(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                                Parser& parser, beast::error_code head_error) {
  const auto start = Clock::now();
  HttpRequest req;
  HttpResponse res;
  unsigned version = 11;
  bool keep_alive = false;
  auto watch_state = std::make_shared<Watch>();
  RequestContext ctx{stream.get_executor(), watch_state->signal, std::make_shared<RequestStats>()};
  if (head_error) {
    const bool too_big = head_error == http::error::header_limit;
    res = refusal(too_big ? 431 : 400, (too_big ? "request head too large: " : "malformed HTTP request: ") +
                                              head_error.message());
  } else {
    req = request_head(parser.get());
    version = parser.get().version();
    keep_alive = parser.get().keep_alive();
    const Router::Match route = router.find(req.method, req.path);
    const auto length = parser.content_length();
    if (std::optional<HttpResponse> early = screen(req, route, length ? std::optional<uint64_t>(*length) : std::nullopt)) {
      res = std::move(*early);
      if (!parser.is_done()) keep_alive = false;  // its body was never read: the stream can't go on
    } else {
      beast::error_code ec;
      if (!parser.is_done() && version == 11 && !req.header("expect").empty()) {
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        stream.expires_after(opt.write_timeout);
        co_await net::async_write(stream, net::buffer(kContinue), net::redirect_error(kAwait, ec));
      }
      parser.body_limit(body_limit(route));  // a chunked body is checked as it arrives
      stream.expires_after(opt.read_timeout);
      if (!ec) co_await http::async_read(stream, buffer, parser, net::redirect_error(kAwait, ec));
      if (ec == http::error::body_limit) {
        res = refusal(413, "request body is over this endpoint's limit of " + std::to_string(body_limit(route)) +
                                  " bytes", "body_too_large", errors_of(route));
        keep_alive = false;
      } else if (ec) {
        co_return false;  // the client went away or stalled mid-body: nobody to answer
      } else {
        req.body = std::move(parser.get().body());
        watch_state->half_close_ok = !keep_alive;
        watch_state->buffer_limit = opt.header_limit + opt.body_limit;
        stream.expires_never();
        net::co_spawn(stream.get_executor(), watch(stream, buffer, watch_state), net::detached);
        res = co_await router.dispatch(req, ctx);
      }
    }
  }
  add_cors(req, res);
  const bool ok = co_await write(stream, res, version, keep_alive, req.method == "HEAD", *watch_state->signal);
  watch_state->active = false;
  beast::error_code ignored;
  stream.socket().cancel(ignored);  // ends the watcher's pending wait
  if (log) {
    AccessRecord rec{req.method, req.path, ctx.stats->endpoint.empty() ? "other" : ctx.stats->endpoint,
                     res.status, std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                     *ctx.stats};
    log(rec);
  }
  co_return ok && keep_alive && !head_error;
}

net::awaitable<void> HttpServer::Impl::session(tcp::socket socket) {
  auto self = shared_from_this();
  ++active;
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  auto presence = std::make_shared<Presence>();
  presence->executor = stream.get_executor();
  presence->stream = &stream;
  const Sessions::Entry entry = sessions.enter(presence);
  for (bool first = true;; first = false) {
    auto parser = std::make_unique<Parser>();  // heap: see to_message
    // The route's limit is checked (and set) once the head is read. Not boost::none: Beast 1.74
    // compares Content-Length against the optional and takes "none" for 0.
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser->header_limit(static_cast<std::uint32_t>(opt.header_limit));
    presence->idle_since = Clock::now().time_since_epoch().count();
    presence->idle = true;
    stream.expires_after(first ? opt.header_timeout : opt.idle_timeout);
    beast::error_code ec;
    co_await http::async_read_header(stream, buffer, *parser, net::redirect_error(kAwait, ec));
    presence->idle = false;
    if (presence->evicted || ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::eof || ec == net::error::operation_aborted) {
      break;
    }
    const bool more = co_await exchange(stream, buffer, *parser, ec);
    if (!more) break;
  }
  presence->stream = nullptr;
  sessions.leave(entry);
  beast::error_code ec;
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
