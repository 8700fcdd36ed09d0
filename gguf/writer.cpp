#include "gguf/writer.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gguf/error.h"

namespace gguf {

namespace {

OwnedValue scalar(ValueType t, uint64_t bits) {
  OwnedValue v;
  v.type = t;
  v.bits = bits;
  return v;
}

// Serializes numbers in the file's byte order into a growing buffer.
class ByteWriter {
 public:
  ByteWriter(uint32_t version, bool big_endian) : version_(version), big_endian_(big_endian) {}

  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  // Writes the low `size` bytes of `bits`.
  void number(uint64_t bits, uint32_t size) {
    uint8_t b[8];
    for (uint32_t i = 0; i < size; ++i) {
      const uint32_t shift = 8 * (big_endian_ ? size - 1 - i : i);
      b[i] = static_cast<uint8_t>(bits >> shift);
    }
    raw(b, size);
  }
  void u32(uint32_t v) { number(v, 4); }
  void u64(uint64_t v) { number(v, 8); }
  void count(uint64_t n) { version_ == 1 ? u32(static_cast<uint32_t>(n)) : u64(n); }
  void string(std::string_view s) {
    count(s.size());
    raw(s.data(), s.size());
  }
  void value(const OwnedValue& v) {
    if (v.type == ValueType::kString) {
      string(v.str);
    } else if (v.type == ValueType::kArray) {
      u32(static_cast<uint32_t>(v.elem));
      count(v.items.size());
      for (const OwnedValue& item : v.items) value(item);
    } else {
      number(v.bits, value_type_size(v.type));
    }
  }

  std::vector<uint8_t> out;

 private:
  uint32_t version_;
  bool big_endian_;
};

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

OwnedValue OwnedValue::u8(uint8_t v) { return scalar(ValueType::kU8, v); }
OwnedValue OwnedValue::i8(int8_t v) { return scalar(ValueType::kI8, static_cast<uint64_t>(int64_t{v})); }
OwnedValue OwnedValue::u16(uint16_t v) { return scalar(ValueType::kU16, v); }
OwnedValue OwnedValue::i16(int16_t v) { return scalar(ValueType::kI16, static_cast<uint64_t>(int64_t{v})); }
OwnedValue OwnedValue::u32(uint32_t v) { return scalar(ValueType::kU32, v); }
OwnedValue OwnedValue::i32(int32_t v) { return scalar(ValueType::kI32, static_cast<uint64_t>(int64_t{v})); }
OwnedValue OwnedValue::u64(uint64_t v) { return scalar(ValueType::kU64, v); }
OwnedValue OwnedValue::i64(int64_t v) { return scalar(ValueType::kI64, static_cast<uint64_t>(v)); }
OwnedValue OwnedValue::f32(float v) { return scalar(ValueType::kF32, std::bit_cast<uint32_t>(v)); }
OwnedValue OwnedValue::f64(double v) { return scalar(ValueType::kF64, std::bit_cast<uint64_t>(v)); }
OwnedValue OwnedValue::boolean(bool v) { return scalar(ValueType::kBool, v ? 1 : 0); }

OwnedValue OwnedValue::string(std::string v) {
  OwnedValue o;
  o.type = ValueType::kString;
  o.str = std::move(v);
  return o;
}

OwnedValue OwnedValue::array(ValueType elem, std::vector<OwnedValue> items) {
  OwnedValue o;
  o.type = ValueType::kArray;
  o.elem = elem;
  o.items = std::move(items);
  return o;
}

OwnedValue OwnedValue::string_array(const std::vector<std::string>& items) {
  std::vector<OwnedValue> v;
  v.reserve(items.size());
  for (const std::string& s : items) v.push_back(string(s));
  return array(ValueType::kString, std::move(v));
}

OwnedValue OwnedValue::f32_array(const std::vector<float>& items) {
  std::vector<OwnedValue> v;
  v.reserve(items.size());
  for (float x : items) v.push_back(f32(x));
  return array(ValueType::kF32, std::move(v));
}

OwnedValue OwnedValue::i32_array(const std::vector<int32_t>& items) {
  std::vector<OwnedValue> v;
  v.reserve(items.size());
  for (int32_t x : items) v.push_back(i32(x));
  return array(ValueType::kI32, std::move(v));
}

OwnedValue OwnedValue::from(const Value& v) {
  switch (v.type()) {
    case ValueType::kString:
      return string(std::string(v.as_string()));
    case ValueType::kBool:
      return boolean(v.as_bool());
    case ValueType::kF32:
      return f32(static_cast<float>(v.as_f64()));
    case ValueType::kF64:
      return f64(v.as_f64());
    case ValueType::kArray: {
      std::vector<OwnedValue> items;
      items.reserve(v.size());
      for (uint64_t i = 0; i < v.size(); ++i) {
        switch (v.element_type()) {
          case ValueType::kString: items.push_back(string(std::string(v.string_at(i)))); break;
          case ValueType::kArray: items.push_back(from(v.array_at(i))); break;
          case ValueType::kBool: items.push_back(boolean(v.bool_at(i))); break;
          case ValueType::kF32: items.push_back(f32(static_cast<float>(v.f64_at(i)))); break;
          case ValueType::kF64: items.push_back(f64(v.f64_at(i))); break;
          case ValueType::kU64: items.push_back(scalar(ValueType::kU64, v.u64_at(i))); break;
          default:
            items.push_back(scalar(v.element_type(), static_cast<uint64_t>(v.i64_at(i))));
        }
      }
      return array(v.element_type(), std::move(items));
    }
    case ValueType::kU64:
      return u64(v.as_u64());
    default:  // the other integers fit int64
      return scalar(v.type(), static_cast<uint64_t>(v.as_i64()));
  }
}

Writer::Writer(uint32_t version, bool big_endian) : version_(version), big_endian_(big_endian) {}

void Writer::set(std::string key, OwnedValue value) {
  const auto it = std::ranges::find(metadata_, key, &std::pair<std::string, OwnedValue>::first);
  if (it != metadata_.end()) {
    it->second = std::move(value);
  } else {
    metadata_.emplace_back(std::move(key), std::move(value));
  }
}

void Writer::set_alignment(uint32_t alignment) {
  if (!std::has_single_bit(alignment)) {
    throw Error("", Error::kNoOffset,
                "alignment must be a power of two, found " + std::to_string(alignment));
  }
  set("general.alignment", OwnedValue::u32(alignment));
}

uint64_t Writer::alignment() const {
  for (const auto& [key, v] : metadata_) {
    if (key == "general.alignment") return v.bits;
  }
  return 32;
}

void Writer::add_tensor(std::string name, TensorType type, std::vector<uint64_t> ne,
                        std::vector<uint8_t> data) {
  const TypeInfo& info = type_info(type);
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  const uint64_t expected = n / info.block_size * info.block_bytes;
  if (ne.empty() || ne[0] % info.block_size != 0 || data.size() != expected) {
    throw Error("", Error::kNoOffset,
                "tensor '" + name + "': expected " + std::to_string(expected) + " bytes of " +
                    std::string(info.name) + " data with row length a multiple of " +
                    std::to_string(info.block_size) + ", found " + std::to_string(data.size()));
  }
  tensors_.push_back({std::move(name), type, std::move(ne), std::move(data)});
}

void Writer::emit(const Sink& sink) const {
  const uint64_t align = alignment();
  ByteWriter w(version_, big_endian_);
  w.raw("GGUF", 4);
  w.u32(version_);
  w.count(tensors_.size());
  w.count(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    w.string(key);
    w.u32(static_cast<uint32_t>(value.type));
    w.value(value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    w.string(t.name);
    w.u32(static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) w.count(d);
    w.u32(static_cast<uint32_t>(t.type));
    w.u64(offset);
    offset = align_up(offset + t.data.size(), align);
  }
  w.out.resize(align_up(w.out.size(), align), 0);
  sink(w.out.data(), w.out.size());
  const std::vector<uint8_t> zeros(align, 0);
  for (const Tensor& t : tensors_) {
    sink(t.data.data(), t.data.size());
    const uint64_t pad = align_up(t.data.size(), align) - t.data.size();
    if (&t != &tensors_.back()) sink(zeros.data(), pad);
  }
}

std::vector<uint8_t> Writer::to_bytes() const {
  std::vector<uint8_t> out;
  emit([&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); });
  return out;
}

void Writer::write(const std::string& path) const {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw Error(path, Error::kNoOffset, std::string("cannot create: ") + std::strerror(errno));
  emit([&](const uint8_t* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, f.get()) != n) {
      throw Error(path, Error::kNoOffset, std::string("write failed: ") + std::strerror(errno));
    }
  });
  if (std::fflush(f.get()) != 0) {
    throw Error(path, Error::kNoOffset, std::string("write failed: ") + std::strerror(errno));
  }
}

}  // namespace gguf
