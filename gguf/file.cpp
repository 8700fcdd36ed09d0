// File: memory mapping and metadata lookups. Parsing lives in parser.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gguf/file.h"

namespace gguf {

namespace {

// The mapping of an opened file, and the file itself kept open for read_mapped(): once as
// opened, and once with O_DIRECT where the file system takes it (-1 otherwise).
struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  int fd = -1;
  int direct_fd = -1;
  ~Mapping() {
    if (addr != nullptr) munmap(addr, size);
    if (fd >= 0) ::close(fd);
    if (direct_fd >= 0) ::close(direct_fd);
  }
};

// pread until `n` bytes are in, or false (at the end of the file, or on an error).
bool pread_all(int fd, uint8_t* out, size_t n, off_t offset) {
  for (size_t done = 0; done < n;) {
    const ssize_t got = ::pread(fd, out + done, n - done, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
    offset += got;
  }
  return true;
}

// True when every page under `range` (of a file mapping) is in the page cache.
bool cached(std::span<const uint8_t> range) {
  const auto at = reinterpret_cast<uintptr_t>(range.data()), base = at & ~(File::kReadAlign - 1);
  const size_t bytes = range.size() + (at - base);
  std::vector<unsigned char> pages((bytes + File::kReadAlign - 1) / File::kReadAlign);
  if (::mincore(reinterpret_cast<void*>(base), bytes, pages.data()) != 0) return false;
  return std::all_of(pages.begin(), pages.end(), [](unsigned char p) { return (p & 1) != 0; });
}

// Reads [offset, offset + n) with O_DIRECT: whole pages from the one holding `offset` into
// `buffer` (page-aligned). Returns where the bytes begin, or null (at the end of the file,
// or on an error: the caller then reads through the page cache).
const uint8_t* read_direct(int fd, off_t offset, size_t n, uint8_t* buffer) {
  constexpr size_t align = File::kReadAlign;
  const auto skip = static_cast<size_t>(offset) % align;
  const size_t want = (skip + n + align - 1) / align * align;
  const off_t start = offset - static_cast<off_t>(skip);
  size_t done = 0;
  while (done < skip + n) {
    const ssize_t got = ::pread(fd, buffer + done, want - done, start + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    // short of the file's end, a read that ends off a page would leave the next one misaligned
    const bool short_of_end = got > 0 && done + static_cast<size_t>(got) < skip + n;
    if (got <= 0 || (short_of_end && static_cast<size_t>(got) % align != 0)) return nullptr;
    done += static_cast<size_t>(got);
  }
  return buffer + skip;
}

[[noreturn]] void io_error(const std::string& path, const std::string& what) {
  throw Error(path, Error::kNoOffset, what + ": " + std::strerror(errno));
}

}  // namespace

File File::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) io_error(path, "cannot open");
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    io_error(path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, Error::kNoOffset, "not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size > 0) {
    void* addr = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      ::close(fd);
      io_error(path, "cannot map");
    }
    mapping->addr = addr;
  }
  mapping->fd = fd;
  mapping->direct_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(mapping->addr), mapping->size);
  File f = parse(bytes, path);
  f.storage_ = std::move(mapping);
  return f;
}

const uint8_t* File::read_mapped(std::span<const uint8_t> range, uint8_t* buffer, size_t capacity) const {
  const auto* mapping = static_cast<const Mapping*>(storage_.get());
  const auto at = reinterpret_cast<uintptr_t>(range.data()), begin = reinterpret_cast<uintptr_t>(bytes_.data());
  if (mapping == nullptr || at < begin || range.size() > bytes_.size() || at - begin > bytes_.size() - range.size() ||
      range.size() > capacity) {
    return nullptr;
  }
  const auto offset = static_cast<off_t>(at - begin);
  const bool direct = mapping->direct_fd >= 0 && capacity >= read_room(range.size()) &&
                      reinterpret_cast<uintptr_t>(buffer) % kReadAlign == 0 && !cached(range);
  if (direct) {
    if (const uint8_t* p = read_direct(mapping->direct_fd, offset, range.size(), buffer)) return p;
  }
  return pread_all(mapping->fd, buffer, range.size(), offset) ? buffer : nullptr;
}

bool File::reads_direct() const {
  const auto* mapping = static_cast<const Mapping*>(storage_.get());
  return mapping != nullptr && mapping->direct_fd >= 0;
}

const Value* File::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const Value& File::get(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) {
    throw Error(name_, Error::kNoOffset, "metadata key '" + std::string(key) + "' is missing");
  }
  return *v;
}

// Runs `read` on the value of `key`, prefixing any type error with the key.
template <class T, class F>
T File::typed(std::string_view key, F&& read) const {
  const Value& v = get(key);
  try {
    return read(v);
  } catch (const Error& e) {
    throw Error(name_, Error::kNoOffset, "metadata key '" + std::string(key) + "': " + e.message());
  }
}

uint64_t File::get_u64(std::string_view key) const {
  return typed<uint64_t>(key, [](const Value& v) { return v.as_u64(); });
}
int64_t File::get_i64(std::string_view key) const {
  return typed<int64_t>(key, [](const Value& v) { return v.as_i64(); });
}
double File::get_f64(std::string_view key) const {
  return typed<double>(key, [](const Value& v) { return v.as_f64(); });
}
bool File::get_bool(std::string_view key) const {
  return typed<bool>(key, [](const Value& v) { return v.as_bool(); });
}
std::string_view File::get_string(std::string_view key) const {
  return typed<std::string_view>(key, [](const Value& v) { return v.as_string(); });
}
const Value& File::get_array(std::string_view key) const {
  return *typed<const Value*>(key, [](const Value& v) {
    v.size();  // throws unless an array
    return &v;
  });
}

std::optional<uint64_t> File::find_u64(std::string_view key) const {
  return find(key) ? std::optional(get_u64(key)) : std::nullopt;
}
std::optional<int64_t> File::find_i64(std::string_view key) const {
  return find(key) ? std::optional(get_i64(key)) : std::nullopt;
}
std::optional<double> File::find_f64(std::string_view key) const {
  return find(key) ? std::optional(get_f64(key)) : std::nullopt;
}
std::optional<bool> File::find_bool(std::string_view key) const {
  return find(key) ? std::optional(get_bool(key)) : std::nullopt;
}
std::optional<std::string_view> File::find_string(std::string_view key) const {
  return find(key) ? std::optional(get_string(key)) : std::nullopt;
}
const Value* File::find_array(std::string_view key) const {
  return find(key) ? &get_array(key) : nullptr;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::get_tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (t == nullptr) {
    throw Error(name_, Error::kNoOffset, "tensor '" + std::string(name) + "' is missing");
  }
  return *t;
}

}  // namespace gguf
