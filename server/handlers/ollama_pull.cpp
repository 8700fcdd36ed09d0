// Ollama's model management over the router and the download cache: POST /api/pull (a Hugging Face
// model, as Ollama itself takes them: hf.co/org/repo[:QUANT], or org/repo[:QUANT]; NDJSON progress
// by default), DELETE /api/delete (a downloaded model: unloaded, then removed from the cache) and
// POST /api/copy (another name for a model, until the server restarts). Ollama's own registry
// ("llama3.2", "library/qwen3") is not reachable from here: such names are a 400 saying what is.
#include <chrono>
#include <map>

#include "server/api/ollama/ollama_request.h"
#include "server/api/ollama/ollama_response.h"
#include "server/api/request_json.h"
#include "server/handlers/handlers.h"

namespace server {

using nlohmann::json;

namespace {

// "model" (current) or "name" (older clients), required.
std::string model_name(const json& body, const char* key = "model", const char* legacy = "name") {
  const std::optional<std::string> model = get_string(body, key);
  const std::optional<std::string> name = get_string(body, legacy);
  const std::string out = model && !model->empty() ? *model : name.value_or("");
  if (out.empty()) throw invalid_field(key, std::string("'") + key + "' is required");
  return out;
}

// The NDJSON objects Ollama's clients read for what changed since `sent` (status, digest, total,
// completed): a line per file whose bytes moved, so even a pull that finished between two polls
// shows each file whole before "success".
std::vector<json> progress_lines(const DownloadState& s, std::string& last_status, std::map<std::string, uint64_t>& sent) {
  std::vector<json> out;
  const auto status = [&](const std::string& text) {
    if (text != last_status) out.push_back({{"status", text}});
    last_status = text;
  };
  if (s.status == DownloadState::Status::kFailed) return {json{{"error", s.error}}};
  status("pulling manifest");
  for (const DownloadState::File& f : s.files) {
    const auto it = sent.find(f.name);
    if (it != sent.end() && it->second == f.done) continue;
    sent[f.name] = f.done;
    const std::string id = f.sha256.empty() ? f.name : f.sha256.substr(0, 12);
    out.push_back({{"status", "pulling " + id},
                   {"digest", f.sha256.empty() ? "" : "sha256:" + f.sha256},
                   {"total", f.total},
                   {"completed", f.done}});
    last_status = "pulling " + id;
  }
  if (s.status == DownloadState::Status::kDone) {
    status("verifying sha256 digest");
    status("writing manifest");
    status("success");
  } else if (s.progress.phase == hub::Phase::kVerifying) {
    status("verifying sha256 digest");
  }
  return out;
}

// A failed download as the status a client gets without streaming: the Hub's 404 (no such repo
// or file) is the client's; anything else failed upstream.
ApiError download_error(const DownloadState& s) {
  const bool missing = s.error.find("404") != std::string::npos || s.error.find("not found") != std::string::npos;
  return ApiError(missing ? 404 : 502, "pull " + s.spec + ": " + s.error, missing ? "not_found_error" : "server_error");
}

// /api/pull's NDJSON: a line per change of the download, polled every 100 ms, until it ends.
class PullProgress : public ChunkSource {
 public:
  PullProgress(ModelRegistry& models, std::string spec, net::any_io_executor ex)
      : models_(models), spec_(std::move(spec)), timer_(ex) {}
  net::awaitable<std::optional<std::string>> next() override {
    while (!cancelled_ && !ended_) {
      const std::optional<DownloadState> s = models_.download(spec_);
      if (!s) co_return std::nullopt;
      if (s->version != seen_) {
        seen_ = s->version;
        std::string out;
        for (const json& line : progress_lines(*s, last_status_, sent_)) out += ndjson_line(line);
        ended_ = s->status != DownloadState::Status::kRunning;
        if (!out.empty()) co_return out;
      }
      timer_.expires_after(std::chrono::milliseconds(100));
      boost::system::error_code ec;
      co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    co_return std::nullopt;
  }
  void cancel() override {  // the client left: the download goes on (another pull joins it)
    cancelled_ = true;
    timer_.cancel();
  }

 private:
  ModelRegistry& models_;
  const std::string spec_;
  net::steady_timer timer_;
  uint64_t seen_ = 0;
  std::string last_status_;
  std::map<std::string, uint64_t> sent_;  // bytes last reported per file
  bool ended_ = false;
  bool cancelled_ = false;
};

net::awaitable<void> pause(RequestContext& ctx, std::chrono::milliseconds d) {
  net::steady_timer timer(ctx.executor);
  timer.expires_after(d);
  co_await timer.async_wait(net::use_awaitable);
}

net::awaitable<HttpResponse> pull(ModelRegistry& models, HttpRequest& req, RequestContext& ctx) {
  const json body = parse_object(req.body, kDefaultMaxJsonDepth);
  const std::string spec = model_name(body);
  const bool stream = get_bool(body, "stream").value_or(true);
  models.pull(spec);
  if (stream) {
    HttpResponse r;
    r.content_type = "application/x-ndjson";
    r.stream = std::make_shared<PullProgress>(models, spec, ctx.executor);
    co_return r;
  }
  for (;;) {
    const std::optional<DownloadState> s = models.download(spec);
    if (!s) throw ApiError(503, "the download of " + spec + " vanished (the server is stopping)", "server_error");
    if (s->status == DownloadState::Status::kFailed) throw download_error(*s);
    if (s->status == DownloadState::Status::kDone) co_return HttpResponse::json(200, R"({"status":"success"})");
    if (ctx.disconnect->fired()) throw ApiError(503, "request cancelled (client gone)", "server_error");
    co_await pause(ctx, std::chrono::milliseconds(100));
  }
}

// Unloads the model if it is loaded, waits for that (up to a minute), then removes its files.
net::awaitable<HttpResponse> remove(ModelRegistry& models, HttpRequest& req, RequestContext& ctx) {
  const json body = parse_object(req.body, kDefaultMaxJsonDepth);
  const std::string name = model_name(body);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!co_await models.work().run([&] { return models.remove_download(name); })) {
    if (std::chrono::steady_clock::now() > give_up) {
      throw ApiError(409, "model " + excerpt(name) + " is still in use; try again when its requests are done",
                     "invalid_request_error", "model", "model_busy");
    }
    co_await pause(ctx, std::chrono::milliseconds(50));
  }
  co_return HttpResponse::json(200, "{}");
}

net::awaitable<HttpResponse> copy(ModelRegistry& models, HttpRequest& req, RequestContext&) {
  const json body = parse_object(req.body, kDefaultMaxJsonDepth);
  const std::string source = model_name(body, "source", "source");
  const std::string destination = model_name(body, "destination", "destination");
  models.add_alias(source, destination);
  co_return HttpResponse::json(200, "{}");
}

}  // namespace

void add_ollama_pull_routes(Router& router, ModelRegistry& models) {
  const RouteOptions options = RouteOptions{}.with_errors(ollama_error_json);
  router.add("POST", "/api/pull", [&models](HttpRequest& req, RequestContext& ctx) { return pull(models, req, ctx); },
             options);
  router.add("DELETE", "/api/delete",
             [&models](HttpRequest& req, RequestContext& ctx) { return remove(models, req, ctx); }, options);
  router.add("POST", "/api/copy", [&models](HttpRequest& req, RequestContext& ctx) { return copy(models, req, ctx); },
             options);
}

}  // namespace server
