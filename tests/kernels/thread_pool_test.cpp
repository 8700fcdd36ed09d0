#include "engine/kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace engine {
namespace {

TEST(ThreadPool, EveryWorkerRunsOncePerJob) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    EXPECT_EQ(pool.size(), n);
    for (int job = 0; job < 200; ++job) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.run([&](int ith, int nth) {
        EXPECT_EQ(nth, n);
        hits[static_cast<size_t>(ith)].fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
}

TEST(ThreadPool, CallerIsWorkerZero) {
  ThreadPool pool(3);
  const auto caller = std::this_thread::get_id();
  pool.run([&](int ith, int) {
    if (ith == 0) {
      EXPECT_EQ(std::this_thread::get_id(), caller);
    } else {
      EXPECT_NE(std::this_thread::get_id(), caller);
    }
  });
}

TEST(ThreadPool, ZeroThreadsMeansOne) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
  int calls = 0;
  pool.run([&](int, int) { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, WakesAfterSleeping) {
  ThreadPool pool(2);
  std::atomic<int> sum{0};
  pool.run([&](int ith, int) { sum += ith; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // workers go to sleep
  pool.run([&](int ith, int) { sum += ith; });
  EXPECT_EQ(sum.load(), 2);
}

TEST(ThreadPool, BarrierSeparatesPhases) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 100; ++rep) {
    std::vector<int> a(3, 0);
    std::atomic<int> bad{0};
    pool.run([&](int ith, int nth) {
      a[static_cast<size_t>(ith)] = rep + 1;
      pool.barrier();
      for (int i = 0; i < nth; ++i) {
        if (a[static_cast<size_t>(i)] != rep + 1) bad++;
      }
      pool.barrier();
    });
    ASSERT_EQ(bad.load(), 0);
  }
}

TEST(ThreadPool, RethrowsWorkerException) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.run([](int ith, int) {
    if (ith == 1) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  int calls = 0;
  pool.run([&](int ith, int) { if (ith == 0) ++calls; });  // still usable
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, PhysicalCoresPositive) { EXPECT_GE(physical_cores(), 1); }

}  // namespace
}  // namespace engine
