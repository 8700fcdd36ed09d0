// libcurl transfers (see http.h).
#include "server/hub/http.h"

#include <strings.h>

#include <mutex>

#include "server/hub/curl_handle.h"

#include "server/hub/hub.h"

namespace hub::detail {

namespace {

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::atomic<bool>*>(user);
  return cancel != nullptr && cancel->load() ? 1 : 0;
}

void check_token(const std::string& token) {
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) throw HubError("HF_TOKEN contains characters not allowed in an HTTP header");
  }
}

}  // namespace

std::unique_ptr<Handle> open_handle(const std::string& url, const HttpOptions& o) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  auto h = std::make_unique<Handle>();
  h->curl.reset(curl_easy_init());
  if (!h->curl) throw HubError("libcurl: cannot create a handle");
  CURL* c = h->curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, o.protocols);
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, o.protocols);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, o.max_redirects);
  h->protocols = o.protocols;
  h->max_redirects = o.max_redirects;
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!o.ca_file.empty()) {  // this CA file only: no system bundle, no system CA folder
    curl_easy_setopt(c, CURLOPT_CAINFO, o.ca_file.c_str());
    curl_easy_setopt(c, CURLOPT_CAPATH, nullptr);
  }
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  if (o.timeout_seconds > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT, o.timeout_seconds);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o.low_speed_seconds);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "ggufd/" GGUFD_VERSION);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->error);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, o.cancel);
  h->cancel = o.cancel;
  if (!o.token.empty()) {
    check_token(o.token);
    h->headers.reset(curl_slist_append(nullptr, ("Authorization: Bearer " + o.token).c_str()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers.get());
  }
  return h;
}

namespace {

// "https", "http or https": the handle's schemes for a message.
std::string schemes_text(const Handle& h) {
  std::string out;
  for (const char* p = h.protocols; *p != '\0'; ++p) out += *p == ',' ? std::string(" or ") : std::string(1, *p);
  return out;
}

}  // namespace

std::string curl_message(CURLcode rc, const Handle& h, const std::string& url) {
  const std::string detail = h.error[0] != '\0' ? h.error : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_TOO_MANY_REDIRECTS:
      return "too many redirects (more than " + std::to_string(h.max_redirects) + ") fetching " + url;
    case CURLE_PEER_FAILED_VERIFICATION:
      return "TLS certificate check failed for " + url + ": " + detail + " (--ca-file FILE trusts a private CA)";
    case CURLE_UNSUPPORTED_PROTOCOL:
      return "refused a URL or redirect that is not " + schemes_text(h) + " while fetching " + url;
    default: return "cannot fetch " + url + ": " + detail;
  }
}

bool transient(CURLcode rc) {
  return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING ||
         rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_COULDNT_CONNECT || rc == CURLE_HTTP2 ||
         rc == CURLE_HTTP2_STREAM;
}

namespace {

// `Link: <https://...>; rel="next"` (the Hub's pagination of file lists).
size_t on_header(char* data, size_t size, size_t n, void* user) {
  const std::string line(data, size * n);
  if (line.size() > 5 && strncasecmp(line.c_str(), "link:", 5) == 0 && line.find("rel=\"next\"") != std::string::npos) {
    const size_t open = line.find('<'), close = line.find('>');
    if (open != std::string::npos && close != std::string::npos && close > open) {
      *static_cast<std::string*>(user) = line.substr(open + 1, close - open - 1);
    }
  }
  return size * n;
}

size_t append_body(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<std::pair<Reply*, size_t>*>(user);
  const size_t len = size * n;
  if (r->first->body.size() + len > r->second) return 0;
  r->first->body.append(data, len);
  return len;
}

}  // namespace

std::string status_message(long status, const std::string& url, const std::string& what, const std::string& body,
                           bool have_token) {
  std::string m = "HTTP " + std::to_string(status) + " from " + url;
  if (status == 401 || status == 403) {
    m += ": access to " + what + " denied; the repo is gated or private: " +
         (have_token ? std::string("HF_TOKEN is set but was refused (does it have access?)")
                     : std::string("set HF_TOKEN to a token that has access"));
  } else if (status == 404) {
    m += ": " + what + " not found";
  } else if (!body.empty()) {
    m += ": " + body.substr(0, 200);
  }
  return m;
}

Reply http_get(const std::string& url, const HttpOptions& options, size_t max_bytes) {
  auto h = open_handle(url, options);
  Reply reply;
  std::pair<Reply*, size_t> sink{&reply, max_bytes};
  curl_easy_setopt(h->curl.get(), CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h->curl.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h->curl.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h->curl.get(), CURLOPT_HEADERDATA, &reply.next_page);
  const CURLcode rc = curl_easy_perform(h->curl.get());
  if (rc == CURLE_WRITE_ERROR) {
    throw HubError("answer from " + url + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
  if (rc == CURLE_ABORTED_BY_CALLBACK) throw HubError("cancelled");
  if (rc != CURLE_OK) throw HubError(curl_message(rc, *h, url));
  curl_easy_getinfo(h->curl.get(), CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

}  // namespace hub::detail
