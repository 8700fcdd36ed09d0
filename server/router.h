// Maps method + path to a handler, and is the one place exceptions become error JSON.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/api/api_error.h"
#include "server/http.h"

namespace server {

using Handler = std::function<net::awaitable<HttpResponse>(HttpRequest&, RequestContext&)>;

// The body of an error response in a dialect's shape (error_json: OpenAI's).
using ErrorBody = nlohmann::json (*)(const ApiError&);

// What the HTTP layer checks from a request's head, before it reads the body, and the shape of
// the route's errors (also of those answered from the head: 401, 413, 415).
struct RouteOptions {
  std::optional<size_t> body_limit;  // bytes; nullopt: the server's --body-limit
  bool json_body = false;            // the body must be Content-Type application/json (else 415)
  bool public_route = false;         // answered without an API key (health probes)
  ErrorBody error_body = error_json;

  static RouteOptions json_api(std::optional<size_t> limit = std::nullopt) { return {limit, true, false}; }
  static RouteOptions open() { return {std::nullopt, false, true}; }
  RouteOptions with_errors(ErrorBody body) const {
    RouteOptions o = *this;
    o.error_body = body;
    return o;
  }
};

// Routes requests by method and path pattern. Patterns are matched segment by segment against
// the raw path (split at '/', then each segment percent-decoded, so "%2F" stays inside its
// segment): "{name}" matches one segment, "{name+}" one or more (joined by '/': model ids such
// as "org/model" work with or without %2F), anything else literally. When several routes match,
// the one with the most literal segments wins. The matched pattern is the request's endpoint name
// (stats, metrics, access log).
//
// dispatch() never throws: ApiError becomes its status and OpenAI-shaped body; malformed JSON and
// type errors from nlohmann become 400; anything else is a server bug and becomes 500.
// Thread-safety: add() during set-up only; find() and dispatch() from any number of sessions.
class Router {
 public:
  void add(std::string method, std::string pattern, Handler handler, RouteOptions options = {});

  // The route for a request head, and its path parameters.
  struct Match {
    int status = 200;                  // 404: no such path; 405: path known, method not
    const RouteOptions* options = nullptr;
    std::string endpoint;              // the pattern
    std::map<std::string, std::string> params;
    const Handler* handler = nullptr;
  };
  Match find(const std::string& method, const std::string& raw_path) const;

  net::awaitable<HttpResponse> dispatch(HttpRequest& request, RequestContext& context) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
    RouteOptions options;
    int literals = 0;
  };
  std::vector<Route> routes_;
};

// Splits "/a/b/c" into {"a","b","c"} (empty segments dropped).
std::vector<std::string> split_path(const std::string& path);

// Matches decoded path segments against pattern segments; fills `params`. See Router.
bool match_segments(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
                    std::map<std::string, std::string>& params);

// The error response for an ApiError (the one place errors become JSON), its body in the
// route's shape.
HttpResponse error_response(const ApiError& e, ErrorBody body = error_json);

}  // namespace server
