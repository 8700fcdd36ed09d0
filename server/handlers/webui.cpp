// GET (and HEAD) / and /webui/{file}: the chat page (webui/) and its files, embedded in the binary.
// A browser (Accept: text/html) gets the page at /; every other client gets Ollama's plain-text
// "is running" answer there, which Ollama's clients probe. With --no-webui only that answer stays.
#include "server/api/api_error.h"
#include "server/api/request_json.h"
#include "server/handlers/handlers.h"
#include "webui/assets.h"

namespace server {

namespace {

bool accepts(const HttpRequest& req, std::string_view header, std::string_view token) {
  return req.header(std::string(header)).find(token) != std::string::npos;
}

// The page's own scripts and styles only: model output that slipped past the sanitizer still
// could not run a script or load anything from another host. KaTeX sets inline styles.
constexpr const char* kPagePolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

// The file with its validator: 304 when the browser has it already; gzip when the client takes it.
HttpResponse serve_asset(const HttpRequest& req, const webui::Asset& a) {
  HttpResponse r;
  r.headers = {{"ETag", std::string(a.etag)}, {"Cache-Control", "no-cache"}, {"X-Content-Type-Options", "nosniff"}};
  if (a.path == "index.html") r.headers.emplace_back("Content-Security-Policy", kPagePolicy);
  if (!a.gzip.empty()) r.headers.emplace_back("Vary", "Accept-Encoding");
  if (req.header("if-none-match") == a.etag) {
    r.status = 304;
    r.content_type.clear();
    return r;
  }
  r.content_type = std::string(a.content_type);
  if (!a.gzip.empty() && accepts(req, "accept-encoding", "gzip")) {
    r.headers.emplace_back("Content-Encoding", "gzip");
    r.body = std::string(a.gzip);
  } else {
    r.body = std::string(a.bytes);
  }
  return r;
}

HttpResponse running() {
  HttpResponse r;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "ggufd is running";
  return r;
}

}  // namespace

void add_root_routes(Router& router, bool webui) {
  const RouteOptions open = RouteOptions::open();
  auto root = [webui](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    const webui::Asset* page = webui ? webui::find_asset("index.html") : nullptr;
    co_return page != nullptr && accepts(req, "accept", "text/html") ? serve_asset(req, *page) : running();
  };
  router.add("GET", "/", root, open);  // and HEAD, as every GET route (Router::find)
  if (!webui) return;
  router.add("GET", "/webui/{file+}", [](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    const std::string& path = req.params.at("file");
    const webui::Asset* a = webui::find_asset(path);
    if (a == nullptr || path == "index.html") {
      throw ApiError(404, "no such file of the web page: " + excerpt(path, 200), "invalid_request_error", std::nullopt,
                     "not_found");
    }
    co_return serve_asset(req, *a);
  }, open);
}

}  // namespace server
