// Weight matrices copied into the dispatch table's packed layout (kernels/packing.h: groups of pack_rows rows).
#pragma once

#include <cstddef>
#include <vector>

#include "engine/kernels/matmul.h"

namespace engine {

// Packed copies of a model's weight matrices, made once at load.
//
// pack() fills, for every matrix whose type the dispatch table has a packed tile for, a copy of
// its first rows / R * R rows in the packed layout (R = the table's pack_rows), and points the Matrix's `packed` at it. With
// `release_source` (the weights are a file mapping), the file pages of each packed range are
// then dropped from this process: matmul never reads them again, so resident memory stays about
// the file size instead of doubling. Rows still read from the file (embedding lookups of a tied
// output matrix) fault back in from the page cache on demand.
//
// Ownership: owns one anonymous mapping holding every copy; Matrices point into it, so it must
// outlive them (Model holds both). Moving keeps the pointers valid. Thread-safety: read-only
// after pack(); pack() itself uses up to hardware_concurrency() threads.
class PackedWeights {
 public:
  PackedWeights() = default;
  PackedWeights(PackedWeights&& o) noexcept;
  PackedWeights& operator=(PackedWeights&& o) noexcept;
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;
  ~PackedWeights();

  // Matrices sharing `data` (a tied output and embedding) are packed once and all updated.
  static PackedWeights pack(const std::vector<Matrix*>& mats, bool release_source);

  // Bytes of packed copies (0 when the kernels have no packed layout for the model's types).
  size_t bytes() const { return size_; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace engine
