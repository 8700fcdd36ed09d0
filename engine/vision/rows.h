// Small helpers of the vision encoder's passes (vit.cpp, projection.cpp). Internal to engine/vision.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kernels/thread_pool.h"

namespace engine::vision_rows {

inline size_t sz(int64_t n) { return static_cast<size_t>(n); }

// f(t) for the rows t of (n, E), spread over the pool's threads.
template <class F>
void for_rows(int64_t n, ThreadPool& pool, F f) {
  pool.run([&](int ith, int nth) {
    for (int64_t t = ith; t < n; t += nth) f(t);
  });
}

}  // namespace engine::vision_rows
