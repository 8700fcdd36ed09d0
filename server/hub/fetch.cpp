// A client's URL through the hub's libcurl handle, within limits (see fetch.h).
#include "server/hub/fetch.h"

#include <arpa/inet.h>
#include <strings.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <string_view>

#include "server/hub/curl_handle.h"
#include "server/hub/hub.h"

namespace hub {

namespace {

struct Transfer {
  CURL* curl = nullptr;
  size_t max_bytes = 0;
  Fetched* out = nullptr;
  long refused_status = 0;  // a non-2xx answer whose body was not read
  bool too_large = false;
  std::string content_length;  // the last answer's Content-Length header ("" when none)
  std::string refused_address;  // a connection refused by public_only: "127.0.0.1, a loopback address"
};

// Keeps the Content-Length of the answer being read (a redirect's answer comes first: each status
// line starts over), for the message of a size refused before the body.
size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) t->content_length.clear();
  if (line.size() > 15 && strncasecmp(line.data(), "content-length:", 15) == 0) {
    const size_t from = line.find_first_of("0123456789", 15);
    const size_t to = line.find_first_not_of("0123456789", from);
    if (from != std::string_view::npos) t->content_length = std::string(line.substr(from, std::min<size_t>(to - from, 20)));
  }
  return size * n;
}

// The body into out->body, up to max_bytes; returning less than given ends the transfer.
size_t on_data(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) {  // an error page: nothing of it is wanted
    t->refused_status = status;
    return 0;
  }
  if (t->out->body.size() + len > t->max_bytes) {
    t->too_large = true;
    return 0;
  }
  t->out->body.append(data, len);
  return len;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancelled = static_cast<const std::function<bool()>*>(user);
  return *cancelled && (*cancelled)() ? 1 : 0;
}

// The kind of a non-public IPv4 address (host byte order), "" for a public one.
std::string v4_kind(uint32_t a) {
  const auto in = [a](uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
  if (in(0x7f000000, 8)) return "loopback";
  if (in(0x0a000000, 8) || in(0xac100000, 12) || in(0xc0a80000, 16)) return "private";
  if (in(0xa9fe0000, 16)) return "link-local";
  if (in(0x64400000, 10)) return "shared (carrier-grade NAT)";
  if (in(0x00000000, 8)) return "unspecified";
  if (in(0xe0000000, 4)) return "multicast";
  if (in(0xf0000000, 4) || in(0xc0000000, 24) || in(0xc0000200, 24) || in(0xc6336400, 24) || in(0xcb007100, 24) ||
      in(0xc6120000, 15)) {
    return "reserved";
  }
  return "";
}

// Makes the socket of a connection unless public_only refuses its address (CURL_SOCKET_BAD: curl
// tries the name's next address, then fails with CURLE_COULDNT_CONNECT).
curl_socket_t on_open_socket(void* user, curlsocktype, curl_sockaddr* address) {
  auto* t = static_cast<Transfer*>(user);
  char text[INET6_ADDRSTRLEN] = {};
  if (address->family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address->addr)->sin_addr, text, sizeof text);
  } else if (address->family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address->addr)->sin6_addr, text, sizeof text);
  }
  const std::string kind = address->family == AF_INET || address->family == AF_INET6 ? non_public_kind(text) : "unparsable";
  if (!kind.empty()) {
    t->refused_address = std::string(text[0] != '\0' ? text : "an address") + ", " +
                         (kind == "unspecified" || kind == "unparsable" ? "an " : "a ") + kind + " address";
    return CURL_SOCKET_BAD;
  }
  return socket(address->family, address->socktype, address->protocol);
}

using Kind = FetchError::Kind;

}  // namespace

std::string non_public_kind(const std::string& ip) {
  in_addr v4{};
  if (inet_pton(AF_INET, ip.c_str(), &v4) == 1) return v4_kind(ntohl(v4.s_addr));
  in6_addr v6{};
  if (inet_pton(AF_INET6, ip.c_str(), &v6) != 1) return "unparsable";
  const uint8_t* b = v6.s6_addr;
  const auto zeros = [b](int from, int to) { return std::all_of(b + from, b + to, [](uint8_t x) { return x == 0; }); };
  const auto v4_at_12 = [b] { return uint32_t{b[12]} << 24 | uint32_t{b[13]} << 16 | uint32_t{b[14]} << 8 | b[15]; };
  if (zeros(0, 15) && b[15] == 1) return "loopback";
  if (zeros(0, 16)) return "unspecified";
  if (zeros(0, 10) && b[10] == 0xff && b[11] == 0xff) return v4_kind(v4_at_12());  // ::ffff:a.b.c.d
  if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zeros(4, 12)) return v4_kind(v4_at_12());  // NAT64
  if (zeros(0, 12)) return "reserved";  // ::a.b.c.d, IPv4-compatible (deprecated)
  if ((b[0] & 0xfe) == 0xfc) return "private";  // fc00::/7, unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";  // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "private";  // fec0::/10, site-local (deprecated)
  if (b[0] == 0xff) return "multicast";
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return "reserved";  // 2001:db8::/32, documentation
  if (b[0] == 0x01 && zeros(1, 8)) return "reserved";  // 100::/64, discard
  return "";
}

Fetched fetch(const std::string& url, const FetchOptions& options) {
  detail::HttpOptions o;
  o.protocols = "http,https";
  o.max_redirects = options.max_redirects;
  o.timeout_seconds = options.timeout_seconds;
  o.low_speed_seconds = options.timeout_seconds;  // the total limit decides; this never fires first
  std::unique_ptr<detail::Handle> h;
  try {
    h = detail::open_handle(url, o);
  } catch (const HubError& e) {
    throw FetchError(Kind::kNetwork, e.what());
  }
  CURL* c = h->curl.get();
  Fetched out;
  Transfer t{c, options.max_bytes, &out};
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_bytes));
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &options.cancelled);
  if (options.public_only) {
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &t);
  }
  const CURLcode rc = curl_easy_perform(c);
  if (!t.refused_address.empty() && (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_PROXY)) {
    throw FetchError(Kind::kNotPublic, "refused to connect to " + t.refused_address);
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  const std::string limit = std::to_string(options.max_bytes);
  switch (rc) {
    case CURLE_ABORTED_BY_CALLBACK: throw FetchError(Kind::kCancelled, "cancelled");
    case CURLE_OPERATION_TIMEDOUT:
      throw FetchError(Kind::kTimeout, "no complete answer within " + std::to_string(options.timeout_seconds) + " s");
    case CURLE_TOO_MANY_REDIRECTS:
      throw FetchError(Kind::kRedirects, "more than " + std::to_string(options.max_redirects) + " redirects");
    case CURLE_UNSUPPORTED_PROTOCOL:
      throw FetchError(Kind::kScheme, "refused a URL or redirect that is not http or https");
    default: break;
  }
  if (t.refused_status != 0 || (status != 0 && (status < 200 || status > 299))) {
    throw FetchError(Kind::kStatus, "HTTP " + std::to_string(t.refused_status != 0 ? t.refused_status : status));
  }
  if (rc == CURLE_FILESIZE_EXCEEDED) {
    const std::string announced = t.content_length.empty() ? "more" : t.content_length;
    throw FetchError(Kind::kTooLarge, "the answer announces " + announced + " bytes (Content-Length), more than " + limit);
  }
  if (t.too_large) throw FetchError(Kind::kTooLarge, "the answer goes on past " + limit + " bytes");
  if (rc != CURLE_OK) throw FetchError(Kind::kNetwork, h->error[0] != '\0' ? h->error : curl_easy_strerror(rc));
  if (out.body.empty()) throw FetchError(Kind::kNetwork, "the answer is empty");
  const char* type = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type != nullptr) out.content_type = type;
  return out;
}

}  // namespace hub
