// A model's GGUF files: one file, or the parts of a split set (llama-gguf-split) seen as one model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gguf/file.h"

namespace gguf {

// The metadata keys of a split set's parts (as llama.cpp writes and reads them).
inline constexpr std::string_view kSplitNo = "split.no";                     // 0-based part number
inline constexpr std::string_view kSplitCount = "split.count";               // parts in the set
inline constexpr std::string_view kSplitTensors = "split.tensors.count";     // tensors over all parts

// One file, or every part of a split set, with one tensor table over all of them.
//
// A split set's parts are named "<prefix>-00001-of-0000N.gguf" ... (gguf/naming.h) and each is a
// GGUF file of its own: the first holds all the model's metadata, every part holds split.no (its
// 0-based number), split.count (N) and split.tensors.count (the tensors of all parts), and a subset
// of the tensors. open() accepts any part's path and opens the set from its first part (llama.cpp
// wants the first part's path; any part naming the set is accepted here). Checks, each failing
// with a gguf::Error naming the file and what was expected and found: every part exists and
// parses, the name's count and number agree with split.count and split.no in each part, every part
// has the same split.count and split.tensors.count, no tensor is in two parts, and the parts hold
// split.tensors.count tensors in all. A file without split.count (or with split.count 1) is a
// single file whatever its name.
//
// Metadata comes from first() only. Each tensor's data points into its own part's mapping.
// Ownership: owns its Files (and so their mappings); copies share the mappings.
// Thread-safety: immutable after construction; safe to share across threads.
class FileSet {
 public:
  // Opens `path` and, when it is a part of a split set, every part of the set. Throws gguf::Error.
  static FileSet open(const std::string& path);
  // A set of one file (no split.* checks: a File a test wrote in memory, say).
  static FileSet single(File file);
  // The set of `parts`, first to last, checked as open() checks the files it opens.
  static FileSet from_parts(std::vector<File> parts);

  const File& first() const { return parts_.front(); }  // the metadata
  const std::vector<File>& parts() const { return parts_; }
  bool is_split() const { return parts_.size() > 1; }

  // Tensor lookup over all parts; null when absent.
  const TensorInfo* find_tensor(std::string_view name) const;
  size_t n_tensors() const { return index_.size(); }
  // Every tensor, part by part in each part's order.
  std::vector<const TensorInfo*> tensors() const;

  // Sums over the parts: bytes of the files, and bytes from each data section's start to its end.
  uint64_t file_size() const;
  uint64_t data_bytes() const;
  // True when every part is a file mapping this set owns (File::owns_mapping).
  bool owns_mapping() const;
  // File::read_mapped on the part whose bytes hold `range` (null when none does).
  const uint8_t* read_mapped(std::span<const uint8_t> range, uint8_t* buffer, size_t capacity) const;
  // True when every part reads past the page cache (File::reads_direct).
  bool reads_direct() const;

 private:
  explicit FileSet(std::vector<File> parts);
  void index_tensors();

  std::vector<File> parts_;
  // tensor name -> (part, index in that part's tensors())
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> index_;
};

}  // namespace gguf
