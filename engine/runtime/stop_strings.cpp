#include "engine/runtime/stop_strings.h"

#include <algorithm>

namespace engine {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopMatcher::Result StopMatcher::push(std::string_view text) {
  pending_.append(text);
  Result r;
  if (stops_.empty()) {
    r.text = std::move(pending_);
    pending_.clear();
    return r;
  }
  // The earliest complete match wins.
  size_t first = std::string::npos;
  const std::string* matched = nullptr;
  for (const std::string& s : stops_) {
    const size_t at = pending_.find(s);
    if (at < first) {
      first = at;
      matched = &s;
    }
  }
  if (matched != nullptr) {
    r.text = pending_.substr(0, first);
    r.stopped = true;
    r.matched = *matched;
    pending_.clear();
    return r;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > hold; --n) {
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  r.text = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return r;
}

std::string StopMatcher::flush() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace engine
