// Tokens per second over a sliding window (the scheduler's stats).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>

namespace engine {

// Thread-safety: none (the scheduler guards it with its mutex).
class Throughput {
 public:
  using Clock = std::chrono::steady_clock;

  void add(Clock::time_point t, int64_t generated, int64_t prompt) {
    samples_.push_back({t, generated, prompt});
    while (!samples_.empty() && t - samples_.front().t > kWindow) samples_.pop_front();
  }
  // (generated, prompt) tokens per second over the window ending at `now`.
  std::pair<double, double> rates(Clock::time_point now) const {
    int64_t g = 0;
    int64_t p = 0;
    for (const Sample& s : samples_) {
      if (now - s.t <= kWindow) {
        g += s.generated;
        p += s.prompt;
      }
    }
    const double secs = std::chrono::duration<double>(kWindow).count();
    return {static_cast<double>(g) / secs, static_cast<double>(p) / secs};
  }

 private:
  static constexpr auto kWindow = std::chrono::seconds(5);
  struct Sample {
    Clock::time_point t;
    int64_t generated;
    int64_t prompt;
  };
  std::deque<Sample> samples_;
};

}  // namespace engine
