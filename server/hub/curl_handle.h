// The hub layer's libcurl handle: configured once for every transfer (http.cpp), shared by the
// GET and the download (download.cpp). Internal to server/hub.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <memory>
#include <string>

#include "server/hub/http.h"

namespace hub::detail {

struct CurlDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// One configured easy handle and what it points to (header list, error buffer). Not shared
// between threads.
struct Handle {
  std::unique_ptr<CURL, CurlDeleter> curl;
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  char error[CURL_ERROR_SIZE] = {};
  const std::atomic<bool>* cancel = nullptr;
  const char* protocols = "https";  // HttpOptions' (for curl_message)
  long max_redirects = 10;
};

// The schemes of options.protocols only (https unless told), certificate checks on, redirects
// followed (≤ options.max_redirects), the whole transfer within options.timeout_seconds when set,
// the token as a bearer header, `cancel` polled. Throws HubError when libcurl cannot start or the
// token is not header-safe.
std::unique_ptr<Handle> open_handle(const std::string& url, const HttpOptions& options);
// What went wrong, for a person: the URL, libcurl's detail, and a hint where there is one.
std::string curl_message(CURLcode rc, const Handle& h, const std::string& url);
// A cut or stalled connection worth retrying with Range.
bool transient(CURLcode rc);

}  // namespace hub::detail
