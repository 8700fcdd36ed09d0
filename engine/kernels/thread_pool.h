// A persistent pool of compute threads for the forward pass.
#pragma once

#include <functional>

namespace engine {

// Runs one job at a time on a fixed set of threads; the calling thread is worker 0.
//
// run(fn) calls fn(ith, nth) once on every worker (ith in [0, nth)) and returns when all calls
// have returned, like one ggml graph node. Workers wait between jobs by spinning briefly, then
// blocking on a futex, so back-to-back jobs of one forward pass don't pay a futex wake-up each.
// If fn throws on any worker, run() rethrows the first exception after every worker finished.
// Thread-safety: run() must be called from one thread at a time (the scheduler's loop thread).
// Ownership: owns its threads; the destructor joins them.
class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads < 1 is treated as 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  void run(const std::function<void(int ith, int nth)>& fn);

  // Inside a job only: blocks until all nth workers of the current run() have called barrier().
  // Every worker must call it the same number of times (like ggml_barrier between two phases).
  void barrier();

 private:
  struct State;
  State* state_;
};

// Number of physical cores (the default thread count), at least 1.
int physical_cores();

// The thread count a setting asks for: `requested`, or physical_cores() when it is 0 (or less),
// which is what every "--threads 0" means.
inline int thread_count(int requested) { return requested > 0 ? requested : physical_cores(); }

}  // namespace engine
