// The crossing from the scheduler thread to an HTTP session: a queue with an async wake-up.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "engine/runtime/thread_annotations.h"
#include "server/api/metrics.h"
#include "server/asio.h"

namespace server {

// What a session receives: a token of choice `index`, or the end of that choice.
struct ChannelItem {
  int index = 0;
  bool finished = false;
  engine::TokenEvent token;           // when !finished
  std::vector<float> embedding;       // when !finished, for an embedding request: its pooled vector
  engine::FinishReason reason{};      // when finished
  engine::Usage usage;                // when finished
  std::string error;                  // when finished with kError: what failed
};

// Collects the events of one HTTP request's generations (one per choice) and hands them to the
// session coroutine. The scheduler pushes from its thread (never blocking: a mutex-guarded queue
// and a post to the session's strand); the session awaits receive() on that strand.
// Each choice's tokens are added to the metrics' token counters as it finishes, however it
// finishes (a cancelled request's tokens were computed too); the prompt is counted once per
// `n_per_prompt` choices.
// Ownership: shared by the session and by each choice's sink; borrows `metrics` (may be null),
// which must outlive it. Thread-safety: as described.
class Channel : public std::enable_shared_from_this<Channel> {
 public:
  Channel(net::any_io_executor strand, Metrics* metrics, int n_per_prompt);

  // A TokenSink that feeds this channel as choice `index`.
  std::shared_ptr<engine::TokenSink> sink(int index);

  // Next item, waiting if none is queued. Call on the strand only.
  net::awaitable<ChannelItem> receive();
  // The same, but nullopt when none came within `wait`.
  net::awaitable<std::optional<ChannelItem>> receive_for(std::chrono::milliseconds wait);
  // Marks every choice cancelled; the scheduler frees their slots at its next step.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

 private:
  class Sink;
  void push(ChannelItem&& item);
  std::optional<ChannelItem> pop();
  void count(int index, const engine::Usage& usage);

  net::any_io_executor strand_;
  Metrics* metrics_;
  int n_per_prompt_;
  net::steady_timer timer_;      // strand only: waits are woken by cancelling it
  engine::Mutex mutex_;
  std::deque<ChannelItem> items_ GGUFD_GUARDED_BY(mutex_);
  std::atomic<bool> cancelled_{false};
};

}  // namespace server
