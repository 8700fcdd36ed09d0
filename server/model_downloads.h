// Downloads the router runs on clients' behalf: POST /models/load of a Hub model not on disk yet,
// Ollama's POST /api/pull. The files go into the download cache (server/hub), where the router
// then finds the model.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/thread_annotations.h"
#include "server/hub/hub.h"

namespace server {

// One download as callers see it.
struct DownloadState {
  enum class Status { kRunning, kDone, kFailed };
  std::string spec;        // as asked ("org/repo:Q4_K_M", "hf.co/org/repo", "hf://org/repo/f.gguf")
  Status status = Status::kRunning;
  hub::Progress progress;  // the last event (file, bytes, phase, sha256)
  struct File {            // each file seen downloading, verifying or found cached
    std::string name, sha256;
    uint64_t done = 0, total = 0;
  };
  std::vector<File> files;
  std::string id;          // kDone: the cache id the router lists it under
  std::string error;       // kFailed: why
  uint64_t version = 0;    // grows with every change, so pollers see news
};
const char* download_status_name(DownloadState::Status s);

// Pulls Hub models on background threads, at most kMaxRunning at once and each spec once at a time
// (asking again for a running spec joins it; a finished one is pulled again, which costs one file
// listing when cached). Every state change goes to `on_event` as a registry event
// ({"type": "download", ...}); a finished pull goes to `on_done` (the router rescans the cache).
// Only Hub names are accepted: plain https URLs stay with `ggufd pull` on the host, so clients
// cannot make the server fetch arbitrary addresses.
// Ownership: owns its threads; the destructor cancels running pulls (their partial files stay for
// a resume) and joins them. Thread-safety: every method may be called from any thread; the
// callbacks run on the download threads.
class ModelDownloads {
 public:
  static constexpr int kMaxRunning = 2;

  ModelDownloads(hub::PullOptions options, std::function<void(nlohmann::json)> on_event,
                 std::function<void(const DownloadState&)> on_done);
  ~ModelDownloads();
  ModelDownloads(const ModelDownloads&) = delete;
  ModelDownloads& operator=(const ModelDownloads&) = delete;

  // Whether `name` is a Hub model name this class can pull (org/repo[:QUANT], hf.co/...,
  // hf://...). Does not touch the network.
  static bool is_hub_name(const std::string& name);
  // Starts pulling `spec` (or joins the pull under way). Throws ApiError: 400 for a name that is
  // not a Hub model, 503 when offline or when kMaxRunning pulls run already.
  void start(const std::string& spec);
  // The download of `spec` (running or finished), or nullopt when none was started.
  std::optional<DownloadState> state(const std::string& spec) const;

 private:
  struct Job {
    DownloadState state;
    std::atomic<bool> cancel{false};
    std::thread thread;
  };
  void run(Job& job);
  void update(Job& job, const std::function<void(DownloadState&)>& change);

  const hub::PullOptions options_;
  const std::function<void(nlohmann::json)> on_event_;
  const std::function<void(const DownloadState&)> on_done_;
  mutable engine::Mutex mu_;
  std::map<std::string, std::unique_ptr<Job>> jobs_ GGUFD_GUARDED_BY(mu_);  // by spec
  std::vector<std::unique_ptr<Job>> finished_ GGUFD_GUARDED_BY(mu_);       // replaced jobs to join
  bool stopping_ GGUFD_GUARDED_BY(mu_) = false;
};

}  // namespace server
