// A metadata value: a read-only view into the bytes of a parsed GGUF file.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gguf/types.h"

namespace gguf {

// One metadata value (scalar, string or array) as it lies in the file.
//
// Ownership: points into the file's bytes; valid while the File that produced it lives.
// Numbers are read on access (unaligned, byte-swapped for big-endian files), so numeric arrays cost
// nothing to parse and are never copied. Arrays of strings keep one string_view per element, and
// nested arrays one Value per element: both are bounded by the file's size.
// Accessors throw gguf::Error naming the expected and the found type on a mismatch; File::get_*
// adds the key. Thread-safety: immutable, safe to share.
class Value {
 public:
  ValueType type() const { return type_; }

  // Scalars. Integer accessors take any integer width whose value fits; as_f64 takes floats
  // and integers.
  uint64_t as_u64() const;
  int64_t as_i64() const;
  double as_f64() const;
  bool as_bool() const;
  std::string_view as_string() const;

  // Arrays.
  bool is_array() const { return type_ == ValueType::kArray; }
  ValueType element_type() const;  // ARRAY only
  uint64_t size() const;           // ARRAY only: number of elements
  uint64_t u64_at(uint64_t i) const;
  int64_t i64_at(uint64_t i) const;
  double f64_at(uint64_t i) const;
  bool bool_at(uint64_t i) const;
  std::string_view string_at(uint64_t i) const;
  const Value& array_at(uint64_t i) const;
  // The raw little- or big-endian bytes of a numeric or bool array (size() * element size).
  std::span<const uint8_t> raw_bytes() const;

  // Construction is the parser's job.
  static Value scalar(ValueType t, const uint8_t* data, bool swap);
  static Value string(std::string_view s);
  static Value numeric_array(ValueType elem, const uint8_t* data, uint64_t count, bool swap);
  static Value string_array(std::vector<std::string_view> items);
  static Value nested_array(ValueType elem, std::vector<Value> items);

 private:
  const uint8_t* element(uint64_t i) const;  // bounds- and kind-checked numeric element

  ValueType type_ = ValueType::kU8;
  ValueType elem_ = ValueType::kU8;  // element type of an ARRAY
  bool swap_ = false;               // big-endian file
  const uint8_t* data_ = nullptr;   // scalar bytes, or first element of a numeric array
  uint64_t count_ = 0;              // ARRAY element count
  std::string_view str_;
  std::vector<std::string_view> strings_;
  std::vector<Value> items_;
};

}  // namespace gguf
