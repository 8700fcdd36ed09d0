#include "engine/text/grammar/grammar_cache.h"

namespace engine::grammar {

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const std::string& key,
                                                         const std::function<std::shared_ptr<const Grammar>()>& build) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  auto compiled = std::make_shared<const CompiledGrammar>(build(), vocab_, max_visits_);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace engine::grammar
