// The compute threads that several models' schedulers share, in turns.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>

#include "engine/kernels/thread_pool.h"
#include "engine/runtime/thread_annotations.h"

namespace engine {

// One ThreadPool and a first-come-first-served turn over it. A scheduler takes a turn for each
// step (a forward pass, and the drafts before it) and gives it back after, so two busy models
// alternate steps on all the cores instead of oversubscribing them with two pools; one model
// alone never waits. A step is the unit of fairness: a model's long prefill chunk delays the
// other's next token by one step, as a long prompt does within one model.
// Ownership: owns the pool; shared (shared_ptr) by the evaluators that use it.
// Thread-safety: turn() from any thread; pool() only while holding a turn, or by a single user.
class ComputeShare {
 public:
  explicit ComputeShare(int n_threads);  // n_threads 0: one per physical core (thread_count)
  static std::shared_ptr<ComputeShare> make(int n_threads) { return std::make_shared<ComputeShare>(n_threads); }

  ThreadPool& pool() { return pool_; }

  // Holds the pool from its construction (blocking until every earlier taker is done) to its end.
  class Turn {
   public:
    explicit Turn(ComputeShare& share);
    ~Turn();
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    ComputeShare& share_;
  };

  // Turns taken so far, and those that had to wait for another's (for tests and logs).
  uint64_t turns() const;
  uint64_t waited() const;

 private:
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  uint64_t next_ticket_ GGUFD_GUARDED_BY(mu_) = 0;  // the ticket the next taker gets
  uint64_t serving_ GGUFD_GUARDED_BY(mu_) = 0;      // the ticket whose turn it is
  uint64_t waited_ GGUFD_GUARDED_BY(mu_) = 0;
  ThreadPool pool_;
};

}  // namespace engine
