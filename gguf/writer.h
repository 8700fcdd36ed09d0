// Writing GGUF files: owned metadata values, tensors, alignment padding.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/types.h"
#include "gguf/value.h"

namespace gguf {

// A metadata value that owns its data (the writer's counterpart of the Value view).
// Scalars keep their bit pattern in `bits` (integers sign- or zero-extended, floats as IEEE bits
// of their own width), so equality is exact, NaNs included.
struct OwnedValue {
  ValueType type = ValueType::kU8;
  ValueType elem = ValueType::kU8;  // ARRAY element type
  uint64_t bits = 0;
  std::string str;
  std::vector<OwnedValue> items;  // ARRAY elements

  static OwnedValue u8(uint8_t v);
  static OwnedValue i8(int8_t v);
  static OwnedValue u16(uint16_t v);
  static OwnedValue i16(int16_t v);
  static OwnedValue u32(uint32_t v);
  static OwnedValue i32(int32_t v);
  static OwnedValue u64(uint64_t v);
  static OwnedValue i64(int64_t v);
  static OwnedValue f32(float v);
  static OwnedValue f64(double v);
  static OwnedValue boolean(bool v);
  static OwnedValue string(std::string v);
  static OwnedValue array(ValueType elem, std::vector<OwnedValue> items);
  static OwnedValue string_array(const std::vector<std::string>& items);
  static OwnedValue f32_array(const std::vector<float>& items);
  static OwnedValue i32_array(const std::vector<int32_t>& items);

  // A deep copy of a parsed value.
  static OwnedValue from(const Value& v);

  bool operator==(const OwnedValue&) const = default;
};

// Builds a GGUF file in memory order: header, metadata, tensor infos, padding, tensor data.
//
// Ownership: owns its metadata and tensor bytes. Not thread-safe.
// Tensor data offsets are assigned in the order tensors are added, each aligned to the alignment
// (general.alignment if set, else 32), so the result round-trips bit-exactly through File::parse.
class Writer {
 public:
  explicit Writer(uint32_t version = 3, bool big_endian = false);

  // Sets (or replaces) a key; insertion order is kept. Setting general.alignment changes padding.
  void set(std::string key, OwnedValue value);
  void set_alignment(uint32_t alignment);  // must be a power of two
  // Adds a tensor; `data` must hold exactly the tensor's byte size. `ne[0]` is the row length.
  void add_tensor(std::string name, TensorType type, std::vector<uint64_t> ne,
                  std::vector<uint8_t> data);

  std::vector<uint8_t> to_bytes() const;
  // Streams the file; throws gguf::Error on I/O failure.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> ne;
    std::vector<uint8_t> data;
  };
  using Sink = std::function<void(const uint8_t*, size_t)>;
  void emit(const Sink& sink) const;
  uint64_t alignment() const;

  uint32_t version_;
  bool big_endian_;
  std::vector<std::pair<std::string, OwnedValue>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace gguf
