// Weight matrices copied into the dispatch table's packed layout (kernels/packing.h: groups of pack_rows rows).
#pragma once

#include <cstddef>
#include <vector>

#include "engine/kernels/matmul.h"
#include "gguf/file_set.h"

namespace engine {

// Packed copies of a model's weight matrices, made once at load.
//
// pack() fills, for every matrix whose type the dispatch table has a packed tile for, a copy of
// its first rows / R * R rows in the packed layout (R = the table's pack_rows), and points the
// Matrix's `packed` at it. With a `source` (the files the weights are mapped from), the rows are
// read from the files (pread) rather than through the mapping, whose pages are never touched:
// matmul never reads them, so resident memory stays about the file size instead of doubling,
// and the load pays no page fault per 4 KiB (in a VM that was most of a warm load's time). Rows
// still read from the file (embedding lookups of a tied output matrix) fault in from the page
// cache on demand. Without a source the matrices' bytes are read where they are.
//
// Ownership: owns one anonymous mapping holding every copy; Matrices point into it, so it must
// outlive them (Model holds both). Moving keeps the pointers valid. Destroyed, it hands the
// mapping to the next pack() (release_kept()). Thread-safety: read-only after pack(); pack()
// itself uses up to hardware_concurrency() threads; the static functions may be called anywhere.
class PackedWeights {
 public:
  PackedWeights() = default;
  PackedWeights(PackedWeights&& o) noexcept;
  PackedWeights& operator=(PackedWeights&& o) noexcept;
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;
  ~PackedWeights();

  // Matrices sharing `data` (a tied output and embedding) are packed once and all updated.
  static PackedWeights pack(const std::vector<Matrix*>& mats, const gguf::FileSet* source);

  // Bytes of packed copies (0 when the kernels have no packed layout for the model's types).
  size_t bytes() const { return size_; }

  // The memory of the last PackedWeights destroyed is kept for the next pack() to reuse (a model
  // unloaded to make room for another hands its pages to the other's load: fresh pages cost a
  // zeroing each, and in some VMs a fault to the host). release_kept() gives it back to the
  // system; the router calls it once no load is queued. kept_bytes() tells how much is kept.
  static void release_kept();
  static size_t kept_bytes();

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace engine
