// A bounded GET of an address a client named (the server's remote images, --allow-remote-media),
// through the hub's libcurl handle (curl_handle.h): http and https only, the URL and every
// redirect (at most `max_redirects`), certificate checks on with the system's CAs, the whole
// transfer within `timeout_seconds`, and never more than `max_bytes` read: a Content-Length that
// announces more ends the transfer before the body, and a body that grows past the limit
// (chunked, or read until the connection closes) is cut off there. Model downloads keep their own
// rules (https only: http.h).
// Thread-safe: each call has its own handle. Blocking: run it off the IO threads.
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>

namespace hub {

struct FetchOptions {
  size_t max_bytes = 20 << 20;
  long timeout_seconds = 10;
  long max_redirects = 5;
  std::function<bool()> cancelled;  // polled during the transfer (several times a second); true ends it
  // Connect to public addresses only: no loopback, private, link-local, shared (CGNAT),
  // multicast, reserved or unspecified one (IPv4, IPv6 and IPv4 in IPv6), checked on the address
  // each connection is made to, so a name that resolves to one or a redirect to one is refused
  // too; behind a proxy, the proxy's address is the one checked.
  bool public_only = false;
};

struct Fetched {
  std::string body;          // 1..max_bytes bytes of a 2xx answer
  std::string content_type;  // the answer's Content-Type, "" when it sent none
};

// Why a fetch failed. The message says it for a person without the URL (the caller names it):
// "HTTP 404", "the answer announces 104857600 bytes (Content-Length), more than 65536",
// "no complete answer within 10 s", "a redirect to a URL that is not http or https",
// "refused to connect to 127.0.0.1, a loopback address", ...
class FetchError : public std::runtime_error {
 public:
  enum class Kind { kStatus, kTooLarge, kTimeout, kScheme, kRedirects, kCancelled, kNetwork, kNotPublic };
  FetchError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// GETs `url` (http:// or https://) within `options`. Throws FetchError; an empty 2xx answer is a
// kNetwork error ("the answer is empty").
Fetched fetch(const std::string& url, const FetchOptions& options);

// What kind of non-public address `ip` (numeric IPv4 or IPv6) is: "loopback", "private",
// "link-local", ...; "" when it is public. Unparsable text is "unparsable" (refused as well).
std::string non_public_kind(const std::string& ip);

}  // namespace hub
