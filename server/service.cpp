#include "server/service.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <boost/asio/signal_set.hpp>
#include <condition_variable>
#include <optional>
#include <thread>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/dispatch.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/arch.h"
#include "engine/model/model.h"
#include "engine/text/chat_template.h"
#include "engine/text/grammar/grammar_cache.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/app.h"
#include "server/api/chat_prompt.h"
#include "server/api/url.h"
#include "server/handlers/handlers.h"
#include "server/remote_media.h"
#include "server/router.h"
#include "server/work_pool.h"

namespace server {

using Clock = std::chrono::steady_clock;

struct Service::Impl {
  explicit Impl(ServiceOptions o) : options(std::move(o)) {}
  ~Impl();

  void watch_first_load();
  net::awaitable<void> drain();
  void log_access(const AccessRecord& r);
  SharedParts shared_parts();

  ServiceOptions options;
  // Before io: the requests' coroutines still in io when it is destroyed hold leases on models.
  std::unique_ptr<ModelRegistry> models;
  std::unique_ptr<ResponseStore> responses;
  net::io_context io;
  Metrics http_metrics;  // requests by endpoint and status (the models' own are in the registry)
  std::unique_ptr<WorkPool> work;
  std::unique_ptr<RemoteMedia> media;  // --allow-remote-media
  Router router;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<HttpServer> second_http;  // --ollama-listen
  std::optional<net::signal_set> signals;
  std::vector<std::thread> io_threads;
  std::thread watcher;

  std::mutex mu;
  std::condition_variable cv;
  bool loaded = false;         // guarded by mu: the first load finished (well or not)
  bool stopped = false;        // guarded by mu
  std::string error;           // set before loaded = true
  bool shutting_down = false;  // io thread only
  int forced_by = 0;           // io thread only: the signal that cut the drain short
};

Service::Impl::~Impl() {
  if (watcher.joinable()) watcher.join();
  io.stop();
  for (std::thread& t : io_threads) t.join();
  if (media) media->stop();  // its transfers end at once
  if (work) work->stop();  // before the models its jobs may read
  // A second signal stops io without the drain: the schedulers may still hold the sinks of the
  // cancelled requests, whose channels post to io and own its timers. They let go of them within
  // a step; io (and its timers' service) must outlive that.
  if (models) {
    models->cancel_all();
    const auto give_up = Clock::now() + std::chrono::seconds(30);
    while (!models->idle() && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

SharedParts Service::Impl::shared_parts() {
  SharedParts p;
  p.work = work.get();
  p.media = media.get();
  p.responses = responses.get();
  // Router: one pool for all models, taken in turns per step (docs/architecture.md).
  if (options.router.enabled) p.compute = engine::ComputeShare::make(options.model.engine.n_threads);
  ServeSettings& s = p.settings;
  s.keep_alive_ms = options.keep_alive_ms;
  s.keep_billing_header = options.keep_billing_header;
  s.request_timeout_s = options.request_timeout_s;
  s.max_json_depth = options.max_json_depth;
  s.image_limits = options.image_limits;
  s.max_images = options.max_images;
  s.allow_remote_media = options.allow_remote_media;
  s.strict_api = options.strict_api;
  return p;
}

// Single-model mode: a model that fails to load stops the server (exit status 1). Router: the
// models loaded at start-up report, and the server goes on.
void Service::Impl::watch_first_load() {
  std::string failure;
  const bool ok = models->wait_first_load(failure);
  {
    std::lock_guard lock(mu);
    loaded = true;
    error = ok || options.router.enabled ? std::string() : failure;
  }
  cv.notify_all();
  if (!ok && !options.router.enabled) {
    spdlog::error("cannot load model: {}", failure);
    net::post(io, [this] { io.stop(); });
  }
}

// Graceful shutdown: refuse new work, let running requests finish within the grace period,
// cancel the rest, give their sessions a moment to write the final events, then stop.
net::awaitable<void> Service::Impl::drain() {
  http->stop_accepting();
  if (second_http) second_http->stop_accepting();
  net::steady_timer timer(io);
  auto sleep = [&](std::chrono::milliseconds d) -> net::awaitable<void> {
    timer.expires_after(d);
    co_await timer.async_wait(net::use_awaitable);
  };
  models->drain();
  const auto deadline = Clock::now() + std::chrono::seconds(options.shutdown_grace_s);
  while (!models->idle() && Clock::now() < deadline) co_await sleep(std::chrono::milliseconds(50));
  if (!models->idle()) {
    spdlog::warn("grace period over: cancelling the remaining requests");
    if (media) media->cancel();  // requests still fetching images
    models->cancel_all();
    while (!models->idle()) co_await sleep(std::chrono::milliseconds(20));
  }
  const auto linger = Clock::now() + std::chrono::seconds(2);
  const auto connections = [this] { return http->active_connections() + (second_http ? second_http->active_connections() : 0); };
  while (connections() > 0 && Clock::now() < linger) co_await sleep(std::chrono::milliseconds(20));
  spdlog::info("stopped");
  io.stop();
}

void Service::Impl::log_access(const AccessRecord& r) {
  http_metrics.count_request(r.endpoint, r.status);
  http_metrics.observe_request_duration(r.total_ms / 1000);
  auto level = r.status >= 500 ? spdlog::level::err : r.status >= 400 ? spdlog::level::warn : spdlog::level::info;
  // Orchestrator probes and scrapes come every few seconds, and a 503 from /health while
  // loading or draining is their expected answer: keep them out of the default log.
  if (r.path == "/health" || r.path == "/metrics") level = spdlog::level::debug;
  // Method and path are the client's bytes: escaped, so they can't break or forge a log line.
  spdlog::log(level, "{} {} {} prompt_tokens={} completion_tokens={} ttft_ms={:.1f} total_ms={:.1f}",
              escape_for_log(r.method, 64), escape_for_log(r.path), r.status, r.stats.prompt_tokens,
              r.stats.completion_tokens, r.stats.ttft_ms, r.total_ms);
}

Service::Service(ServiceOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Service::~Service() = default;

void Service::start() {
  Impl& d = *impl_;
  d.responses = std::make_unique<ResponseStore>(d.options.response_store);
  d.work = std::make_unique<WorkPool>(std::max(1, d.options.work_threads), std::max(1, d.options.work_queue));
  if (d.options.allow_remote_media) {
    RemoteMediaOptions media;
    media.max_bytes = static_cast<size_t>(std::max<int64_t>(0, d.options.image_limits.max_bytes));
    media.timeout_s = d.options.remote_media_timeout_s;
    media.public_only = !d.options.remote_media_private;
    d.media = std::make_unique<RemoteMedia>(media);
  }
  d.models = std::make_unique<ModelRegistry>(d.options, d.shared_parts());
  ModelRegistry& models = *d.models;
  add_health_routes(d.router, models);
  add_models_routes(d.router, models);
  add_router_routes(d.router, models);
  add_metadata_routes(d.router, models);
  add_props_routes(d.router, models);
  if (d.options.metrics) add_metrics_routes(d.router, models, d.http_metrics);
  add_tokenize_routes(d.router, models, d.options.tokenize_limit);
  add_completions_routes(d.router, models);
  add_embeddings_routes(d.router, models);
  add_chat_completions_routes(d.router, models);
  add_responses_routes(d.router, models);
  add_messages_routes(d.router, models);
  add_ollama_routes(d.router, models);
  add_root_routes(d.router, d.options.webui);
  d.http = std::make_unique<HttpServer>(d.io, d.router, d.options.http,
                                        [&d](const AccessRecord& r) { d.log_access(r); });
  d.http->start();
  spdlog::info("listening on http://{}:{}", d.options.http.host, d.http->port());
  if (d.options.webui) {
    spdlog::info("chat page: open http://{}:{}/ in a browser (--no-webui: off)", d.options.http.host, d.http->port());
  }
  if (!d.options.second_host.empty()) {
    HttpOptions second = d.options.http;
    second.host = d.options.second_host;
    second.port = d.options.second_port;
    d.second_http = std::make_unique<HttpServer>(d.io, d.router, second, [&d](const AccessRecord& r) { d.log_access(r); });
    d.second_http->start();
    spdlog::info("also listening on http://{}:{} (--ollama-listen)", second.host, d.second_http->port());
  }
  models.start();
  d.watcher = std::thread([&d] { d.watch_first_load(); });
  for (int i = 0; i < std::max(1, d.options.io_threads); ++i) {
    d.io_threads.emplace_back([&d] {
      auto guard = net::make_work_guard(d.io);
      d.io.run();
      std::lock_guard lock(d.mu);
      d.stopped = true;
      d.cv.notify_all();
    });
  }
}

bool Service::wait_ready() {
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->loaded; });
  return impl_->error.empty();
}

const std::string& Service::load_error() const { return impl_->error; }
uint16_t Service::port() const { return impl_->http->port(); }
uint16_t Service::second_port() const { return impl_->second_http ? impl_->second_http->port() : 0; }

void Service::shutdown() {
  net::post(impl_->io, [d = impl_.get()] {
    if (d->shutting_down) return;
    d->shutting_down = true;
    spdlog::info("shutting down: draining requests (grace {} s)", d->options.shutdown_grace_s);
    net::co_spawn(d->io, d->drain(), net::detached);
  });
}

void Service::handle_signals() {
  Impl& d = *impl_;
  d.signals.emplace(d.io, SIGINT, SIGTERM);
  d.signals->async_wait([this, &d](const boost::system::error_code& ec, int) {
    if (ec) return;
    shutdown();
    // A second signal while draining: the operator wants out now.
    d.signals->async_wait([&d](const boost::system::error_code& ec2, int signal) {
      if (ec2) return;
      spdlog::warn("second signal ({}): stopping now, cancelling what still runs", signal);
      d.forced_by = signal;
      d.models->cancel_all();
      d.io.stop();
    });
  });
}

int Service::wait() {
  {
    std::unique_lock lock(impl_->mu);
    impl_->cv.wait(lock, [&] { return impl_->stopped; });
  }
  if (impl_->watcher.joinable()) impl_->watcher.join();
  if (impl_->forced_by != 0) return 128 + impl_->forced_by;
  return impl_->error.empty() ? 0 : 1;
}

}  // namespace server
