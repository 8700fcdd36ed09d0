// HTTPS through libcurl: a small JSON GET and a resumable download to a file (and, through the
// same handle, fetch.h's bounded GET of a client's http(s) URL). Certificate checks are always on
// (the system's CAs, or `ca_file` when given); the schemes of `protocols` only, redirects included
// (model downloads: https, at most 10 redirects); HTTPS_PROXY / NO_PROXY are honoured by libcurl.
// The bearer token goes to the first host only: libcurl drops Authorization when a redirect
// leaves that host. Thread-safe: each call uses its own curl handle.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace hub::detail {

struct HttpOptions {
  std::string ca_file;
  std::string token;
  long low_speed_seconds = 60;
  const std::atomic<bool>* cancel = nullptr;
  // The URL's and every redirect's scheme must be one of these (libcurl's comma-separated list).
  // Models come over https only; fetch.h's client URLs may also be http.
  const char* protocols = "https";
  long max_redirects = 10;
  long timeout_seconds = 0;  // the whole transfer, redirects included (0: no limit but low_speed_seconds)
};

// A transfer that failed. `keep_partial`: the partial file may be resumed later (network cuts,
// cancel); otherwise (disk errors, a server sending more than announced) it must be deleted.
struct TransferError {
  std::string message;
  bool keep_partial = true;
};

struct Reply {
  long status = 0;
  std::string body;       // at most the limit given
  std::string next_page;  // the URL of a `Link: <URL>; rel="next"` header, or ""
};

// GET `url`; the body is cut off at max_bytes (then an error). Throws HubError on transport errors.
Reply http_get(const std::string& url, const HttpOptions& options, size_t max_bytes);

// Appends `url`'s bytes from the partial file's current size (HTTP Range), reconnecting up to
// `retries` times after a cut. `expected` (0 = unknown) bounds what is accepted. Calls
// on_bytes(done, total) as data arrives. Throws TransferError; HTTP errors carry `what` (the repo
// or file) in their message.
void download(const std::string& url, const std::string& part_path, uint64_t expected, const HttpOptions& options,
              int retries, const std::string& what, const std::function<void(uint64_t, uint64_t)>& on_bytes);

// "HTTP 401 from URL ..." with what to do about it (HF_TOKEN, a missing repo or file).
std::string status_message(long status, const std::string& url, const std::string& what, const std::string& body,
                           bool have_token);

}  // namespace hub::detail
