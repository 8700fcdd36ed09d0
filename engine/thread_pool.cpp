#include "engine/thread_pool.h"

#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace engine {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Pause iterations a worker spins for before it sleeps (~0.5-2 ms; a decode step's matmuls
// follow each other within microseconds, so workers stay hot during a forward pass).
constexpr int kSpinIterations = 1 << 15;

}  // namespace

// Shared state. Counters that different threads write sit on separate cache lines.
struct ThreadPool::State {
  int n_threads = 1;
  std::vector<std::thread> threads;

  alignas(64) std::atomic<uint64_t> generation{0};  // bumped by run() to publish a job
  alignas(64) std::atomic<int> pending{0};          // workers (excluding 0) still running the job
  alignas(64) std::atomic<int> barrier_count{0};
  alignas(64) std::atomic<uint64_t> barrier_passed{0};
  alignas(64) std::atomic<int> n_sleeping{0};
  std::atomic<bool> stop{false};

  const std::function<void(int, int)>* job = nullptr;  // valid while pending > 0

  std::mutex mutex;  // guards sleeping/waking and `error`
  std::condition_variable wake;
  std::exception_ptr error;

  void call(int ith) {
    try {
      (*job)(ith, n_threads);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = std::current_exception();
    }
  }

  // Waits until `generation` differs from `seen` (or stop); returns the new generation.
  uint64_t wait_for_job(uint64_t seen) {
    for (int i = 0; i < kSpinIterations; ++i) {
      const uint64_t g = generation.load(std::memory_order_acquire);
      if (g != seen || stop.load(std::memory_order_relaxed)) return g;
      cpu_relax();
    }
    std::unique_lock<std::mutex> lock(mutex);
    n_sleeping.fetch_add(1);  // seq_cst: pairs with run()'s store then load of n_sleeping
    wake.wait(lock, [&] { return generation.load() != seen || stop.load(); });
    n_sleeping.fetch_sub(1);
    return generation.load(std::memory_order_acquire);
  }

  void worker_loop(int ith) {
    uint64_t seen = 0;
    for (;;) {
      seen = wait_for_job(seen);
      if (stop.load(std::memory_order_acquire)) return;
      call(ith);
      pending.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  void wake_sleepers() {
    if (n_sleeping.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex);
      wake.notify_all();
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : state_(new State) {
  state_->n_threads = n_threads < 1 ? 1 : n_threads;
  state_->threads.reserve(static_cast<size_t>(state_->n_threads - 1));
  for (int i = 1; i < state_->n_threads; ++i) {
    state_->threads.emplace_back([s = state_, i] { s->worker_loop(i); });
  }
}

ThreadPool::~ThreadPool() {
  state_->stop.store(true);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->wake.notify_all();
  }
  for (auto& t : state_->threads) t.join();
  delete state_;
}

int ThreadPool::size() const { return state_->n_threads; }

void ThreadPool::run(const std::function<void(int ith, int nth)>& fn) {
  State& s = *state_;
  if (s.n_threads == 1) {
    fn(0, 1);
    return;
  }
  s.job = &fn;
  s.error = nullptr;
  s.pending.store(s.n_threads - 1, std::memory_order_relaxed);
  s.generation.fetch_add(1);  // seq_cst publish (release for job/pending)
  s.wake_sleepers();
  s.call(0);
  for (int i = 0; s.pending.load(std::memory_order_acquire) != 0; ++i) {
    if (i < kSpinIterations) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  s.job = nullptr;
  if (s.error) std::rethrow_exception(std::exchange(s.error, nullptr));
}

void ThreadPool::barrier() {
  State& s = *state_;
  if (s.n_threads == 1) return;
  const uint64_t passed = s.barrier_passed.load(std::memory_order_acquire);
  if (s.barrier_count.fetch_add(1, std::memory_order_acq_rel) == s.n_threads - 1) {
    s.barrier_count.store(0, std::memory_order_relaxed);
    s.barrier_passed.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  for (int i = 0; s.barrier_passed.load(std::memory_order_acquire) == passed; ++i) {
    if (i < kSpinIterations) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

namespace {

// CPUs this process may run on.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

bool read_int(const std::string& path, int& value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> value);
}

}  // namespace

int physical_cores() {
  // Distinct (package, core) pairs among the CPUs we may use: hyperthread siblings count once.
  const std::vector<int> cpus = allowed_cpus();
  std::set<std::pair<int, int>> cores;
  for (int c : cpus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    int package = 0;
    int core = 0;
    if (!read_int(dir + "physical_package_id", package) || !read_int(dir + "core_id", core)) {
      cores.clear();
      break;
    }
    cores.emplace(package, core);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  if (!cpus.empty()) return static_cast<int>(cpus.size());
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

}  // namespace engine
