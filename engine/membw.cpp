#include "engine/membw.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace engine {

namespace {

// Sum of n words with 8 independent chains so loads, not the adder, limit the loop.
uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += p[i + size_t(k)];
  }
  for (; i < n; ++i) s[0] += p[i];
  uint64_t total = 0;
  for (uint64_t v : s) total += v;
  return total;
}

}  // namespace

double read_bandwidth_gbs(ThreadPool& pool, size_t bytes, int reps) {
  const size_t n = std::max<size_t>(bytes / sizeof(uint64_t), 1);
  void* mem = ::mmap(nullptr, n * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::bad_alloc();
  ::madvise(mem, n * sizeof(uint64_t), MADV_HUGEPAGE);
  const auto unmap = [n](uint64_t* p) { ::munmap(p, n * sizeof(uint64_t)); };
  const std::unique_ptr<uint64_t[], decltype(unmap)> buf(static_cast<uint64_t*>(mem), unmap);
  const int nth = pool.size();
  // First touch from the threads that will read each part (NUMA-local pages).
  pool.run([&](int ith, int) {
    const size_t begin = n * size_t(ith) / size_t(nth), end = n * size_t(ith + 1) / size_t(nth);
    for (size_t i = begin; i < end; ++i) buf[i] = i;
  });
  std::vector<uint64_t> sink(size_t(nth) * 8);  // one cache line per thread keeps sums alive
  std::vector<double> gbs;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int ith, int) {
      const size_t begin = n * size_t(ith) / size_t(nth), end = n * size_t(ith + 1) / size_t(nth);
      sink[size_t(ith) * 8] += sum_words(buf.get() + begin, end - begin);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbs.push_back(static_cast<double>(n * sizeof(uint64_t)) / s / 1e9);
  }
  volatile uint64_t keep = sink[0];  // the sums must not be optimized away
  (void)keep;
  return *std::max_element(gbs.begin(), gbs.end());
}

}  // namespace engine
