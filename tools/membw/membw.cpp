#include "tools/membw/membw.h"

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

// Sum of the whole 8-byte words inside [p, p + n): the loads are what is timed.
uint64_t sum_range(const uint8_t* p, size_t n) {
  const auto begin = (reinterpret_cast<uintptr_t>(p) + 7) & ~uintptr_t{7};
  const auto end = (reinterpret_cast<uintptr_t>(p) + n) & ~uintptr_t{7};
  return end > begin ? sum_words(reinterpret_cast<const uint64_t*>(begin), (end - begin) / 8) : 0;
}

}  // namespace

double read_ranges_gbs(ThreadPool& pool, std::span<const std::span<const uint8_t>> ranges) {
  size_t total = 0;
  for (const auto& r : ranges) total += r.size();
  std::vector<uint64_t> sink(size_t(pool.size()) * 8);  // one cache line per thread
  const auto t0 = std::chrono::steady_clock::now();
  pool.run([&](int ith, int nth) {
    uint64_t s = 0;
    for (const auto& r : ranges) {
      const size_t begin = r.size() * size_t(ith) / size_t(nth), end = r.size() * size_t(ith + 1) / size_t(nth);
      s += sum_range(r.data() + begin, end - begin);
    }
    sink[size_t(ith) * 8] += s;
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  volatile uint64_t keep = sink[0];
  (void)keep;
  return s > 0 ? static_cast<double>(total) / s / 1e9 : 0.0;
}

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
