#include "server/router.h"

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace server {

std::string error_body(int status, const std::string& message, const std::string& type,
                       const std::optional<std::string>& param,
                       const std::optional<std::string>& code) {
  nlohmann::json e = {{"message", message},
                      {"type", type},
                      {"param", param ? nlohmann::json(*param) : nlohmann::json(nullptr)},
                      {"code", code ? nlohmann::json(*code) : nlohmann::json(nullptr)}};
  (void)status;
  return nlohmann::json{{"error", std::move(e)}}.dump(-1, ' ', false,
                                                      nlohmann::json::error_handler_t::replace);
}

namespace {

HttpResponse error_response(const ApiError& e) {
  HttpResponse r = HttpResponse::json(e.status(), error_body(e.status(), e.what(), e.type(),
                                                             e.param(), e.code()));
  if (e.retry_after) r.headers.emplace_back("Retry-After", std::to_string(*e.retry_after));
  return r;
}

}  // namespace

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

void Router::add(std::string method, std::string pattern, Handler handler) {
  routes_.push_back({std::move(method), split_path(pattern), std::move(handler)});
}

bool Router::match(const Route& route, const std::vector<std::string>& path,
                   HttpRequest& request) const {
  if (route.segments.size() != path.size()) return false;
  std::map<std::string, std::string> params;
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string& s = route.segments[i];
    if (s.size() > 2 && s.front() == '{' && s.back() == '}') {
      params[s.substr(1, s.size() - 2)] = path[i];
    } else if (s != path[i]) {
      return false;
    }
  }
  request.params = std::move(params);
  return true;
}

net::awaitable<HttpResponse> Router::dispatch(HttpRequest& request, RequestContext& context) const {
  const std::vector<std::string> path = split_path(request.path);
  const Route* found = nullptr;
  bool path_known = false;
  for (const Route& route : routes_) {
    if (!match(route, path, request)) continue;
    path_known = true;
    if (route.method == request.method) {
      found = &route;
      break;
    }
  }
  if (found == nullptr) {
    if (path_known) {
      co_return error_response(ApiError(405, "method " + request.method + " not allowed on " +
                                                 request.path));
    }
    co_return error_response(ApiError(404, "no such endpoint: " + request.method + " " +
                                               request.path, "invalid_request_error",
                                      std::nullopt, "not_found"));
  }
  // co_await may not appear in a catch block, so the error is carried out of it.
  std::optional<ApiError> failure;
  try {
    HttpResponse response = co_await found->handler(request, context);  // see respond()
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
  co_return error_response(*failure);
}

}  // namespace server
