// A client's URL through the hub's libcurl handle, within limits (see fetch.h).
#include "server/hub/fetch.h"

#include <strings.h>

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

using Kind = FetchError::Kind;

}  // namespace

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
  const CURLcode rc = curl_easy_perform(c);
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
