#include "server/model_downloads.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "server/api/api_error.h"
#include "server/api/request_json.h"
#include "server/hub/spec.h"

namespace server {

namespace {

using Clock = std::chrono::steady_clock;

nlohmann::json event_of(const DownloadState& s) {
  nlohmann::json ev = {{"type", "download"}, {"model", s.spec}, {"status", download_status_name(s.status)}};
  if (s.status == DownloadState::Status::kRunning) {
    ev["phase"] = hub::phase_name(s.progress.phase);
    ev["file"] = s.progress.file;
    ev["completed"] = s.progress.bytes_done;
    ev["total"] = s.progress.bytes_total;
  }
  if (s.status == DownloadState::Status::kDone) ev["id"] = s.id;
  if (s.status == DownloadState::Status::kFailed) ev["error"] = s.error;
  return ev;
}

// The event, and the file it is about: one being downloaded or verified, or one found cached
// (kDone with its checksum). The pull's last event (kDone, named by the cache id) is no file.
void record(DownloadState& s, const hub::Progress& p) {
  s.progress = p;
  const bool file = p.phase == hub::Phase::kDownloading || p.phase == hub::Phase::kVerifying ||
                    (p.phase == hub::Phase::kDone && !p.sha256.empty());
  if (!file) return;
  for (DownloadState::File& f : s.files) {
    if (f.name == p.file) {
      f.done = p.bytes_done;
      f.total = p.bytes_total;
      return;
    }
  }
  s.files.push_back({p.file, p.sha256, p.bytes_done, p.bytes_total});
}

}  // namespace

const char* download_status_name(DownloadState::Status s) {
  switch (s) {
    case DownloadState::Status::kRunning: return "downloading";
    case DownloadState::Status::kDone: return "downloaded";
    case DownloadState::Status::kFailed: return "failed";
  }
  return "?";
}

ModelDownloads::ModelDownloads(hub::PullOptions options, std::function<void(nlohmann::json)> on_event,
                               std::function<void(const DownloadState&)> on_done)
    : options_(std::move(options)), on_event_(std::move(on_event)), on_done_(std::move(on_done)) {}

ModelDownloads::~ModelDownloads() {
  std::vector<std::unique_ptr<Job>> all;
  {
    engine::MutexLock lock(mu_);
    stopping_ = true;
    for (auto& [spec, job] : jobs_) all.push_back(std::move(job));
    for (auto& job : finished_) all.push_back(std::move(job));
    jobs_.clear();
    finished_.clear();
  }
  for (auto& job : all) job->cancel = true;
  for (auto& job : all) {
    if (job->thread.joinable()) job->thread.join();
  }
}

bool ModelDownloads::is_hub_name(const std::string& name) {
  try {
    return hub::detail::parse_spec(name).kind != hub::detail::Spec::Kind::kUrl;
  } catch (const hub::HubError&) {
    return false;
  }
}

void ModelDownloads::start(const std::string& spec) {
  if (!is_hub_name(spec)) {
    throw ApiError(400, "'" + excerpt(spec) + "' is not a Hugging Face model name: expected org/repo[:QUANT], " +
                            "hf.co/org/repo[:QUANT] or hf://org/repo/file.gguf (URLs: `ggufd pull` on the host)",
                   "invalid_request_error", "model", "bad_model_name");
  }
  if (options_.offline) {
    throw ApiError(503, "this server runs with --offline: it serves downloaded models only and cannot fetch " +
                            excerpt(spec),
                   "server_error", "model", "offline");
  }
  std::vector<std::unique_ptr<Job>> reap;  // finished jobs' threads, joined outside the lock
  {
    engine::MutexLock lock(mu_);
    if (stopping_) throw ApiError(503, "the server is shutting down", "server_error", std::nullopt, "draining");
    const auto it = jobs_.find(spec);
    if (it != jobs_.end() && it->second->state.status == DownloadState::Status::kRunning) return;
    int running = 0;
    for (const auto& [s, job] : jobs_) running += job->state.status == DownloadState::Status::kRunning;
    if (running >= kMaxRunning) {
      ApiError busy(503, "already downloading " + std::to_string(running) + " models; retry when one is done",
                    "server_error", std::nullopt, "downloads_busy");
      busy.retry_after = 5;
      throw busy;
    }
    if (it != jobs_.end()) {
      finished_.push_back(std::move(it->second));
      jobs_.erase(it);
    }
    for (auto f = finished_.begin(); f != finished_.end();) {
      if ((*f)->state.status != DownloadState::Status::kRunning) {
        reap.push_back(std::move(*f));
        f = finished_.erase(f);
      } else {
        ++f;
      }
    }
    auto job = std::make_unique<Job>();
    job->state.spec = spec;
    job->state.version = 1;
    Job& j = *job;
    jobs_.emplace(spec, std::move(job));
    j.thread = std::thread([this, &j] { run(j); });
  }
  spdlog::info("download of {} started", spec);
  for (auto& job : reap) {
    if (job->thread.joinable()) job->thread.join();
  }
}

std::optional<DownloadState> ModelDownloads::state(const std::string& spec) const {
  engine::MutexLock lock(mu_);
  const auto it = jobs_.find(spec);
  if (it == jobs_.end()) return std::nullopt;
  return it->second->state;
}

// Applies `change` and tells the registry: every phase change and the end, and the bytes at most
// twice a second (the event log is shared with every model's status).
void ModelDownloads::update(Job& job, const std::function<void(DownloadState&)>& change) {
  nlohmann::json ev;
  {
    engine::MutexLock lock(mu_);
    const DownloadState before = job.state;
    change(job.state);
    ++job.state.version;
    static thread_local Clock::time_point last_sent{};  // one download per thread
    const bool news = job.state.status != before.status || job.state.progress.phase != before.progress.phase ||
                      job.state.progress.file != before.progress.file;
    if (!news && Clock::now() - last_sent < std::chrono::milliseconds(500)) return;
    last_sent = Clock::now();
    ev = event_of(job.state);
  }
  if (on_event_) on_event_(std::move(ev));
}

void ModelDownloads::run(Job& job) {
  hub::PullResult result;
  std::string error;
  try {
    result = hub::pull(
        job.state.spec, options_,
        [&](const hub::Progress& p) { update(job, [&](DownloadState& s) { record(s, p); }); }, &job.cancel);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (error.empty()) {
    spdlog::info("download of {} done: {} ({} MiB)", job.state.spec, result.id, result.bytes >> 20);
  } else {
    spdlog::warn("download of {} failed: {}", job.state.spec, error);
  }
  update(job, [&](DownloadState& s) {
    s.status = error.empty() ? DownloadState::Status::kDone : DownloadState::Status::kFailed;
    s.id = result.id;
    s.error = error;
  });
  DownloadState done;
  {
    engine::MutexLock lock(mu_);
    done = job.state;
  }
  if (on_done_) on_done_(done);
}

}  // namespace server
