// The models one server knows, which of them are in memory, and the leases requests hold on them.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/thread_annotations.h"
#include "server/api/api_error.h"
#include "server/api/file_facts.h"
#include "server/api/request_json.h"
#include "server/asio.h"
#include "server/http.h"
#include "server/loaded_model.h"
#include "server/model_downloads.h"
#include "server/service.h"
#include "server/work_pool.h"

namespace server {

enum class ModelState { kUnloaded, kLoading, kLoaded, kUnloading, kSleeping, kFailed };
const char* state_name(ModelState s);

// A snapshot of one model for listings (/v1/models, /models).
struct ModelStatus {
  std::string id;
  std::vector<std::string> aliases;
  std::string path;
  std::string source;                         // "model" (--model), "preset", "dir", "cache"
  ModelState state = ModelState::kUnloaded;
  std::string error;                          // kFailed: the cause
  uint64_t file_bytes = 0;                    // the file (all parts of a split set)
  uint64_t memory_bytes = 0;                  // loaded: what --models-ram counts for it
  int64_t created = 0;                        // file modification time, Unix seconds
  int64_t in_flight = 0;                      // requests holding it
  int64_t expires_at = 0;                     // loaded: Unix seconds when keep_alive or
                                              // --sleep-idle-seconds unloads it (0: not planned)
  nlohmann::json kind;                        // loaded: model_kind_json (capabilities, pooling, ...)
  FileFacts facts;
};

class ModelRegistry;
struct ModelEntry;

// A request's hold on a loaded model: it is not unloaded while any lease on it lives.
// Move-only; destroy it on any thread.
class ModelLease {
 public:
  ModelLease(ModelRegistry& registry, std::shared_ptr<ModelEntry> entry, std::shared_ptr<LoadedModel> model);
  ModelLease(ModelLease&& other) noexcept;
  ModelLease& operator=(ModelLease&&) = delete;
  ModelLease(const ModelLease&) = delete;
  ~ModelLease();

  App& app() const { return model_->app; }
  // Ollama's keep_alive: the model stays loaded this long after the request ends (0: unloaded
  // right after it, once no other request holds it; negative: until evicted or unloaded). The
  // last request to end sets it; one ending without keep_alive restores --sleep-idle-seconds.
  void keep_alive(std::chrono::milliseconds d) { keep_alive_ = d; }

 private:
  ModelRegistry* registry_;
  std::shared_ptr<ModelEntry> entry_;
  std::shared_ptr<LoadedModel> model_;
  std::optional<std::chrono::milliseconds> keep_alive_;
};

// Single-model mode (router off): one model, loaded at start, serving every request whatever id
// it names. Router mode: the models named on the command line and in presets, the GGUF files
// below --models-dir and the download cache; a request's model is loaded on demand (in the
// background, one load at a time, on the loader thread) after the least recently used idle
// models are unloaded to stay within --models-max and --models-ram; models idle past
// --sleep-idle-seconds (or their keep_alive) are unloaded and marked sleeping.
// Unloading (POST /models/unload, eviction, sleep) never takes a model with requests in flight:
// an explicit unload stops admitting new requests to it, waits for those running up to the
// shutdown grace, then cancels them (they end with 503) and frees the model.
// Ownership: owns the entries, the loaded models and the loader thread (joined by the destructor).
// Thread-safety: every method may be called from any thread.
class ModelRegistry {
 public:
  ModelRegistry(const ServiceOptions& options, SharedParts shared);
  ~ModelRegistry();

  // Finds the models and starts loading those due at start (single mode: the one model).
  void start();
  bool router() const { return router_; }
  // Single mode: blocks until the model loaded (true) or failed (false, `error` says why).
  bool wait_first_load(std::string& error);

  // The model a request names, once loaded (router off: the one model, any id). Router: an
  // unloaded model is loaded (--models-autoload) and the request waits up to load_wait_s.
  // Throws ApiError: 404 model_not_found listing the ids; 503 with Retry-After while it loads or
  // unloads, or when the server drains; 400 model_not_loaded without autoload; 500 load_failed
  // with the cause when its load failed (the next request tries again).
  net::awaitable<std::shared_ptr<ModelLease>> acquire(const std::string& id, RequestContext& ctx);
  // A loaded model's lease without waiting or loading (GET endpoints), or nullopt. Throws 404.
  std::optional<ModelLease> try_acquire(const std::string& id);
  // The one model of single mode, or the only loaded one; nullopt when that is ambiguous.
  std::optional<ModelLease> any_loaded();

  // POST /models/load and /models/unload: start it and return at once. Throws ApiError 404.
  // load() of a Hub name that is not on disk downloads it first (when clients may pull) and
  // returns "downloading"; else "loading" (or "loaded" when it already is).
  std::string load(const std::string& id);
  void unload(const std::string& id);

  // Ollama's /api/pull: downloads a Hub model into the cache, where the router then lists it.
  // Throws ApiError: 403 when clients may not pull (--no-models-pull, or one model without the
  // router), else what ModelDownloads::start throws.
  void pull(const std::string& spec);
  std::optional<DownloadState> download(const std::string& spec) const;
  // Ollama's /api/delete of a downloaded model: false while it is loaded or busy (an unload is
  // then started: call again); true once it is forgotten and its files are removed from the cache.
  // Throws ApiError 404 (unknown), 400 (not a download: a file of --models-dir or --model).
  bool remove_download(const std::string& name);
  // Ollama's /api/copy: `alias` names the model `id` names too (until the server restarts).
  // Throws ApiError 404 (unknown id), 400 (the alias names another model already).
  void add_alias(const std::string& id, const std::string& alias);
  // The id the router lists a Hub name under once cached ("hf.co/org/repo:latest" ->
  // "org/repo:Q4_K_M"), or "" when it is not in the cache.
  std::string cached_id(const std::string& name) const;

  // Every model, after looking for new files below --models-dir and in the cache.
  std::vector<ModelStatus> list();
  // Status and load events ({"seq": n, "type": "status"|"progress", ...}) after `cursor`, which
  // is advanced; the registry keeps the last kEventLog of them.
  std::vector<nlohmann::json> events_since(uint64_t& cursor) const;
  static constexpr size_t kEventLog = 512;

  bool draining() const;
  // Every model's series (Metrics::render_model): counters kept across loads, gauges of the loaded.
  void render_metrics(MetricsPage& page) const;

  // The pool of requests' CPU work.
  WorkPool& work() const { return *shared_.work; }
  // /v1/responses' stored responses, shared by all models (null: none kept).
  ResponseStore* responses() const { return shared_.responses; }

  // Shutdown: refuse new requests; then whether nothing runs; cancel_all() ends what does.
  void drain();
  bool idle() const;
  void cancel_all();

 private:
  friend class ModelLease;
  struct Job {
    bool load = true;
    std::shared_ptr<ModelEntry> entry;
    ModelState after = ModelState::kUnloaded;  // an unload's end state (kSleeping when idle)
  };

  std::shared_ptr<ModelEntry> find(const std::string& id) const GGUFD_REQUIRES(mu_);
  // find(), else after a rescan, else under the id a Hub name has in the cache.
  std::shared_ptr<ModelEntry> lookup(const std::string& id) GGUFD_REQUIRES(mu_);
  void downloaded(const DownloadState& d);
  void scan() GGUFD_REQUIRES(mu_);
  void add_entry(const ModelOptions& o, const std::string& id, const std::string& source) GGUFD_REQUIRES(mu_);
  void enqueue(const std::shared_ptr<ModelEntry>& e, bool load, ModelState after = ModelState::kUnloaded)
      GGUFD_REQUIRES(mu_);
  void release(ModelEntry& e, std::optional<std::chrono::milliseconds> keep_alive);
  void loader_loop();
  void run_load(const std::shared_ptr<ModelEntry>& e);
  void run_unload(const std::shared_ptr<ModelEntry>& e, ModelState after);
  void free_model(ModelEntry& e, ModelState after) GGUFD_REQUIRES(mu_);
  void fail_load(ModelEntry& e, const std::string& why) GGUFD_REQUIRES(mu_);
  void emit_status(const ModelEntry& e) const GGUFD_REQUIRES(mu_);
  bool make_room(const ModelEntry& e, uint64_t need, std::string& why) GGUFD_REQUIRES(mu_);
  void sleep_idle() GGUFD_REQUIRES(mu_);
  void emit(nlohmann::json event) const GGUFD_REQUIRES(mu_);
  [[noreturn]] void throw_unknown(const std::string& id) const GGUFD_REQUIRES(mu_);

  const ServiceOptions options_;
  const bool router_;
  SharedParts shared_;
  mutable engine::Mutex mu_;
  std::condition_variable_any cv_;  // loader: jobs, stopping; wait_first_load: state changes
  std::vector<std::shared_ptr<ModelEntry>> entries_ GGUFD_GUARDED_BY(mu_);
  std::deque<Job> jobs_ GGUFD_GUARDED_BY(mu_);
  mutable std::deque<nlohmann::json> events_ GGUFD_GUARDED_BY(mu_);
  mutable uint64_t next_event_ GGUFD_GUARDED_BY(mu_) = 1;
  bool draining_ GGUFD_GUARDED_BY(mu_) = false;
  bool stopping_ GGUFD_GUARDED_BY(mu_) = false;
  std::vector<std::string> load_when_downloaded_ GGUFD_GUARDED_BY(mu_);  // specs POST /models/load named
  std::thread loader_;
  std::unique_ptr<ModelDownloads> downloads_;  // router with pulls allowed; else null
};

// A 503 with Retry-After: 1 (a model loading or unloading, the server draining).
ApiError retry_later(std::string message, std::string code);

// The lease of the model a request names: a POST body's "model" (read on the work pool without
// parsing the rest), or a GET's ?model=. Router off: the one model, whatever is named. Router on:
// a request naming none is a 400 listing the models. Shared, so a streamed response can hold it
// (HttpResponse::hold) until its last byte. Throws what ModelRegistry::acquire throws.
net::awaitable<std::shared_ptr<ModelLease>> lease_for_body(ModelRegistry& models, HttpRequest& req, RequestContext& ctx);
// The same with the body's routing fields read already (router on; peek_routing).
net::awaitable<std::shared_ptr<ModelLease>> lease_for_fields(ModelRegistry& models, const RoutingFields& fields,
                                                             RequestContext& ctx);
net::awaitable<std::shared_ptr<ModelLease>> lease_for_query(ModelRegistry& models, HttpRequest& req, RequestContext& ctx);

}  // namespace server
