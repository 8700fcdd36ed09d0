#include "server/model_registry.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "engine/model/repack.h"
#include "gguf/naming.h"
#include "server/api/api_error.h"
#include "server/api/keep_alive.h"
#include "server/api/request_json.h"
#include "server/hub/spec.h"

namespace server {

using Clock = std::chrono::steady_clock;

struct ModelEntry {
  std::string id;
  std::vector<std::string> aliases;
  ModelOptions options;
  std::string source;                          // "model", "preset", "dir", "cache"
  ModelState state = ModelState::kUnloaded;
  std::string error;                           // the last load's failure
  uint64_t generation = 0;                     // load attempts finished (waiters tell theirs apart)
  std::shared_ptr<LoadedModel> loaded;
  int64_t in_flight = 0;
  Clock::time_point last_used{};
  std::optional<Clock::time_point> expires;    // keep_alive: idle past this, it is unloaded
  std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>();  // across loads
  uint64_t file_bytes = 0;
  uint64_t memory_bytes = 0;                   // of its last load (0: never loaded)
  int64_t created = 0;
  FileFacts facts;
};

const char* state_name(ModelState s) {
  switch (s) {
    case ModelState::kUnloaded: return "unloaded";
    case ModelState::kLoading: return "loading";
    case ModelState::kLoaded: return "loaded";
    case ModelState::kUnloading: return "unloading";
    case ModelState::kSleeping: return "sleeping";
    case ModelState::kFailed: return "failed";
  }
  return "unloaded";
}

namespace {

namespace fs = std::filesystem;

// The id of a file below --models-dir: its path there without ".gguf" (and a split set's suffix).
std::string dir_id(const fs::path& rel) {
  const std::string s = rel.generic_string();
  if (const std::optional<gguf::SplitName> split = gguf::parse_split_name(s)) return split->prefix;
  return s.substr(0, s.size() - 5);
}

// The file's size (all parts of a split set) and modification time.
void stat_file(ModelEntry& e) {
  struct stat st {};
  if (::stat(e.options.path.c_str(), &st) != 0) return;
  e.created = st.st_mtime;
  try {
    e.file_bytes = gguf::model_files_size(e.options.path);
  } catch (const std::exception&) {
    e.file_bytes = static_cast<uint64_t>(st.st_size);  // a part is missing: the load will say so
  }
  e.facts = read_file_facts(e.options.path);
}

}  // namespace

ApiError retry_later(std::string message, std::string code) {
  ApiError e(503, std::move(message), "server_error", std::nullopt, std::move(code));
  e.retry_after = 1;
  return e;
}

// ---- leases ----

ModelLease::ModelLease(ModelRegistry& registry, std::shared_ptr<ModelEntry> entry, std::shared_ptr<LoadedModel> model)
    : registry_(&registry), entry_(std::move(entry)), model_(std::move(model)) {}

ModelLease::ModelLease(ModelLease&& other) noexcept
    : registry_(other.registry_), entry_(std::move(other.entry_)), model_(std::move(other.model_)) {}

ModelLease::~ModelLease() {
  if (entry_) registry_->release(*entry_, keep_alive_);
}

void ModelRegistry::release(ModelEntry& e, std::optional<std::chrono::milliseconds> keep_alive) {
  {
    engine::MutexLock lock(mu_);
    --e.in_flight;
    e.last_used = Clock::now();
    if (!router_ || !keep_alive) {
      e.expires.reset();
    } else if (keep_alive->count() < 0) {
      e.expires = Clock::time_point::max();
    } else {
      e.expires = e.last_used + *keep_alive;
    }
  }
  cv_.notify_all();  // (keep_alive 0: the loader unloads it now)
}

// ---- set-up ----

ModelRegistry::ModelRegistry(const ServiceOptions& options, SharedParts shared)
    : options_(options), router_(options.router.enabled), shared_(std::move(shared)) {
  if (router_ && options_.router.pull) {
    downloads_ = std::make_unique<ModelDownloads>(
        options_.router.hub,
        [this](nlohmann::json ev) {
          engine::MutexLock lock(mu_);
          emit(std::move(ev));
        },
        [this](const DownloadState& d) { downloaded(d); });
  }
}

ModelRegistry::~ModelRegistry() {
  downloads_.reset();  // cancels and joins the downloads (their callbacks take mu_)
  {
    engine::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (loader_.joinable()) loader_.join();
  // The models go with the entries (a lease outliving the registry would be a bug).
}

void ModelRegistry::add_entry(const ModelOptions& o, const std::string& id, const std::string& source) {
  if (find(id)) return;  // the first source of an id wins: --model, presets, the directory, the cache
  auto e = std::make_shared<ModelEntry>();
  e->id = id;
  e->options = o;
  e->source = source;
  if (!o.alias.empty() && o.alias != id) e->aliases.push_back(o.alias);
  stat_file(*e);
  entries_.push_back(std::move(e));
}

void ModelRegistry::scan() {
  const RouterOptions& r = options_.router;
  const auto options_for = [&](const std::string& id, const std::string& path) {
    if (r.options_for) return r.options_for(id, path);
    ModelOptions o = options_.model;
    o.path = path;
    o.alias = id;
    return o;
  };
  if (!r.models_dir.empty()) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(r.models_dir, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      if (it.depth() > 8) it.disable_recursion_pending();
      const std::string name = it->path().filename().string();
      if (!it->is_regular_file(ec) || it->path().extension() != ".gguf") continue;
      if (gguf::is_later_split_part(name) || name.find("mmproj") != std::string::npos) continue;  // projectors are not models
      files.push_back(it->path());
    }
    if (ec) spdlog::warn("--models-dir {}: {}", r.models_dir, ec.message());
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
      const std::string id = dir_id(p.lexically_relative(r.models_dir));
      if (!find(id)) add_entry(options_for(id, p.string()), id, "dir");
    }
  }
  if (r.cached_models) {
    for (const auto& [id, path] : r.cached_models()) {
      if (!find(id)) add_entry(options_for(id, path), id, "cache");
    }
  }
}

void ModelRegistry::start() {
  {
    engine::MutexLock lock(mu_);
    if (!options_.model.path.empty() || !router_) {
      const ModelOptions& o = options_.model;
      add_entry(o, o.alias.empty() ? default_model_id(o.path) : o.alias, "model");
      if (!router_) entries_.back()->aliases.clear();
    }
    for (const ModelOptions& o : options_.preset_models) {
      add_entry(o, o.alias.empty() ? default_model_id(o.path) : o.alias, "preset");
    }
    scan();
    for (const auto& e : entries_) {
      if (!router_ || e->options.load_on_startup || e->source == "model") enqueue(e, true);
    }
    if (router_) {
      spdlog::info("router: {} models known (--models-max {}, --models-ram {} MiB{}); loaded on {}", entries_.size(),
                   options_.router.models_max, options_.router.models_ram >> 20,
                   options_.router.models_ram == 0 ? " = no limit" : "",
                   options_.router.autoload ? "their first request" : "POST /models/load (--no-models-autoload)");
    }
  }
  loader_ = std::thread([this] { loader_loop(); });
}

bool ModelRegistry::wait_first_load(std::string& error) {
  engine::MutexLock lock(mu_);
  if (entries_.empty()) return true;
  const std::shared_ptr<ModelEntry> e = entries_.front();
  while (e->state == ModelState::kLoading && !stopping_) cv_.wait(mu_);
  error = e->error;
  return e->state == ModelState::kLoaded;
}

// ---- lookup ----

std::shared_ptr<ModelEntry> ModelRegistry::find(const std::string& id) const {
  if (!router_) return entries_.empty() ? nullptr : entries_.front();  // any id: the one model
  for (const auto& e : entries_) {
    if (e->id == id || std::find(e->aliases.begin(), e->aliases.end(), id) != e->aliases.end()) return e;
  }
  return nullptr;
}

std::shared_ptr<ModelEntry> ModelRegistry::lookup(const std::string& id) {
  std::shared_ptr<ModelEntry> e = find(id);
  if (e || !router_) return e;
  scan();  // a file added since
  if ((e = find(id))) return e;
  const std::string cached = cached_id(id);
  return cached.empty() ? nullptr : find(cached);
}

std::string ModelRegistry::cached_id(const std::string& name) const {
  if (!router_ || !ModelDownloads::is_hub_name(name)) return {};
  try {
    const hub::detail::Spec spec = hub::detail::parse_spec(name);
    if (spec.kind != hub::detail::Spec::Kind::kRepo) return {};
    const std::optional<hub::CacheEntry> c =
        hub::Cache(options_.router.hub.cache_dir).find(spec.tag.empty() ? spec.repo : spec.repo + ":" + spec.tag);
    return c ? c->id : std::string();
  } catch (const std::exception&) {  // an unreadable cache: not there
    return {};
  }
}

void ModelRegistry::throw_unknown(const std::string& id) const {
  std::string known;
  for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e->id;
  throw ApiError(404, "The model '" + excerpt(id) + "' does not exist; models here: " + (known.empty() ? "none" : known),
                 "invalid_request_error", "model", "model_not_found");
}

net::awaitable<std::shared_ptr<ModelLease>> ModelRegistry::acquire(const std::string& id, RequestContext& ctx) {
  const auto deadline = Clock::now() + std::chrono::seconds(std::max<int64_t>(options_.router.load_wait_s, 0));
  net::steady_timer timer(ctx.executor);
  auto pause = std::chrono::milliseconds(5);
  std::optional<uint64_t> waited_for;  // the load generation this request waits on
  for (;;) {
    {
      engine::MutexLock lock(mu_);
      if (draining_) throw retry_later("the server is shutting down", "draining");
      const std::shared_ptr<ModelEntry> e = lookup(id);
      if (!e) throw_unknown(id);
      if (e->state == ModelState::kLoaded) {
        ++e->in_flight;
        e->last_used = Clock::now();
        co_return std::make_shared<ModelLease>(*this, e, e->loaded);
      }
      if (!router_) {
        if (e->state == ModelState::kFailed) throw ApiError(500, "the model failed to load: " + e->error, "server_error");
        throw retry_later("the model is still loading; retry shortly", "loading");
      }
      if (e->state == ModelState::kFailed && waited_for && *waited_for != e->generation) {
        throw ApiError(500, "model " + e->id + " failed to load: " + e->error, "server_error", "model", "load_failed");
      }
      const bool idle = e->state == ModelState::kUnloaded || e->state == ModelState::kSleeping ||
                        e->state == ModelState::kFailed;
      if (idle && !options_.router.autoload && !waited_for) {
        throw ApiError(400, "model " + e->id + " is not loaded (--no-models-autoload): POST /models/load first",
                       "invalid_request_error", "model", "model_not_loaded");
      }
      if (idle) enqueue(e, true);
      if (!waited_for) waited_for = e->generation;
    }
    if (ctx.disconnect->fired()) throw ApiError(503, "request cancelled (client gone)", "server_error");
    if (Clock::now() > deadline) {
      throw retry_later("model " + excerpt(id) + " is still loading (waited --models-load-wait seconds); retry shortly",
                        "model_loading");
    }
    timer.expires_after(pause);
    co_await timer.async_wait(net::use_awaitable);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));  // a loaded model is found within 20 ms
  }
}

std::optional<ModelLease> ModelRegistry::try_acquire(const std::string& id) {
  engine::MutexLock lock(mu_);
  const std::shared_ptr<ModelEntry> e = lookup(id);
  if (!e) throw_unknown(id);
  if (e->state != ModelState::kLoaded) return std::nullopt;
  ++e->in_flight;
  return ModelLease(*this, e, e->loaded);
}

std::optional<ModelLease> ModelRegistry::any_loaded() {
  engine::MutexLock lock(mu_);
  std::shared_ptr<ModelEntry> only;
  for (const auto& e : entries_) {
    if (e->state != ModelState::kLoaded) continue;
    if (only) return std::nullopt;
    only = e;
  }
  if (!only) return std::nullopt;
  ++only->in_flight;
  return ModelLease(*this, only, only->loaded);
}

std::string ModelRegistry::load(const std::string& id) {
  {
    engine::MutexLock lock(mu_);
    if (draining_) throw retry_later("the server is shutting down", "draining");
    const std::shared_ptr<ModelEntry> e = lookup(id);
    if (e) {
      if (e->state == ModelState::kUnloaded || e->state == ModelState::kSleeping || e->state == ModelState::kFailed) {
        enqueue(e, true);
      }
      return e->state == ModelState::kLoaded ? "loaded" : "loading";
    }
    if (!downloads_ || !ModelDownloads::is_hub_name(id)) throw_unknown(id);
  }
  downloads_->start(id);  // without mu_: it may join a finished download whose callback takes it
  engine::MutexLock lock(mu_);
  if (std::find(load_when_downloaded_.begin(), load_when_downloaded_.end(), id) == load_when_downloaded_.end()) {
    load_when_downloaded_.push_back(id);
  }
  return "downloading";
}

void ModelRegistry::pull(const std::string& spec) {
  if (!downloads_) {
    throw ApiError(403,
                   router_ ? "this server does not download models for clients (--no-models-pull)"
                           : "this server serves one model (start it with --models-dir or --models-preset to pull more)",
                   "permission_error", "model", "pull_disabled");
  }
  downloads_->start(spec);
}

std::optional<DownloadState> ModelRegistry::download(const std::string& spec) const {
  return downloads_ ? downloads_->state(spec) : std::nullopt;
}

bool ModelRegistry::remove_download(const std::string& name) {
  std::string id;
  {
    engine::MutexLock lock(mu_);
    const std::shared_ptr<ModelEntry> e = lookup(name);
    if (!e) throw_unknown(name);
    if (e->source != "cache") {
      throw ApiError(400, "model " + e->id + " is a file the server was given (" + e->options.path +
                              "), not a download: remove it from disk yourself",
                     "invalid_request_error", "model", "not_a_download");
    }
    if (e->state == ModelState::kLoaded && e->in_flight == 0) enqueue(e, false);
    if (e->state != ModelState::kUnloaded && e->state != ModelState::kSleeping && e->state != ModelState::kFailed) {
      return false;
    }
    id = e->id;
    entries_.erase(std::find(entries_.begin(), entries_.end(), e));
    emit({{"type", "status"}, {"model", id}, {"status", "deleted"}});
  }
  try {
    hub::Cache(options_.router.hub.cache_dir).remove(id);
  } catch (const hub::HubError& e) {
    throw ApiError(500, "cannot remove " + id + " from the download cache: " + e.what(), "server_error");
  }
  return true;
}

void ModelRegistry::add_alias(const std::string& id, const std::string& alias) {
  engine::MutexLock lock(mu_);
  const std::shared_ptr<ModelEntry> e = lookup(id);
  if (!e) throw_unknown(id);
  if (alias.empty() || alias.size() > 256) throw invalid_field("destination", "'destination' must be a name of 1 to 256 bytes");
  const std::shared_ptr<ModelEntry> other = router_ ? find(alias) : nullptr;
  if (other == e) return;
  if (other) {
    throw ApiError(400, "'" + excerpt(alias) + "' names model " + other->id + " already", "invalid_request_error",
                   "destination");
  }
  e->aliases.push_back(alias);
}

// A finished download: the cache has a new model (a rescan lists it); load it when POST
// /models/load asked for it.
void ModelRegistry::downloaded(const DownloadState& d) {
  engine::MutexLock lock(mu_);
  const auto asked = std::find(load_when_downloaded_.begin(), load_when_downloaded_.end(), d.spec);
  const bool load = asked != load_when_downloaded_.end();
  if (load) load_when_downloaded_.erase(asked);
  if (d.status != DownloadState::Status::kDone || stopping_) return;
  scan();
  const std::shared_ptr<ModelEntry> e = find(d.id);
  if (!e) return;
  emit_status(*e);
  if (load && !draining_ && (e->state == ModelState::kUnloaded || e->state == ModelState::kSleeping ||
                             e->state == ModelState::kFailed)) {
    enqueue(e, true);
  }
}

void ModelRegistry::unload(const std::string& id) {
  engine::MutexLock lock(mu_);
  const std::shared_ptr<ModelEntry> e = lookup(id);
  if (!e) throw_unknown(id);
  if (e->state == ModelState::kLoaded) enqueue(e, false);
}

namespace {

// When the loader will unload an idle model, as Unix seconds (0: not planned).
int64_t expiry_unix(const ModelEntry& e, int64_t sleep_idle_s) {
  std::optional<Clock::time_point> at = e.expires;
  if (at == Clock::time_point::max()) return 0;
  if (!at && sleep_idle_s > 0) at = e.last_used + std::chrono::seconds(sleep_idle_s);
  if (!at) return 0;
  const auto wall = std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(*at - Clock::now());
  return std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
}

}  // namespace

std::vector<ModelStatus> ModelRegistry::list() {
  engine::MutexLock lock(mu_);
  if (router_) scan();
  std::vector<ModelStatus> out;
  for (const auto& e : entries_) {
    ModelStatus s;
    s.id = e->id;
    s.aliases = e->aliases;
    s.path = e->options.path;
    s.source = e->source;
    s.state = e->state;
    s.error = e->error;
    s.file_bytes = e->file_bytes;
    s.memory_bytes = e->state == ModelState::kLoaded ? e->memory_bytes : 0;
    s.created = e->created;
    s.in_flight = e->in_flight;
    s.facts = e->facts;
    if (e->state == ModelState::kLoaded) s.expires_at = expiry_unix(*e, options_.router.sleep_idle_s);
    if (e->loaded) s.kind = model_kind_json(e->loaded->app);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<nlohmann::json> ModelRegistry::events_since(uint64_t& cursor) const {
  engine::MutexLock lock(mu_);
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& ev : events_) {
    if (ev["seq"].get<uint64_t>() > cursor) out.push_back(ev);
  }
  if (!out.empty()) cursor = out.back()["seq"].get<uint64_t>();
  return out;
}

void ModelRegistry::emit(nlohmann::json event) const {
  event["seq"] = next_event_++;
  events_.push_back(std::move(event));
  while (events_.size() > kEventLog) events_.pop_front();
}

void ModelRegistry::drain() {
  engine::MutexLock lock(mu_);
  draining_ = true;
  for (const auto& e : entries_) {
    if (e->loaded) {
      e->loaded->app.draining = true;
      e->loaded->scheduler->drain();
    }
  }
}

void ModelRegistry::render_metrics(MetricsPage& page) const {
  std::vector<std::pair<std::shared_ptr<ModelEntry>, std::shared_ptr<LoadedModel>>> all;
  {
    engine::MutexLock lock(mu_);
    for (const auto& e : entries_) all.emplace_back(e, e->loaded);
  }
  for (const auto& [e, loaded] : all) {
    const engine::SchedulerStats stats = loaded ? loaded->scheduler->stats() : engine::SchedulerStats{};
    e->metrics->render_model(page, stats, e->id);
  }
}

bool ModelRegistry::draining() const {
  engine::MutexLock lock(mu_);
  return draining_;
}

bool ModelRegistry::idle() const {
  engine::MutexLock lock(mu_);
  for (const auto& e : entries_) {
    if (e->loaded && !e->loaded->scheduler->idle()) return false;
  }
  return true;
}

void ModelRegistry::cancel_all() {
  engine::MutexLock lock(mu_);
  for (const auto& e : entries_) {
    if (e->loaded) e->loaded->scheduler->cancel_all();
  }
}

// ---- the loader thread ----

void ModelRegistry::emit_status(const ModelEntry& e) const {
  nlohmann::json ev = {{"type", "status"}, {"model", e.id}, {"status", state_name(e.state)}};
  if (e.state == ModelState::kFailed) ev["error"] = e.error;
  emit(std::move(ev));
}

void ModelRegistry::enqueue(const std::shared_ptr<ModelEntry>& e, bool load, ModelState after) {
  e->state = load ? ModelState::kLoading : ModelState::kUnloading;
  emit_status(*e);
  jobs_.push_back({load, e, after});
  cv_.notify_all();
}

void ModelRegistry::loader_loop() {
  for (;;) {
    Job job;
    {
      engine::MutexLock lock(mu_);
      if (stopping_) return;
      if (jobs_.empty() && router_) sleep_idle();
      if (jobs_.empty()) cv_.wait_for(mu_, std::chrono::seconds(1));
      if (stopping_) return;
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
    }
    if (!job.entry) {
      // No load queued: the memory an unloaded model left for the next load goes back to the
      // system (outside the lock: unmapping gigabytes takes a while).
      engine::PackedWeights::release_kept();
      continue;
    }
    if (job.load) {
      run_load(job.entry);
    } else {
      run_unload(job.entry, job.after);
    }
    cv_.notify_all();
  }
}

// Models idle past --sleep-idle-seconds or their keep_alive are unloaded, as sleeping.
void ModelRegistry::sleep_idle() {
  const auto now = Clock::now();
  const auto idle_limit = std::chrono::seconds(options_.router.sleep_idle_s);
  for (const auto& e : entries_) {
    if (e->state != ModelState::kLoaded || e->in_flight > 0) continue;
    const bool expired = e->expires && now >= *e->expires;
    const bool kept = e->expires && now < *e->expires;
    const bool slept = options_.router.sleep_idle_s > 0 && now - e->last_used >= idle_limit && !kept;
    if (expired || slept) {
      spdlog::info("model {}: idle for {:.0f} s: unloading", e->id,
                   std::chrono::duration<double>(now - e->last_used).count());
      enqueue(e, false, ModelState::kSleeping);
    }
  }
}

// Unloads idle models, least recently used first, until `need` more bytes and one more model
// fit --models-ram and --models-max. False (with `why`) when the rest are busy or it can't fit.
bool ModelRegistry::make_room(const ModelEntry& e, uint64_t need, std::string& why) {
  const RouterOptions& r = options_.router;
  const auto budget = static_cast<uint64_t>(std::max<int64_t>(r.models_ram, 0));
  if (budget > 0 && need > budget) {
    why = fmt::format("model {} needs about {} MiB, more than --models-ram ({} MiB)", e.id, need >> 20, budget >> 20);
    return false;
  }
  for (;;) {
    int loaded = 0;
    uint64_t used = 0;
    ModelEntry* victim = nullptr;
    for (const auto& x : entries_) {
      if (x.get() == &e || (x->state != ModelState::kLoaded && x->state != ModelState::kUnloading)) continue;
      ++loaded;
      used += x->memory_bytes;
      // (an idle model whose unload is queued behind this load counts as idle: freed here)
      if (x->in_flight == 0 && (!victim || x->last_used < victim->last_used)) {
        victim = x.get();
      }
    }
    const bool count_ok = r.models_max <= 0 || loaded + 1 <= r.models_max;
    const bool ram_ok = budget == 0 || used + need <= budget;
    if (count_ok && ram_ok) return true;
    if (!victim) {
      why = fmt::format("no room for model {}: {} models loaded (--models-max {}), {} MiB of --models-ram {} MiB in "
                        "use, and none of them idle",
                        e.id, loaded, r.models_max, used >> 20, budget >> 20);
      return false;
    }
    spdlog::info("model {}: unloading the least recently used idle model {} to make room", e.id, victim->id);
    victim->state = ModelState::kUnloading;
    emit_status(*victim);
    free_model(*victim, ModelState::kUnloaded);
  }
}

// Frees the model's memory (outside the lock: its scheduler thread is joined) and sets `after`.
void ModelRegistry::free_model(ModelEntry& e, ModelState after) {
  std::shared_ptr<LoadedModel> model = std::move(e.loaded);
  mu_.unlock();
  model.reset();
  mu_.lock();
  e.state = after;
  e.expires.reset();
  emit_status(e);
}

void ModelRegistry::fail_load(ModelEntry& e, const std::string& why) {
  e.state = ModelState::kFailed;
  e.error = why;
  ++e.generation;
  emit_status(e);
  spdlog::error("cannot load model {}: {}", e.id, why);
}

void ModelRegistry::run_load(const std::shared_ptr<ModelEntry>& e) {
  {
    engine::MutexLock lock(mu_);
    const uint64_t need = e->memory_bytes > 0 ? e->memory_bytes : e->file_bytes;
    const auto deadline = Clock::now() + std::chrono::seconds(std::max<int64_t>(options_.router.load_wait_s, 1));
    std::string why;
    while (!make_room(*e, need, why)) {
      if (stopping_ || Clock::now() > deadline || why.find("more than --models-ram") != std::string::npos) {
        fail_load(*e, why);
        return;
      }
      cv_.wait_for(mu_, std::chrono::milliseconds(50));  // a busy model's requests end
    }
  }
  int last_percent = -1;
  auto progress = [&](uint64_t done, uint64_t total) {
    const int percent = total > 0 ? static_cast<int>(100 * done / total) : 100;
    if (percent / 5 == last_percent / 5 && percent != 100) return;
    last_percent = percent;
    show_load_progress(done, total);
    engine::MutexLock lock(mu_);
    emit({{"type", "progress"}, {"model", e->id}, {"phase", "loading"}, {"done", done}, {"total", total}});
  };
  std::unique_ptr<LoadedModel> model;
  std::string failure;
  try {
    model = load_model(e->options, e->id, shared_, progress);
    model->app.metrics = e->metrics;
  } catch (const std::exception& ex) {
    failure = ex.what();
  }
  engine::MutexLock lock(mu_);
  if (!failure.empty()) {
    fail_load(*e, failure);
    return;
  }
  const uint64_t budget = static_cast<uint64_t>(std::max<int64_t>(options_.router.models_ram, 0));
  if (budget > 0 && model->memory_bytes > budget) {
    const uint64_t bytes = model->memory_bytes;
    mu_.unlock();
    model.reset();
    mu_.lock();
    fail_load(*e, fmt::format("model {} takes {} MiB (weights, KV cache and states), more than --models-ram ({} MiB)",
                              e->id, bytes >> 20, budget >> 20));
    return;
  }
  std::string why;
  if (!make_room(*e, model->memory_bytes, why)) spdlog::warn("{} (over the budget until they finish)", why);
  e->memory_bytes = model->memory_bytes;
  e->loaded = std::shared_ptr<LoadedModel>(std::move(model));
  e->state = ModelState::kLoaded;
  e->expires.reset();
  e->error.clear();
  ++e->generation;
  e->last_used = Clock::now();
  e->expires.reset();
  emit_status(*e);
}

// An unload waits for the model's requests (new ones wait for it to end), up to the shutdown
// grace, then cancels the rest.
void ModelRegistry::run_unload(const std::shared_ptr<ModelEntry>& e, ModelState after) {
  engine::MutexLock lock(mu_);
  if (!e->loaded) return;
  e->loaded->scheduler->drain();
  const auto grace = Clock::now() + std::chrono::seconds(options_.shutdown_grace_s);
  while (e->in_flight > 0 && Clock::now() < grace && !stopping_) cv_.wait_for(mu_, std::chrono::milliseconds(20));
  if (e->in_flight > 0) {
    spdlog::warn("model {}: unloading: cancelling its {} requests still running", e->id, e->in_flight);
    e->loaded->scheduler->cancel_all();
    while (e->in_flight > 0 && !stopping_) cv_.wait_for(mu_, std::chrono::milliseconds(20));
  }
  free_model(*e, after);
}

}  // namespace server

namespace server {

namespace {

[[noreturn]] void throw_unnamed(ModelRegistry& models, const char* where) {
  std::string known;
  for (const ModelStatus& s : models.list()) known += (known.empty() ? "" : ", ") + s.id;
  throw ApiError(400, std::string("the request names no model (") + where + "); this server serves several: " +
                          (known.empty() ? "none yet" : known),
                 "invalid_request_error", "model");
}

}  // namespace

net::awaitable<std::shared_ptr<ModelLease>> lease_for_body(ModelRegistry& models, HttpRequest& req, RequestContext& ctx) {
  if (!models.router()) co_return co_await models.acquire("", ctx);
  const RoutingFields fields = co_await models.work().run([&req] { return peek_routing(req.body); });
  co_return co_await lease_for_fields(models, fields, ctx);
}

net::awaitable<std::shared_ptr<ModelLease>> lease_for_fields(ModelRegistry& models, const RoutingFields& fields,
                                                             RequestContext& ctx) {
  if (!fields.model || fields.model->empty()) throw_unnamed(models, "the \"model\" field");
  std::optional<std::chrono::milliseconds> keep_alive;
  if (fields.keep_alive) keep_alive = parse_keep_alive(*fields.keep_alive);
  std::shared_ptr<ModelLease> lease = co_await models.acquire(*fields.model, ctx);
  if (keep_alive) lease->keep_alive(*keep_alive);
  co_return lease;
}

net::awaitable<std::shared_ptr<ModelLease>> lease_for_query(ModelRegistry& models, HttpRequest& req, RequestContext& ctx) {
  std::string id;
  if (models.router()) {
    const auto it = req.query.find("model");
    if (it == req.query.end() || it->second.empty()) throw_unnamed(models, "?model=");
    id = it->second;
  }
  co_return co_await models.acquire(id, ctx);
}

}  // namespace server
