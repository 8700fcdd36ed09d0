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
#include "server/router.h"
#include "server/work_pool.h"

namespace server {

using Clock = std::chrono::steady_clock;

struct Service::Impl {
  explicit Impl(ServiceOptions o) : options(std::move(o)) {}
  ~Impl();

  void load();
  std::string pick_template(const gguf::File& file);
  net::awaitable<void> drain();
  void log_access(const AccessRecord& r);
  void log_speculation(const engine::SchedulerOptions& so) const;

  ServiceOptions options;
  net::io_context io;
  App app;
  std::optional<engine::Model> model;
  std::optional<engine::Model> draft_model;  // speculative decoding by a draft model
  std::optional<engine::Tokenizer> tokenizer;
  std::optional<engine::ChatTemplate> chat_template;
  std::unique_ptr<engine::Scheduler> scheduler;
  std::unique_ptr<engine::grammar::GrammarCache> grammars;
  std::unique_ptr<WorkPool> work;
  std::unique_ptr<ResponseStore> responses;
  Router router;
  std::unique_ptr<HttpServer> http;
  std::optional<net::signal_set> signals;
  std::vector<std::thread> io_threads;
  std::thread loader;

  std::mutex mu;
  std::condition_variable cv;
  bool loaded = false;         // guarded by mu: loading finished (well or not)
  bool stopped = false;        // guarded by mu
  std::string error;           // set before loaded = true
  bool shutting_down = false;  // io thread only
  int forced_by = 0;           // io thread only: the signal that cut the drain short
};

Service::Impl::~Impl() {
  if (loader.joinable()) loader.join();
  io.stop();
  for (std::thread& t : io_threads) t.join();
  if (work) work->stop();  // before the scheduler and model its jobs may read
}

std::string Service::Impl::pick_template(const gguf::File& file) {
  if (!options.model.chat_template.empty()) {
    app.settings.chat_template_source = options.model.chat_template_origin.empty() ? "override" : options.model.chat_template_origin;
    return options.model.chat_template;
  }
  if (auto t = file.find_string("tokenizer.chat_template")) {
    if (holds_prompt_mark(*t)) {
      spdlog::warn("the model's chat template contains U+FDD0, which ggufd reserves for marking request text; "
                   "using ChatML");
      app.settings.chat_template_source = "chatml (fallback)";
      return std::string(engine::kChatMLTemplate);
    }
    try {
      engine::ChatTemplate::parse(*t);
      app.settings.chat_template_source = "model";
      return std::string(*t);
    } catch (const engine::TemplateError& e) {
      spdlog::warn("the model's chat template does not parse ({}); using ChatML", e.what());
    }
  }
  app.settings.chat_template_source = "chatml (fallback)";
  return std::string(engine::kChatMLTemplate);
}

// Renders run on the work pool, one per request: a tenth of the engine's default step budget
// (about 2 s of one core here) is far above what real templates spend on long conversations
// with many tools (tens of thousands of steps) and keeps a hostile template from holding a
// pool thread for long.
static engine::ChatTemplateOptions template_options() {
  engine::ChatTemplateOptions o;
  o.limits.max_steps = 2'000'000;
  return o;
}

// Paging in the weights of a large model takes a while: on a terminal, show how far it got.
static void show_load_progress(uint64_t done, uint64_t total) {
  static const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (!tty || total < (uint64_t{256} << 20)) return;
  std::fprintf(stderr, "\rloading weights: %3d%% (%llu / %llu MiB)%s", static_cast<int>(100 * done / total),
               static_cast<unsigned long long>(done >> 20), static_cast<unsigned long long>(total >> 20),
               done == total ? "\n" : "");
  std::fflush(stderr);
}

// An encoder's slots hold no cache; many let one pass embed many inputs.
constexpr int kEncoderSlots = 64;

// What the model serves: its pooling type (or --pooling's), and whether it generates. Throws
// std::runtime_error for a pooling the model cannot do.
static void set_pooling(const engine::Model& model, const std::string& option, App& app) {
  const engine::HParams& hp = model.hparams();
  app.generates = !engine::arch_traits(hp.arch).encoder;
  app.n_embd = hp.n_embd;
  app.architecture = hp.arch_name;
  app.pooling = hp.pooling;
  if (!option.empty()) {
    const std::optional<engine::PoolingType> p = engine::find_pooling(option);
    if (!p) throw std::runtime_error("--pooling " + option + ": expected mean, cls, last, rank or none");
    app.pooling = *p;
  }
  if (app.pooling == engine::PoolingType::kNone && !app.generates) {
    app.pooling = engine::PoolingType::kCls;  // an encoder file without pooling_type: BERT's default
    spdlog::warn("the model has no pooling type: embeddings use cls pooling (--pooling chooses another)");
  }
  if (app.pooling == engine::PoolingType::kRank && engine::arch_traits(hp.arch).rank == engine::RankHead::kNone) {
    throw std::runtime_error("pooling rank: architecture " + hp.arch_name +
                             " has no classification head (rerankers: bert, jina-bert-v2, qwen3)");
  }
  if (app.pooling == engine::PoolingType::kRank && hp.n_cls_out == 0) {
    throw std::runtime_error("pooling rank needs a classification head (tensor cls.output.weight, or cls.weight for "
                             "jina-bert-v2), which the model lacks");
  }
}

// Loads everything the endpoints need; runs on its own thread so /health can say "loading".
void Service::Impl::load() {
  std::string failure;
  try {
    const auto start = Clock::now();
    model.emplace(engine::Model::load(options.model.path));
    model->page_in(show_load_progress);
    tokenizer.emplace(engine::Tokenizer::from_gguf(model->file()));
    const std::string tmpl = pick_template(model->file());
    chat_template.emplace(engine::ChatTemplate::parse(tmpl, template_options()));
    engine::SchedulerOptions so = options.model.engine;
    so.n_ctx = std::min<int64_t>(so.n_ctx, model->hparams().n_ctx_train);
    set_pooling(*model, options.model.pooling, app);
    if (!app.generates) so.n_slots = std::max(so.n_slots, kEncoderSlots);  // no cache: slots are free
    if (options.model.spec_auto && so.spec == engine::SpecMode::kNone && model->hparams().n_layer_nextn > 0) {
      so.spec = engine::SpecMode::kMtp;  // the model's own draft head, where its drafts pay
      so.spec_auto = true;
    }
    if (so.spec == engine::SpecMode::kMtp && options.model.draft_max_default) {
      so.draft_max = std::max(ModelOptions::kMtpDraftMax, so.draft_min);
    }
    if (!app.generates) so.spec = engine::SpecMode::kNone;  // nothing to draft
    if (so.spec == engine::SpecMode::kDraft) {
      if (options.model.draft_model_path.empty()) throw std::runtime_error("speculative decoding by a draft model needs --model-draft");
      try {
        draft_model.emplace(engine::Model::load(options.model.draft_model_path));
        draft_model->page_in(show_load_progress);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string("the draft model (--model-draft): ") + e.what());
      }
    }
    scheduler = std::make_unique<engine::Scheduler>(*model, *tokenizer, so, draft_model ? &*draft_model : nullptr);

    const std::string& path = options.model.path;
    app.model_path = path;
    app.model_id = options.model.alias.empty() ? path.substr(path.find_last_of('/') + 1) : options.model.alias;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) app.model_created = st.st_mtime;
    app.file = std::make_shared<gguf::File>(model->file());
    app.tokenizer = &*tokenizer;
    app.chat_template = &*chat_template;
    app.scheduler = scheduler.get();
    app.chat_features = detect_chat_features(app);
    grammars = std::make_unique<engine::grammar::GrammarCache>(
        engine::grammar::TokenVocab::from_tokenizer(*tokenizer, app.chat_features.marker_tokens));
    app.grammars = grammars.get();
    ServeSettings& s = app.settings;
    s.n_ctx = so.n_ctx;
    s.n_slots = so.n_slots;
    s.n_threads = engine::thread_count(so.n_threads);
    s.prefill_chunk = so.prefill_chunk;
    s.max_queue = so.max_queue;
    s.kv_type = engine::kv_type_name(so.kv_type);
    s.max_tokens = options.model.max_tokens;
    s.keep_alive_ms = options.keep_alive_ms;
    s.keep_billing_header = options.keep_billing_header;
    s.default_sampling = options.model.sampling_defaults;
    s.request_timeout_s = options.request_timeout_s;
    s.max_json_depth = options.max_json_depth;
    s.strict_api = options.strict_api;
    s.reasoning_effort = options.model.reasoning_effort;
    s.chat_template = tmpl;
    s.cpu_features = engine::cpu_features().to_string();
    s.kernels = engine::kernels::dispatch().name;
    s.build_info = "ggufd " GGUFD_VERSION;
    const auto& hp = model->hparams();
    spdlog::info("model {}: {} layers, embedding {}, vocab {}, context {} x {} slots, loaded in {:.0f} ms",
                 app.model_id, hp.n_layer, hp.n_embd, hp.n_vocab, so.n_ctx, so.n_slots,
                 std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    std::string arch;
    for (const engine::HParamField& f : engine::describe_hparams(hp)) {
      if (f.name != "n_layer" && f.name != "n_embd") arch += (arch.empty() ? "" : ", ") + f.name + " " + f.value;
    }
    spdlog::info("architecture: {}", arch);
    const engine::SchedulerStats kv = scheduler->stats();
    const auto mib = [](size_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
    std::string ring;
    if (kv.kv_window_cells > 0) {
      ring = fmt::format("; sliding-window layers in a ring of {} cells, {:.1f} MiB without it", kv.kv_window_cells,
                         mib(kv.kv_bytes_without_window));
    }
    spdlog::info("memory: weights {:.1f} MiB (mapped from the file), KV cache {:.1f} MiB ({}, {} cells{})",
                 mib(model->weight_bytes()), mib(kv.kv_bytes), s.kv_type, kv.kv_cells_total, ring);
    if (kv.recurrent_slot_bytes > 0) {
      spdlog::info("recurrent state (Gated DeltaNet layers): {:.2f} MiB per slot, {:.1f} MiB for {} slots",
                   mib(kv.recurrent_slot_bytes), mib(kv.recurrent_bytes), so.n_slots);
    }
    if (kv.prefix_cache.block_tokens > 0) {
      const int64_t cells = kv.prefix_cache.reserved_cells;
      spdlog::info("prefix cache: blocks of {} tokens shared by all slots; {} of the KV cells ({:.1f} MiB) are "
                   "for cached blocks beyond the slots' own (--cache-ram)",
                   kv.prefix_cache.block_tokens, cells,
                   kv.kv_cells_total > 0 ? mib(kv.kv_bytes) * static_cast<double>(cells) / static_cast<double>(kv.kv_cells_total) : 0.0);
      if (kv.prefix_cache.snapshot_slots > 0) {
        spdlog::info("prefix cache: {} snapshots of the recurrent state at block ends ({:.1f} MiB), so a hybrid "
                     "model resumes a cached prefix",
                     kv.prefix_cache.snapshot_slots, mib(kv.prefix_cache.snapshot_bytes));
      }
      if (kv.prefix_cache.on_disk) {
        spdlog::info("prefix cache on disk: {} ({} blocks of this model, {:.1f} MiB; at most {:.0f} MiB, least "
                     "recently used removed first)",
                     options.model.engine.prefix_store.dir, kv.prefix_cache.disk.files, mib(kv.prefix_cache.disk.bytes),
                     mib(options.model.engine.prefix_store.max_bytes));
      }
    } else if (app.generates) {
      spdlog::info("prefix cache: off ({}); each slot reuses its own prompt prefix only",
                   options.model.engine.prefix_cache_bytes <= 0 ? "--cache-ram 0" : "the sliding-window layers keep a ring");
    }
    log_speculation(so);
    app.ready = true;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  {
    std::lock_guard lock(mu);
    loaded = true;
    error = failure;
  }
  cv.notify_all();
  if (!failure.empty()) {
    spdlog::error("cannot load model: {}", failure);
    net::post(io, [this] { io.stop(); });
  }
}

void Service::Impl::log_speculation(const engine::SchedulerOptions& so) const {
  if (so.spec == engine::SpecMode::kNone) {
    if (app.generates) spdlog::info("speculative decoding: off");
    return;
  }
  std::string source = "n-gram prompt lookup";
  if (so.spec == engine::SpecMode::kMtp) {
    source = fmt::format("the model's NextN / MTP block ({} of {} NextN layers{})", 1, model->hparams().n_layer_nextn,
                         options.model.spec_auto ? ", chosen by --spec auto" : "");
  } else if (so.spec == engine::SpecMode::kDraft) {
    const engine::HParams& hp = draft_model->hparams();
    source = fmt::format("draft model {} ({} layers, embedding {}, weights {:.1f} MiB)", options.model.draft_model_path,
                         hp.n_layer, hp.n_embd, static_cast<double>(draft_model->weight_bytes()) / (1 << 20));
  }
  spdlog::info("speculative decoding: {}, up to {} drafts per slot and step verified with its next token{}", source,
               so.draft_max, so.draft_min > 1 ? fmt::format(" (proposals under {} dropped)", so.draft_min) : "");
  if (so.spec_auto) {
    const engine::DraftGateParams& g = so.draft_gate;
    spdlog::info("speculative decoding, --spec auto: a slot stops drafting while fewer than {:.2f} of its drafts are "
                 "accepted (the break-even: a draft costs about that much of a plain step), judged after {} drafted "
                 "steps; it drafts again after {} plain steps (up to {} after failed tries) and resumes when those "
                 "drafts are accepted; --spec mtp drafts always",
                 g.break_even, g.warmup, g.probe_after, g.probe_after_max);
  }
}

// Graceful shutdown: refuse new work, let running requests finish within the grace period,
// cancel the rest, give their sessions a moment to write the final events, then stop.
net::awaitable<void> Service::Impl::drain() {
  app.draining = true;
  http->stop_accepting();
  net::steady_timer timer(io);
  auto sleep = [&](std::chrono::milliseconds d) -> net::awaitable<void> {
    timer.expires_after(d);
    co_await timer.async_wait(net::use_awaitable);
  };
  if (scheduler) {
    scheduler->drain();
    const auto deadline = Clock::now() + std::chrono::seconds(options.shutdown_grace_s);
    while (!scheduler->idle() && Clock::now() < deadline) co_await sleep(std::chrono::milliseconds(50));
    if (!scheduler->idle()) {
      spdlog::warn("grace period over: cancelling the remaining requests");
      scheduler->cancel_all();
      while (!scheduler->idle()) co_await sleep(std::chrono::milliseconds(20));
    }
  }
  const auto linger = Clock::now() + std::chrono::seconds(2);
  while (http->active_connections() > 0 && Clock::now() < linger) co_await sleep(std::chrono::milliseconds(20));
  spdlog::info("stopped");
  io.stop();
}

void Service::Impl::log_access(const AccessRecord& r) {
  app.metrics.count_request(r.endpoint, r.status);
  app.metrics.observe_request_duration(r.total_ms / 1000);
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
  add_health_routes(d.router, d.app);
  add_models_routes(d.router, d.app);
  add_metadata_routes(d.router, d.app);
  add_props_routes(d.router, d.app);
  if (d.options.metrics) add_metrics_routes(d.router, d.app);
  add_tokenize_routes(d.router, d.app, d.options.tokenize_limit);
  add_completions_routes(d.router, d.app);
  add_embeddings_routes(d.router, d.app);
  add_chat_completions_routes(d.router, d.app);
  add_responses_routes(d.router, d.app);
  add_messages_routes(d.router, d.app);
  d.responses = std::make_unique<ResponseStore>(d.options.response_store);
  d.app.responses = d.responses.get();
  d.work = std::make_unique<WorkPool>(std::max(1, d.options.work_threads), std::max(1, d.options.work_queue));
  d.app.work = d.work.get();
  d.http = std::make_unique<HttpServer>(d.io, d.router, d.options.http,
                                        [&d](const AccessRecord& r) { d.log_access(r); });
  d.http->start();
  spdlog::info("listening on http://{}:{}", d.options.http.host, d.http->port());
  d.loader = std::thread([&d] { d.load(); });
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
      if (d.scheduler) d.scheduler->cancel_all();
      d.io.stop();
    });
  });
}

int Service::wait() {
  {
    std::unique_lock lock(impl_->mu);
    impl_->cv.wait(lock, [&] { return impl_->stopped; });
  }
  if (impl_->loader.joinable()) impl_->loader.join();
  if (impl_->forced_by != 0) return 128 + impl_->forced_by;
  return impl_->error.empty() ? 0 : 1;
}

}  // namespace server
