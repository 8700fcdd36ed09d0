#include "engine/kernels/thread_pool.h"

#include <sched.h>

#include <atomic>
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

// Pause iterations a waiter spins before it blocks in the kernel (tens of microseconds: a
// forward pass issues its matmuls back to back, so workers stay hot during a step, but a
// machine with more runnable threads than cores never burns a whole time slice spinning
// while the thread it waits for is descheduled).
constexpr int kSpinIterations = 1 << 12;

// Spins on `value` while it equals `old`, then blocks (futex) until it changes.
template <typename T>
T wait_while_equal(const std::atomic<T>& value, T old) {
  for (int i = 0; i < kSpinIterations; ++i) {
    const T v = value.load(std::memory_order_acquire);
    if (v != old) return v;
    cpu_relax();
  }
  for (;;) {
    value.wait(old, std::memory_order_acquire);
    const T v = value.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

}  // namespace

// Shared state. Counters that different threads write sit on separate cache lines.
struct ThreadPool::State {
  int n_threads = 1;
  std::vector<std::thread> threads;

  alignas(64) std::atomic<uint64_t> generation{0};  // bumped by run() to publish a job (or stop)
  alignas(64) std::atomic<int> pending{0};          // workers (excluding 0) still running the job
  alignas(64) std::atomic<int> barrier_count{0};
  alignas(64) std::atomic<uint64_t> barrier_passed{0};
  std::atomic<bool> stop{false};

  const std::function<void(int, int)>* job = nullptr;  // valid while pending > 0

  std::mutex error_mutex;
  std::exception_ptr error;

  void call(int ith) {
    try {
      (*job)(ith, n_threads);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }

  void worker_loop(int ith) {
    uint64_t seen = 0;
    for (;;) {
      seen = wait_while_equal(generation, seen);
      if (stop.load(std::memory_order_acquire)) return;
      call(ith);
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) pending.notify_one();
    }
  }

  void publish() {
    generation.fetch_add(1, std::memory_order_acq_rel);
    generation.notify_all();  // no system call when nobody sleeps
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
  state_->stop.store(true, std::memory_order_release);
  state_->publish();
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
  s.publish();  // release: job and pending are visible to workers that see the new generation
  s.call(0);
  for (int left = s.pending.load(std::memory_order_acquire); left != 0;) {
    left = wait_while_equal(s.pending, left);
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
    s.barrier_passed.notify_all();
    return;
  }
  wait_while_equal(s.barrier_passed, passed);
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
