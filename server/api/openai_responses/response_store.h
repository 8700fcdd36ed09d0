// The responses /v1/responses keeps for previous_response_id and GET / DELETE /v1/responses/{id}:
// in memory, bounded by count, bytes and age; the oldest go first.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runtime/thread_annotations.h"
#include "server/api/core/conversation.h"

namespace server {

struct ResponseStoreLimits {
  size_t max_responses = 1000;
  size_t max_bytes = size_t{64} << 20;       // of the responses' JSON and conversations' text
  std::chrono::seconds max_age{3600};
};

// One stored response: its object (what GET returns) and the conversation it ended, without the
// request's instructions (a continuation does not inherit them): the earlier turns, its input and
// its output, as the core's messages.
struct StoredResponse {
  nlohmann::json object;
  std::vector<Message> conversation;
};

// Thread-safety: every method may be called from any thread.
class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ResponseStore(ResponseStoreLimits limits = {});

  // Keeps `response` under `id` (replacing one of that id), then drops the oldest until the bounds
  // hold; a response larger than max_bytes is not kept.
  void put(const std::string& id, std::shared_ptr<const StoredResponse> response);
  // The response, or null when it was never stored, was deleted, or has gone (age, bounds).
  std::shared_ptr<const StoredResponse> get(const std::string& id);
  // Whether it was there.
  bool erase(const std::string& id);
  size_t size();

  // The bytes a response counts for.
  static size_t bytes_of(const StoredResponse& r);

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const StoredResponse> response;
    size_t bytes = 0;
    Clock::time_point stored;
  };
  void drop(std::list<Entry>::iterator it) GGUFD_REQUIRES(mutex_);
  void expire(Clock::time_point now) GGUFD_REQUIRES(mutex_);

  ResponseStoreLimits limits_;
  engine::Mutex mutex_;
  std::list<Entry> order_ GGUFD_GUARDED_BY(mutex_);  // oldest first
  std::map<std::string, std::list<Entry>::iterator> by_id_ GGUFD_GUARDED_BY(mutex_);
  size_t bytes_ GGUFD_GUARDED_BY(mutex_) = 0;
};

}  // namespace server
