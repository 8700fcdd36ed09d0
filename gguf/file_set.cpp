// FileSet: a split set's parts found by name, checked against their split.* keys, one tensor table.
#include "gguf/file_set.h"

#include <algorithm>
#include <optional>

#include "gguf/naming.h"

namespace gguf {

namespace {

constexpr int64_t kMaxSplitCount = 65535;  // split.count is a u16 in llama.cpp's files

std::string str(int64_t v) { return std::to_string(v); }

[[noreturn]] void fail(const File& f, const std::string& what) { throw Error(f.name(), Error::kNoOffset, what); }

// An integer key of a part, range-checked: nullopt when absent (and !required).
std::optional<int64_t> split_key(const File& f, std::string_view key, int64_t lo, int64_t hi, bool required) {
  if (!f.find(key)) {
    if (required) fail(f, "metadata key '" + std::string(key) + "' is missing (every part of a split set has it)");
    return std::nullopt;
  }
  const int64_t v = f.get_i64(key);  // throws naming the key when not an integer or out of range
  if (v < lo || v > hi) {
    fail(f, std::string(key) + " is " + str(v) + ", expected " + str(lo) + " to " + str(hi));
  }
  return v;
}

// split.count of `f` (1 when absent: a single file).
int64_t split_count(const File& f) { return split_key(f, kSplitCount, 1, kMaxSplitCount, false).value_or(1); }

// Part `i` (0-based) of the set of `n` parts named by `name`, opened; errors say which part.
File open_part(const SplitName& name, int i, int n) {
  const std::string path = split_path(name.prefix, i + 1, n);
  try {
    return File::open(path);
  } catch (const Error& e) {
    throw Error(e.file(), e.offset(),
                "part " + str(i + 1) + " of " + str(n) + " of split set '" + name.prefix + "': " + e.message());
  }
}

}  // namespace

FileSet::FileSet(std::vector<File> parts) : parts_(std::move(parts)) {}

FileSet FileSet::single(File file) {
  std::vector<File> parts;
  parts.push_back(std::move(file));
  FileSet s(std::move(parts));
  s.index_tensors();
  return s;
}

FileSet FileSet::open(const std::string& path) {
  File given = File::open(path);
  const int64_t n = split_count(given);
  if (n == 1) return single(std::move(given));
  const std::optional<SplitName> name = parse_split_name(path);
  if (!name) {
    fail(given, "split.count is " + str(n) + ", but the file name does not end in -NNNNN-of-MMMMM.gguf, which is "
                "how the other parts are found");
  }
  if (name->count != n) {
    fail(given, "the file name says part " + str(name->no) + " of " + str(name->count) + ", but split.count is " +
                    str(n) + ": a part of another set?");
  }
  std::vector<File> parts;
  for (int i = 0; i < n; ++i) parts.push_back(i + 1 == name->no ? given : open_part(*name, i, static_cast<int>(n)));
  return from_parts(std::move(parts));
}

FileSet FileSet::from_parts(std::vector<File> parts) {
  if (parts.empty()) throw Error("", Error::kNoOffset, "a file set needs at least one file");
  const File& first = parts.front();
  const int64_t n = static_cast<int64_t>(parts.size());
  if (n == 1 && split_count(first) == 1) return single(std::move(parts.front()));
  const int64_t n_tensors = *split_key(first, kSplitTensors, 0, INT32_MAX, true);
  for (int64_t i = 0; i < n; ++i) {
    const File& part = parts[static_cast<size_t>(i)];
    const int64_t count = *split_key(part, kSplitCount, 1, kMaxSplitCount, true);
    if (count != n) {
      fail(part, "split.count is " + str(count) + ", expected " + str(n) + " (the set of " + first.name() +
                     "): a part of another set?");
    }
    const int64_t no = *split_key(part, kSplitNo, 0, kMaxSplitCount - 1, true);
    if (no != i) fail(part, "split.no is " + str(no) + ", expected " + str(i) + " (part " + str(i + 1) + " of " + str(n) + ")");
    const int64_t t = *split_key(part, kSplitTensors, 0, INT32_MAX, true);
    if (t != n_tensors) {
      fail(part, "split.tensors.count is " + str(t) + ", but " + first.name() + " says " + str(n_tensors) +
                     ": a part of another set?");
    }
  }
  FileSet s(std::move(parts));
  s.index_tensors();
  if (static_cast<int64_t>(s.n_tensors()) != n_tensors) {
    fail(s.first(), "split.tensors.count is " + str(n_tensors) + ", but the " + str(n) + " parts hold " +
                        str(static_cast<int64_t>(s.n_tensors())) + " tensors: a part is truncated or of another set");
  }
  return s;
}

void FileSet::index_tensors() {
  index_.clear();
  for (size_t p = 0; p < parts_.size(); ++p) {
    const std::vector<TensorInfo>& ts = parts_[p].tensors();
    for (size_t i = 0; i < ts.size(); ++i) {
      const auto [it, fresh] = index_.try_emplace(ts[i].name, static_cast<uint32_t>(p), static_cast<uint32_t>(i));
      if (!fresh) {
        fail(parts_[p], "tensor '" + std::string(ts[i].name) + "' is also in " + parts_[it->second.first].name() +
                            " (a tensor belongs to one part)");
      }
    }
  }
}

const TensorInfo* FileSet::find_tensor(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &parts_[it->second.first].tensors()[it->second.second];
}

std::vector<const TensorInfo*> FileSet::tensors() const {
  std::vector<const TensorInfo*> out;
  out.reserve(index_.size());
  for (const File& part : parts_) {
    for (const TensorInfo& t : part.tensors()) out.push_back(&t);
  }
  return out;
}

uint64_t FileSet::file_size() const {
  uint64_t n = 0;
  for (const File& part : parts_) n += part.file_size();
  return n;
}

uint64_t FileSet::data_bytes() const {
  uint64_t n = 0;
  for (const File& part : parts_) n += part.file_size() - std::min(part.data_offset(), part.file_size());
  return n;
}

bool FileSet::owns_mapping() const {
  for (const File& part : parts_) {
    if (!part.owns_mapping()) return false;
  }
  return true;
}

const uint8_t* FileSet::read_mapped(std::span<const uint8_t> range, uint8_t* buffer, size_t capacity) const {
  const auto at = reinterpret_cast<uintptr_t>(range.data());
  for (const File& part : parts_) {
    const auto begin = reinterpret_cast<uintptr_t>(part.bytes().data());
    if (at >= begin && at - begin < part.bytes().size()) return part.read_mapped(range, buffer, capacity);
  }
  return nullptr;
}

bool FileSet::reads_direct() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const File& part) { return part.reads_direct(); });
}

}  // namespace gguf
