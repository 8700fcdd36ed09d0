// Server-sent events of a reply with their names: what the Responses and Messages tests read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ggufd::test {

struct SseEvent {
  std::string name;      // the "event:" line ("" without one)
  nlohmann::json data;   // the "data:" line parsed (null when it is not JSON, e.g. [DONE])
};

// The events of an SSE body, in order; `comments` counts comment lines (": keep-alive").
inline std::vector<SseEvent> sse_events(const std::string& body, int* comments = nullptr) {
  std::vector<SseEvent> out;
  if (comments != nullptr) *comments = 0;
  size_t pos = 0;
  SseEvent current;
  bool any = false;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) {
      if (any) out.push_back(std::move(current));
      current = SseEvent{};
      any = false;
    } else if (line[0] == ':') {
      if (comments != nullptr) ++*comments;
    } else if (line.rfind("event: ", 0) == 0) {
      current.name = line.substr(7);
      any = true;
    } else if (line.rfind("data: ", 0) == 0) {
      current.data = nlohmann::json::parse(line.substr(6), nullptr, false);
      if (current.data.is_discarded()) current.data = nullptr;
      any = true;
    }
  }
  if (any) out.push_back(std::move(current));
  return out;
}

}  // namespace ggufd::test
