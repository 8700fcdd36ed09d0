// Stop strings over text that arrives piece by piece (a stop string may span tokens).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace engine {

// Holds back the end of the text that could still become a stop string, and cuts the text at the
// first complete match. Thread-safety: one per sequence.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Result {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string matched: `text` ends right before it; nothing follows
    std::string matched;   // when stopped: the stop string that matched
  };
  Result push(std::string_view text);
  // What is held back, at the end of generation.
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string pending_;
};

}  // namespace engine
