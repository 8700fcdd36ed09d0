// GGUF parsing and validation from bytes in memory (no I/O here, so it can be fuzzed).
//
// Layout (spec): magic "GGUF" | u32 version | count tensors | count kv | kv... | tensor infos...
//   | padding to general.alignment | tensor data. `count` and string/array lengths are u32 in
//   version 1 and u64 from version 2 on.
// Every length is checked against the bytes left before anything is allocated from it.
#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <string>

#include "gguf/file.h"

namespace gguf {

namespace {

constexpr int kMaxArrayDepth = 16;  // nested arrays deeper than this are refused (stack safety)

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

std::string str(uint64_t v) { return std::to_string(v); }

}  // namespace

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, File& out) : b_(bytes), f_(out) {}

  void run() {
    read_header();
    read_metadata();
    read_tensor_infos();
    place_tensor_data();
  }

 private:
  [[noreturn]] void fail(uint64_t at, const std::string& msg) const {
    throw Error(f_.name_, at, msg);
  }

  uint64_t left() const { return b_.size() - pos_; }

  void need(uint64_t n, std::string_view what) const {
    if (n > left()) {
      fail(pos_, "truncated file while reading " + std::string(what) + ": expected " + str(n) +
                     " bytes, found " + str(left()));
    }
  }

  template <class T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    if (swap_) v = byteswap(v);
    pos_ += sizeof v;
    return v;
  }

  template <class T>
  static T byteswap(T v) {
    auto bytes = std::bit_cast<std::array<uint8_t, sizeof(T)>>(v);
    std::reverse(bytes.begin(), bytes.end());
    return std::bit_cast<T>(bytes);
  }

  // Counts and lengths: u32 in GGUF v1, u64 later.
  uint64_t read_count(std::string_view what) {
    return version_ == 1 ? read<uint32_t>(what) : read<uint64_t>(what);
  }
  uint64_t count_size() const { return version_ == 1 ? 4 : 8; }

  std::string_view read_string(std::string_view what) {
    const uint64_t at = pos_;
    const uint64_t n = read_count(what);
    if (n > left()) {
      fail(at, std::string(what) + " length " + str(n) + " is larger than the " + str(left()) +
                   " bytes left in the file");
    }
    std::string_view s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  ValueType read_value_type(std::string_view what, std::string_view key) {
    const uint64_t at = pos_;
    const uint32_t raw = read<uint32_t>(what);
    if (!is_valid_value_type(raw)) {
      fail(at, "unknown " + std::string(what) + " " + str(raw) + " for key " + quoted(key) +
                   ": expected 0..12");
    }
    return static_cast<ValueType>(raw);
  }

  // Ensures `count` items of at least `min_size` bytes each can fit in what is left.
  void check_fits(uint64_t at, uint64_t count, uint64_t min_size, const std::string& what) const {
    if (min_size != 0 && count > left() / min_size) {
      fail(at, what + ": count " + str(count) + " needs at least " + str(min_size) +
                   " bytes each, but only " + str(left()) + " bytes are left in the file");
    }
  }

  void check_bool(const uint8_t* p, std::string_view key) const {
    if (*p > 1) {
      fail(static_cast<uint64_t>(p - b_.data()),
           "invalid BOOL for key " + quoted(key) + ": expected byte 0 or 1, found " + str(*p));
    }
  }

  Value read_value(ValueType t, std::string_view key, int depth) {
    if (t == ValueType::kString) return Value::string(read_string("string value"));
    if (t != ValueType::kArray) {
      const uint32_t size = value_type_size(t);
      need(size, std::string(value_type_name(t)) + " value of key " + quoted(key));
      const uint8_t* p = b_.data() + pos_;
      if (t == ValueType::kBool) check_bool(p, key);
      pos_ += size;
      return Value::scalar(t, p, swap_);
    }
    return read_array(key, depth);
  }

  Value read_array(std::string_view key, int depth) {
    const uint64_t at = pos_;
    if (depth >= kMaxArrayDepth) {
      fail(at, "array nesting too deep for key " + quoted(key) + ": expected at most " +
                   str(kMaxArrayDepth) + " levels");
    }
    const ValueType elem = read_value_type("array element type", key);
    const uint64_t n = read_count("array length");
    const std::string what = "array of " + std::string(value_type_name(elem)) + " for key " +
                             quoted(key);
    if (elem == ValueType::kString) {
      check_fits(at, n, count_size(), what);
      std::vector<std::string_view> items;
      items.reserve(n);
      for (uint64_t i = 0; i < n; ++i) items.push_back(read_string("string in " + what));
      return Value::string_array(std::move(items));
    }
    if (elem == ValueType::kArray) {
      check_fits(at, n, 4 + count_size(), what);
      std::vector<Value> items;
      items.reserve(n);
      for (uint64_t i = 0; i < n; ++i) items.push_back(read_array(key, depth + 1));
      return Value::nested_array(elem, std::move(items));
    }
    const uint32_t size = value_type_size(elem);
    check_fits(at, n, size, what);
    const uint8_t* p = b_.data() + pos_;
    if (elem == ValueType::kBool) {
      for (uint64_t i = 0; i < n; ++i) check_bool(p + i, key);
    }
    pos_ += n * size;
    return Value::numeric_array(elem, p, n, swap_);
  }

  void read_header() {
    if (b_.size() < 4) {
      fail(0, "truncated file while reading magic: expected 4 bytes 'GGUF', found " +
                  str(b_.size()));
    }
    if (std::memcmp(b_.data(), "GGUF", 4) != 0) {
      std::string_view found(reinterpret_cast<const char*>(b_.data()), 4);
      fail(0, "bad magic: expected 'GGUF', found " + quoted(found) + " (not a GGUF file)");
    }
    pos_ = 4;
    uint32_t v = read<uint32_t>("version");
    if (v < 1 || v > 3) {
      const uint32_t swapped = byteswap(v);
      if (swapped >= 1 && swapped <= 3) {
        swap_ = true;  // big-endian file: every number is byte-swapped
        v = swapped;
      } else {
        fail(4, "unsupported version: expected 1, 2 or 3, found " + str(v));
      }
    }
    version_ = v;
    f_.version_ = v;
    f_.big_endian_ = swap_;
    n_tensors_ = read_count("tensor count");
    n_kv_ = read_count("metadata count");
  }

  void read_metadata() {
    // Smallest entry: empty key, type, a 1-byte value.
    check_fits(pos_, n_kv_, count_size() + 4 + 1, "metadata");
    f_.metadata_.reserve(n_kv_);
    for (uint64_t i = 0; i < n_kv_; ++i) {
      const uint64_t at = pos_;
      const std::string_view key = read_string("metadata key");
      const ValueType t = read_value_type("value type", key);
      const uint64_t value_at = pos_;
      Value value = read_value(t, key, 0);
      const auto [it, inserted] = f_.key_index_.emplace(key, f_.metadata_.size());
      if (!inserted) {
        fail(at, "duplicate metadata key " + quoted(key) + " (first at byte " +
                     str(f_.metadata_[it->second].offset) + ")");
      }
      if (key == "general.alignment") set_alignment(value, value_at);
      f_.metadata_.push_back({key, std::move(value), at});
    }
  }

  void set_alignment(const Value& v, uint64_t at) {
    if (!is_integer(v.type())) {
      fail(at, "general.alignment: expected UINT32, found " + std::string(value_type_name(v.type())));
    }
    const int64_t raw = v.type() == ValueType::kU64 ? static_cast<int64_t>(std::min<uint64_t>(
                                                         v.as_u64(), INT64_MAX))
                                                   : v.as_i64();
    if (raw <= 0 || !std::has_single_bit(static_cast<uint64_t>(raw))) {
      fail(at, "general.alignment: expected a power of two, found " + std::to_string(raw));
    }
    f_.alignment_ = static_cast<uint64_t>(raw);
  }

  void read_tensor_infos() {
    // Smallest info: empty name, n_dims, one dimension, type, offset.
    check_fits(pos_, n_tensors_, count_size() + 4 + count_size() + 4 + 8, "tensor infos");
    f_.tensors_.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      TensorInfo t = read_tensor_info();
      const auto [it, inserted] = f_.tensor_index_.emplace(t.name, f_.tensors_.size());
      if (!inserted) {
        fail(t.info_offset, "duplicate tensor name " + quoted(t.name) + " (first at byte " +
                                str(f_.tensors_[it->second].info_offset) + ")");
      }
      f_.tensors_.push_back(t);
    }
  }

  TensorInfo read_tensor_info() {
    TensorInfo t{};
    t.info_offset = pos_;
    t.name = read_string("tensor name");
    const std::string who = "tensor " + quoted(t.name);
    const uint64_t dims_at = pos_;
    const uint32_t n_dims = read<uint32_t>("n_dims of " + who);
    if (n_dims == 0 || n_dims > kMaxDims) {
      fail(dims_at, who + ": expected n_dims 1.." + str(kMaxDims) + ", found " + str(n_dims));
    }
    t.n_dims = static_cast<int>(n_dims);
    t.ne.fill(1);
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t at = pos_;
      const uint64_t ne = read_count("dimensions of " + who);
      if (ne == 0 || ne > static_cast<uint64_t>(INT64_MAX)) {
        fail(at, who + ": dimension " + str(d) + " must be in 1..INT64_MAX, found " + str(ne));
      }
      if (__builtin_mul_overflow(n_elements, ne, &n_elements) ||
          n_elements > static_cast<uint64_t>(INT64_MAX)) {
        fail(at, who + ": element count overflows INT64 at dimension " + str(d));
      }
      t.ne[d] = ne;
    }
    t.n_elements = n_elements;
    const uint64_t type_at = pos_;
    const uint32_t raw_type = read<uint32_t>("type of " + who);
    const TypeInfo* info = type_info(raw_type);
    if (info == nullptr) {
      fail(type_at, who + ": unknown ggml type id " + str(raw_type));
    }
    t.type = info->type;
    if (t.ne[0] % info->block_size != 0) {
      fail(dims_at, who + ": row length " + str(t.ne[0]) + " is not a multiple of " +
                        std::string(info->name) + "'s block size " + str(info->block_size));
    }
    const uint64_t n_blocks = n_elements / info->block_size;
    if (__builtin_mul_overflow(n_blocks, uint64_t{info->block_bytes}, &t.n_bytes)) {
      fail(type_at, who + ": byte size overflows UINT64");
    }
    const uint64_t offset_at = pos_;
    t.offset = read<uint64_t>("data offset of " + who);
    if (t.offset % f_.alignment_ != 0) {
      fail(offset_at, who + ": data offset " + str(t.offset) + " is not a multiple of the alignment " +
                          str(f_.alignment_));
    }
    return t;
  }

  void place_tensor_data() {
    const uint64_t a = f_.alignment_;
    const uint64_t data_offset = (pos_ + a - 1) / a * a;  // pos_ <= size, a <= 2^63: no overflow
    f_.data_offset_ = data_offset;
    for (TensorInfo& t : f_.tensors_) {
      uint64_t start = 0;
      uint64_t end = 0;
      if (__builtin_add_overflow(data_offset, t.offset, &start) ||
          __builtin_add_overflow(start, t.n_bytes, &end) || end > b_.size()) {
        fail(t.info_offset, "tensor " + quoted(t.name) + ": data [" + str(t.offset) + ", +" +
                                str(t.n_bytes) + ") past end of file: data section starts at " +
                                str(data_offset) + ", file size is " + str(b_.size()));
      }
      t.data = b_.subspan(start, t.n_bytes);
    }
    check_overlaps();
  }

  void check_overlaps() const {
    std::vector<size_t> order(f_.tensors_.size());
    std::iota(order.begin(), order.end(), 0);
    std::ranges::sort(order, [&](size_t x, size_t y) {
      return f_.tensors_[x].offset < f_.tensors_[y].offset;
    });
    for (size_t i = 1; i < order.size(); ++i) {
      const TensorInfo& prev = f_.tensors_[order[i - 1]];
      const TensorInfo& cur = f_.tensors_[order[i]];
      if (prev.offset + prev.n_bytes > cur.offset) {
        fail(cur.info_offset, "tensor " + quoted(cur.name) + ": data [" + str(cur.offset) + ", " +
                                  str(cur.offset + cur.n_bytes) + ") overlaps tensor " +
                                  quoted(prev.name) + " [" + str(prev.offset) + ", " +
                                  str(prev.offset + prev.n_bytes) + ")");
      }
    }
  }

  std::span<const uint8_t> b_;
  File& f_;
  uint64_t pos_ = 0;
  bool swap_ = false;
  uint32_t version_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

File File::parse(std::span<const uint8_t> bytes, std::string name) {
  File f;
  f.name_ = std::move(name);
  f.bytes_ = bytes;
  Parser(bytes, f).run();
  return f;
}

}  // namespace gguf
