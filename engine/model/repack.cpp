#include "engine/model/repack.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <thread>
#include <utility>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/packing.h"
#include "engine/model/pages.h"

namespace engine {

namespace {

constexpr size_t kAlign = 64;  // each copy starts on a cache line

// One matrix to pack: its rows [0, rows) go to base + offset.
struct Job {
  const Matrix* m;
  int64_t rows;
  size_t offset;
};

constexpr size_t kSliceBytes = size_t{4} << 20;  // packed (and read) ~4 MiB at a time

// Groups of R rows packed per slice of a matrix whose groups are `group` bytes.
int64_t slice_groups(size_t group) { return std::max<int64_t>(1, static_cast<int64_t>(kSliceBytes / group)); }

// A thread's buffer for the slices it reads from the file: anonymous memory in huge pages where
// the kernel gives them (a first touch per 4 KiB page is slow in some VMs), reused slice to slice.
// data() is null for 0 bytes or when the memory cannot be had (that thread then packs from the
// mapping).
class SliceBuffer {
 public:
  explicit SliceBuffer(size_t bytes) : size_((bytes + kHuge - 1) / kHuge * kHuge) {
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    ::madvise(p, size_, MADV_HUGEPAGE);
    data_ = static_cast<uint8_t*>(p);
  }
  ~SliceBuffer() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  SliceBuffer(const SliceBuffer&) = delete;
  SliceBuffer& operator=(const SliceBuffer&) = delete;
  uint8_t* data() const { return data_; }

 private:
  static constexpr size_t kHuge = size_t{2} << 20;
  size_t size_;
  uint8_t* data_ = nullptr;
};

// Packs job.m's first job.rows rows into dst, a slice at a time. With a `source` (and a
// `buffer` of `capacity` bytes), each slice is read from the file into `buffer` and packed from
// there: the mapping's pages are never touched, so they neither cost page faults nor count in our
// resident memory (and a slice not in the page cache is read past it, see File::read_mapped).
// Where the read fails (or there is no source) the slice is packed from the mapping; with a source
// its pages are then dropped again, so the model's resident size never holds two copies of a large
// matrix (a tied 128k-token output would otherwise add ~300 MB to the peak).
void pack_matrix(const Job& job, int R, uint8_t* dst, const gguf::FileSet* source, uint8_t* buffer, size_t capacity) {
  const Matrix& m = *job.m;
  const auto* src = static_cast<const uint8_t*>(m.data);
  const size_t group = static_cast<size_t>(R) * m.row_bytes;
  const int64_t groups = job.rows / R;
  const int64_t slice = slice_groups(group);
  for (int64_t g0 = 0; g0 < groups; g0 += slice) {
    const int64_t g1 = std::min(groups, g0 + slice);
    const std::span<const uint8_t> bytes(src + g0 * group, static_cast<size_t>(g1 - g0) * group);
    const uint8_t* read = source != nullptr && buffer != nullptr ? source->read_mapped(bytes, buffer, capacity) : nullptr;
    const uint8_t* from = read != nullptr ? read : bytes.data();
    for (int64_t g = g0; g < g1; ++g) {
      kernels::pack_group(m.type, R, from + (g - g0) * group, m.row_bytes, m.cols, dst + g * group);
    }
    if (read == nullptr && source != nullptr) release_pages(bytes);
  }
}

// The memory of the last PackedWeights destroyed, kept for the next pack() to reuse: a switch
// unloads one model to make room for another, and fresh memory costs a zeroing per page in the
// kernel, and in some VMs a fault to the host (4.4 GB took 2.8-9.5 s to fault in here the first
// time, 0.15-0.3 s when the process had just freed it). PackedWeights::release_kept() frees it.
struct Kept {
  void* base = nullptr;
  size_t size = 0;
};
std::mutex kept_mu;
Kept kept;  // (under kept_mu)

// Takes back [base, base + size) (read-only copies): kept when larger than what is kept already.
void keep(void* base, size_t size) {
  Kept gone{base, size};
  {
    const std::lock_guard<std::mutex> lock(kept_mu);
    if (size > kept.size) std::swap(gone, kept);
  }
  if (gone.base != nullptr) ::munmap(gone.base, gone.size);
}

// What is kept, now the caller's to use or unmap (nothing is kept after).
Kept take_kept() {
  const std::lock_guard<std::mutex> lock(kept_mu);
  return std::exchange(kept, Kept{});
}

// Writable anonymous memory of `size` bytes (a multiple of kPageBytes), advised into huge pages: the
// kept memory, cut to size or grown (mremap moves its pages, the rest is fresh), else new.
void* take(size_t size) {
  const Kept k = take_kept();
  if (k.base != nullptr && ::mprotect(k.base, k.size, PROT_READ | PROT_WRITE) == 0) {
    if (k.size >= size) {
      if (k.size > size) ::munmap(static_cast<uint8_t*>(k.base) + size, k.size - size);
      return k.base;
    }
    if (void* p = ::mremap(k.base, k.size, size, MREMAP_MAYMOVE); p != MAP_FAILED) {
      ::madvise(p, size, MADV_HUGEPAGE);
      return p;
    }
  }
  if (k.base != nullptr) ::munmap(k.base, k.size);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  ::madvise(p, size, MADV_HUGEPAGE);  // decode streams it: fewer TLB misses
  return p;
}

}  // namespace

void PackedWeights::release_kept() {
  const Kept k = take_kept();
  if (k.base != nullptr) ::munmap(k.base, k.size);
}

size_t PackedWeights::kept_bytes() {
  const std::lock_guard<std::mutex> lock(kept_mu);
  return kept.size;
}

PackedWeights::PackedWeights(PackedWeights&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)), size_(std::exchange(o.size_, 0)) {}

PackedWeights& PackedWeights::operator=(PackedWeights&& o) noexcept {
  if (this != &o) {
    if (base_) keep(base_, size_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

PackedWeights::~PackedWeights() {
  if (base_) keep(base_, size_);
}

PackedWeights PackedWeights::pack(const std::vector<Matrix*>& mats, const gguf::FileSet* source) {
  const kernels::Dispatch& d = kernels::dispatch();
  std::vector<Job> jobs;
  for (const Matrix* m : mats) {
    const bool seen = std::any_of(jobs.begin(), jobs.end(), [m](const Job& j) { return j.m->data == m->data; });
    const int64_t rows = d.pack_rows > 0 ? m->rows / d.pack_rows * d.pack_rows : 0;
    if (seen || rows == 0 || !kernels::packable(m->type) || !d.packed_tile_for(m->type)) continue;
    jobs.push_back({m, rows, 0});
  }
  // In the order of the bytes they read (the file's order, part by part as mapped), so the
  // threads taking jobs in turn read the file about front to back.
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
    return std::less<const void*>()(a.m->data, b.m->data);
  });
  size_t total = 0;
  for (Job& j : jobs) {
    j.offset = total;
    total += (static_cast<size_t>(j.rows) * j.m->row_bytes + kAlign - 1) / kAlign * kAlign;
  }
  PackedWeights pw;
  if (total == 0) return pw;
  total = (total + kPageBytes - 1) / kPageBytes * kPageBytes;
  void* base = take(total);
  if (base == nullptr) throw std::bad_alloc();
  pw.base_ = base;
  pw.size_ = total;

  if (source != nullptr && !source->owns_mapping()) source = nullptr;  // (bytes in memory: nothing to read)
  size_t buffer_bytes = 0;
  for (const Job& j : jobs) {
    const size_t group = static_cast<size_t>(d.pack_rows) * j.m->row_bytes;
    buffer_bytes = std::max(buffer_bytes, static_cast<size_t>(std::min(j.rows / d.pack_rows, slice_groups(group))) * group);
  }
  // Where the file is read through the page cache, read-ahead of every range to pack, in the order
  // the threads take them, on a thread of its own (the pages go to the page cache, not into our
  // page table): a cold file then streams from the disk while the threads copy. Asked for on this
  // thread, the read-ahead of a large file held the copying back until most of the file had been
  // read. Direct reads go without: they need no cache, and filling it is what costs.
  // (jthreads: joined on the way out also when starting one throws)
  std::jthread ahead;
  if (source != nullptr && !source->reads_direct()) {
    ahead = std::jthread([&jobs] {
      for (const Job& j : jobs) read_ahead({static_cast<const uint8_t*>(j.m->data), static_cast<size_t>(j.rows) * j.m->row_bytes});
    });
  }
  const size_t capacity = gguf::File::read_room(buffer_bytes);
  std::atomic<size_t> next{0};
  auto work = [&] {
    const SliceBuffer buffer(source != nullptr ? capacity : 0);
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      pack_matrix(jobs[i], d.pack_rows, static_cast<uint8_t*>(base) + jobs[i].offset, source, buffer.data(), capacity);
    }
  };
  const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  {
    std::vector<std::jthread> threads;
    for (unsigned t = 1; t < std::min<size_t>(n_threads, jobs.size()); ++t) threads.emplace_back(work);
    work();
  }
  if (ahead.joinable()) ahead.join();
  ::mprotect(base, total, PROT_READ);

  for (Matrix* m : mats) {
    for (const Job& j : jobs) {
      if (j.m->data != m->data) continue;
      m->packed = static_cast<const uint8_t*>(base) + j.offset;
      m->packed_rows = j.rows;
      m->pack_rows = d.pack_rows;
    }
  }
  return pw;
}

}  // namespace engine
