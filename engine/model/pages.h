// madvise(2) over the pages under a byte range of a mapping: read-ahead of the pages a range
// touches, and release of the pages wholly inside one.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace engine {

inline constexpr size_t kPageBytes = 4096;

// Asks the kernel to read ahead every page holding a byte of `range` (of a file mapping): the
// pages go to the page cache, not into our page table.
inline void read_ahead(std::span<const uint8_t> range) {
  const auto at = reinterpret_cast<uintptr_t>(range.data()), base = at & ~(kPageBytes - 1);
  ::madvise(reinterpret_cast<void*>(base), range.size() + (at - base), MADV_WILLNEED);
}

// Gives the pages wholly inside `range` back to the kernel. For a read-only file mapping this
// only drops them from our resident set; a later read faults them in again, unchanged.
inline void release_pages(std::span<const uint8_t> range) {
  const auto begin = (reinterpret_cast<uintptr_t>(range.data()) + kPageBytes - 1) & ~(kPageBytes - 1);
  const auto end = (reinterpret_cast<uintptr_t>(range.data()) + range.size()) & ~(kPageBytes - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace engine
