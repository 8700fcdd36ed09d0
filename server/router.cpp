#include "server/router.h"

#include <nlohmann/json.hpp>

#include "server/api/api_error.h"
#include "server/api/request_json.h"
#include "server/api/url.h"

namespace server {

HttpResponse error_response(const ApiError& e, ErrorBody body) {
  HttpResponse r = HttpResponse::json(e.status(), dump_json((body != nullptr ? body : error_json)(e)));
  if (e.retry_after) r.headers.emplace_back("Retry-After", std::to_string(*e.retry_after));
  return r;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    const size_t j = path.find('/', i);
    const size_t end = j == std::string::npos ? path.size() : j;
    if (end > i) out.push_back(path.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

namespace {

bool is_param(const std::string& s) { return s.size() > 2 && s.front() == '{' && s.back() == '}'; }
bool is_rest_param(const std::string& s) { return is_param(s) && s[s.size() - 2] == '+'; }

std::string param_name(const std::string& s) {
  return s.substr(1, s.size() - (is_rest_param(s) ? 3 : 2));
}

// pattern[pi..] against path[si..]; a rest parameter tries every length from 1 up (patterns
// have at most one, and few segments, so this stays tiny).
bool match_from(const std::vector<std::string>& pattern, size_t pi, const std::vector<std::string>& path,
                size_t si, std::map<std::string, std::string>& params) {
  if (pi == pattern.size()) return si == path.size();
  if (si == path.size()) return false;
  const std::string& p = pattern[pi];
  if (is_rest_param(p)) {
    std::string joined;
    for (size_t end = si + 1; end <= path.size(); ++end) {
      if (end > si + 1) joined += '/';
      joined += path[end - 1];
      if (match_from(pattern, pi + 1, path, end, params)) {
        params[param_name(p)] = joined;
        return true;
      }
    }
    return false;
  }
  if (is_param(p)) {
    if (!match_from(pattern, pi + 1, path, si + 1, params)) return false;
    params[param_name(p)] = path[si];
    return true;
  }
  return p == path[si] && match_from(pattern, pi + 1, path, si + 1, params);
}

}  // namespace

bool match_segments(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
                    std::map<std::string, std::string>& params) {
  params.clear();
  return match_from(pattern, 0, path, 0, params);
}

void Router::add(std::string method, std::string pattern, Handler handler, RouteOptions options) {
  Route r{std::move(method), pattern, split_path(pattern), std::move(handler), options, 0};
  for (const std::string& s : r.segments) r.literals += is_param(s) ? 0 : 1;
  routes_.push_back(std::move(r));
}

Router::Match Router::find(const std::string& method, const std::string& raw_path) const {
  std::vector<std::string> path = split_path(raw_path);
  for (std::string& s : path) s = url_decode(s, false);
  Match best;
  best.status = 404;
  const Route* chosen = nullptr;
  std::map<std::string, std::string> params;
  // HEAD is answered by the GET route where there is no HEAD route of its own (RFC 9110 9.3.2):
  // the server sends the head it returns, without its body.
  const auto serves = [&method](const Route& route) {
    return route.method == method || (method == "HEAD" && route.method == "GET");
  };
  for (const Route& route : routes_) {
    if (!match_segments(route.segments, path, params)) continue;
    if (!serves(route)) {
      if (chosen == nullptr) best.status = 405;
      continue;
    }
    if (chosen == nullptr || route.literals > chosen->literals ||
        (route.literals == chosen->literals && route.method == method && chosen->method != method)) {
      chosen = &route;
      best.params = params;
    }
  }
  if (chosen != nullptr) {
    best.status = 200;
    best.options = &chosen->options;
    best.endpoint = chosen->pattern;
    best.handler = &chosen->handler;
  }
  return best;
}

net::awaitable<HttpResponse> Router::dispatch(HttpRequest& request, RequestContext& context) const {
  Match m = find(request.method, request.path);
  if (m.handler == nullptr) {
    if (m.status == 405) {
      co_return error_response(
          ApiError(405, "method " + excerpt(request.method) + " not allowed on " + excerpt(request.path, 200)));
    }
    co_return error_response(ApiError(404, "no such endpoint: " + excerpt(request.method) + " " + excerpt(request.path, 200),
                                      "invalid_request_error", std::nullopt, "not_found"));
  }
  context.stats->endpoint = m.endpoint;
  request.params = std::move(m.params);
  // co_await may not appear in a catch block, so the error is carried out of it.
  std::optional<ApiError> failure;
  try {
    HttpResponse response = co_await (*m.handler)(request, context);  // see respond()
    co_return response;
  } catch (const ApiError& e) {
    failure = e;
  } catch (const nlohmann::json::parse_error& e) {
    failure = ApiError(400, std::string("request body is not valid JSON: ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    failure = ApiError(400, std::string("invalid request: ") + e.what());
  } catch (const std::exception& e) {
    failure = ApiError(500, std::string("internal error: ") + e.what(), "server_error");
  }
  co_return error_response(*failure, m.options->error_body);
}

}  // namespace server
