// Maps method + path to a handler, and is the one place exceptions become error JSON.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "server/http.h"

namespace server {

using Handler = std::function<net::awaitable<HttpResponse>(HttpRequest&, RequestContext&)>;

// Routes requests by method and path pattern ("/v1/models/{id}/metadata": `{name}` matches one
// path segment and lands in HttpRequest::params).
//
// dispatch() never throws: ApiError becomes its status and OpenAI-shaped body; malformed JSON and
// type errors from nlohmann become 400; anything else is a server bug and becomes 500.
// Thread-safety: add() during set-up only; dispatch() from any number of sessions concurrently.
class Router {
 public:
  void add(std::string method, std::string pattern, Handler handler);
  net::awaitable<HttpResponse> dispatch(HttpRequest& request, RequestContext& context) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
  };
  bool match(const Route& route, const std::vector<std::string>& path, HttpRequest& request) const;
  std::vector<Route> routes_;
};

// Splits "/a/b/c" into {"a","b","c"} (empty segments dropped).
std::vector<std::string> split_path(const std::string& path);

}  // namespace server
