// A parsed GGUF file: header, metadata and tensor table, all views into the file's bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/error.h"
#include "gguf/types.h"
#include "gguf/value.h"

namespace gguf {

inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

struct KeyValue {
  std::string_view key;
  Value value;
  uint64_t offset;  // byte offset of the key in the file
};

struct TensorInfo {
  std::string_view name;
  TensorType type;
  int n_dims;
  std::array<uint64_t, kMaxDims> ne;  // ne[0] is the row length (fastest-moving); unused dims are 1
  uint64_t offset;                    // relative to the start of the data section
  uint64_t n_elements;
  uint64_t n_bytes;
  std::span<const uint8_t> data;      // view into the file; valid while the File lives
  uint64_t info_offset;               // byte offset of this tensor's info record in the file

  uint64_t n_rows() const { return n_elements / ne[0]; }
  uint64_t row_bytes() const { return n_bytes / n_rows(); }
};

// A GGUF file, parsed and validated (see parser.cpp for the full list of checks).
//
// Ownership: a File made by open() owns its read-only memory mapping; one made by parse() borrows
// the caller's bytes, which must outlive it. Copies share the mapping. Every string_view, Value and
// tensor span it hands out points into those bytes.
// Thread-safety: immutable after construction; safe to share across threads.
class File {
 public:
  // Parses bytes already in memory; `name` is used in error messages. Throws gguf::Error.
  static File parse(std::span<const uint8_t> bytes, std::string name = "<memory>");
  // Maps `path` read-only and parses it. Throws gguf::Error (also for I/O errors).
  static File open(const std::string& path);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  bool big_endian() const { return big_endian_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  // True for a File made by open(): its bytes are a read-only file mapping it owns.
  bool owns_mapping() const { return storage_ != nullptr; }
  // Reads `range`, bytes of this File's mapping, from the file into `buffer` (`capacity` bytes) and
  // returns where in `buffer` they begin; null when this File borrows its bytes, the range is not
  // inside them, it does not fit, or the read fails. The mapping's pages are not touched: a first
  // touch of each mapped page costs a fault, which in some VMs costs more than the copy.
  // A range whose pages are not all in the page cache is read with O_DIRECT, past the cache: the
  // caller keeps its own copy, and filling the cache cost 2-5x the disk read in such VMs. That
  // needs `buffer` aligned to kReadAlign and read_room(range.size()) bytes; otherwise (or where the
  // file system refuses O_DIRECT) the range is read through the cache to `buffer` itself.
  // (The page cache is asked with mincore(2); for a file the process neither owns nor may write,
  // Linux answers "not cached", so such files are always read directly.)
  static constexpr size_t kReadAlign = 4096;
  static constexpr size_t read_room(size_t n) { return n + 2 * kReadAlign; }
  const uint8_t* read_mapped(std::span<const uint8_t> range, uint8_t* buffer, size_t capacity) const;
  // True when read_mapped can read past the page cache (an owned mapping, O_DIRECT accepted).
  bool reads_direct() const;

  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // Metadata lookup: find() returns null when absent; get() throws naming the key.
  const Value* find(std::string_view key) const;
  const Value& get(std::string_view key) const;
  // Typed lookups. get_* throw when absent or of the wrong type (naming key, expected, found);
  // find_* return nullopt when absent and throw on a wrong type.
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  double get_f64(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::string_view get_string(std::string_view key) const;
  const Value& get_array(std::string_view key) const;
  std::optional<uint64_t> find_u64(std::string_view key) const;
  std::optional<int64_t> find_i64(std::string_view key) const;
  std::optional<double> find_f64(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::optional<std::string_view> find_string(std::string_view key) const;
  const Value* find_array(std::string_view key) const;

  const TensorInfo* find_tensor(std::string_view name) const;
  const TensorInfo& get_tensor(std::string_view name) const;

 private:
  friend class Parser;
  template <class T, class F>
  T typed(std::string_view key, F&& read) const;

  std::string name_;
  std::shared_ptr<const void> storage_;  // keeps a mapping alive (null when borrowing)
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  bool big_endian_ = false;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> key_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace gguf
