#include "server/api/openai_responses/response_store.h"

namespace server {

ResponseStore::ResponseStore(ResponseStoreLimits limits) : limits_(limits) {}

size_t ResponseStore::bytes_of(const StoredResponse& r) {
  size_t bytes = r.object.dump().size();
  for (const Message& m : r.conversation) {
    bytes += sizeof(Message) + m.reasoning.size() + m.extra.dump().size();
    for (const std::string& t : m.texts) bytes += t.size();
    for (const CallRecord& c : m.calls) bytes += c.name.size() + c.arguments.dump().size() + (c.id ? c.id->size() : 0);
  }
  return bytes;
}

void ResponseStore::drop(std::list<Entry>::iterator it) {
  bytes_ -= it->bytes;
  by_id_.erase(it->id);
  order_.erase(it);
}

void ResponseStore::expire(Clock::time_point now) {
  while (!order_.empty() && now - order_.front().stored > limits_.max_age) drop(order_.begin());
}

void ResponseStore::put(const std::string& id, std::shared_ptr<const StoredResponse> response) {
  const size_t bytes = bytes_of(*response);
  const auto now = Clock::now();
  engine::MutexLock lock(mutex_);
  if (auto it = by_id_.find(id); it != by_id_.end()) drop(it->second);
  expire(now);
  if (bytes > limits_.max_bytes || limits_.max_responses == 0) return;
  while (!order_.empty() && (order_.size() + 1 > limits_.max_responses || bytes_ + bytes > limits_.max_bytes)) {
    drop(order_.begin());
  }
  order_.push_back({id, std::move(response), bytes, now});
  by_id_[id] = std::prev(order_.end());
  bytes_ += bytes;
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id) {
  engine::MutexLock lock(mutex_);
  expire(Clock::now());
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second->response;
}

bool ResponseStore::erase(const std::string& id) {
  engine::MutexLock lock(mutex_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  drop(it->second);
  return true;
}

size_t ResponseStore::size() {
  engine::MutexLock lock(mutex_);
  return order_.size();
}

}  // namespace server
