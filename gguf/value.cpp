#include "gguf/value.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <string>

#include "gguf/error.h"

namespace gguf {

namespace {

__extension__ typedef __int128 Int128;

[[noreturn]] void mismatch(std::string_view expected, ValueType found) {
  throw Error("", Error::kNoOffset,
              "expected " + std::string(expected) + ", found " + std::string(value_type_name(found)));
}

template <class T>
T load(const uint8_t* p, bool swap) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if (swap && sizeof(T) > 1) {
    auto bytes = std::bit_cast<std::array<uint8_t, sizeof(T)>>(v);
    std::reverse(bytes.begin(), bytes.end());
    v = std::bit_cast<T>(bytes);
  }
  return v;
}

Int128 load_integer(const uint8_t* p, ValueType t, bool swap) {
  switch (t) {
    case ValueType::kU8: return load<uint8_t>(p, swap);
    case ValueType::kI8: return load<int8_t>(p, swap);
    case ValueType::kU16: return load<uint16_t>(p, swap);
    case ValueType::kI16: return load<int16_t>(p, swap);
    case ValueType::kU32: return load<uint32_t>(p, swap);
    case ValueType::kI32: return load<int32_t>(p, swap);
    case ValueType::kU64: return load<uint64_t>(p, swap);
    case ValueType::kI64: return load<int64_t>(p, swap);
    default: mismatch("an integer", t);
  }
}

double load_number(const uint8_t* p, ValueType t, bool swap) {
  if (t == ValueType::kF32) return load<float>(p, swap);
  if (t == ValueType::kF64) return load<double>(p, swap);
  if (is_integer(t)) return static_cast<double>(load_integer(p, t, swap));
  mismatch("a number", t);
}

uint64_t to_u64(Int128 v, ValueType t) {
  if (v < 0) {
    throw Error("", Error::kNoOffset,
                "expected a non-negative integer, found negative " +
                    std::string(value_type_name(t)) + " " + std::to_string(static_cast<int64_t>(v)));
  }
  return static_cast<uint64_t>(v);
}

int64_t to_i64(Int128 v, ValueType t) {
  if (v > INT64_MAX) {
    throw Error("", Error::kNoOffset,
                "expected an integer that fits INT64, found " + std::string(value_type_name(t)) +
                    " " + std::to_string(static_cast<uint64_t>(v)));
  }
  return static_cast<int64_t>(v);
}

bool to_bool(uint8_t b) { return b != 0; }

void check_index(uint64_t i, uint64_t count) {
  if (i >= count) {
    throw Error("", Error::kNoOffset,
                "array index " + std::to_string(i) + " out of range (size " +
                    std::to_string(count) + ")");
  }
}

}  // namespace

Value Value::scalar(ValueType t, const uint8_t* data, bool swap) {
  Value v;
  v.type_ = t;
  v.data_ = data;
  v.swap_ = swap;
  return v;
}

Value Value::string(std::string_view s) {
  Value v;
  v.type_ = ValueType::kString;
  v.str_ = s;
  return v;
}

Value Value::numeric_array(ValueType elem, const uint8_t* data, uint64_t count, bool swap) {
  Value v;
  v.type_ = ValueType::kArray;
  v.elem_ = elem;
  v.data_ = data;
  v.count_ = count;
  v.swap_ = swap;
  return v;
}

Value Value::string_array(std::vector<std::string_view> items) {
  Value v;
  v.type_ = ValueType::kArray;
  v.elem_ = ValueType::kString;
  v.count_ = items.size();
  v.strings_ = std::move(items);
  return v;
}

Value Value::nested_array(ValueType elem, std::vector<Value> items) {
  Value v;
  v.type_ = ValueType::kArray;
  v.elem_ = elem;
  v.count_ = items.size();
  v.items_ = std::move(items);
  return v;
}

uint64_t Value::as_u64() const { return to_u64(load_integer(data_, type_, swap_), type_); }
int64_t Value::as_i64() const { return to_i64(load_integer(data_, type_, swap_), type_); }
double Value::as_f64() const {
  if (type_ == ValueType::kString || type_ == ValueType::kArray || type_ == ValueType::kBool)
    mismatch("a number", type_);
  return load_number(data_, type_, swap_);
}
bool Value::as_bool() const {
  if (type_ != ValueType::kBool) mismatch("BOOL", type_);
  return to_bool(*data_);
}
std::string_view Value::as_string() const {
  if (type_ != ValueType::kString) mismatch("STRING", type_);
  return str_;
}

ValueType Value::element_type() const {
  if (type_ != ValueType::kArray) mismatch("ARRAY", type_);
  return elem_;
}

uint64_t Value::size() const {
  if (type_ != ValueType::kArray) mismatch("ARRAY", type_);
  return count_;
}

const uint8_t* Value::element(uint64_t i) const {
  if (type_ != ValueType::kArray) mismatch("ARRAY", type_);
  if (elem_ == ValueType::kString || elem_ == ValueType::kArray)
    mismatch("an array of numbers", elem_);
  check_index(i, count_);
  return data_ + i * value_type_size(elem_);
}

uint64_t Value::u64_at(uint64_t i) const {
  return to_u64(load_integer(element(i), elem_, swap_), elem_);
}
int64_t Value::i64_at(uint64_t i) const {
  return to_i64(load_integer(element(i), elem_, swap_), elem_);
}
double Value::f64_at(uint64_t i) const {
  if (elem_ == ValueType::kBool) mismatch("an array of numbers", elem_);
  return load_number(element(i), elem_, swap_);
}
bool Value::bool_at(uint64_t i) const {
  const uint8_t* p = element(i);
  if (elem_ != ValueType::kBool) mismatch("an array of BOOL", elem_);
  return to_bool(*p);
}

std::string_view Value::string_at(uint64_t i) const {
  if (type_ != ValueType::kArray) mismatch("ARRAY", type_);
  if (elem_ != ValueType::kString) mismatch("an array of STRING", elem_);
  check_index(i, count_);
  return strings_[i];
}

const Value& Value::array_at(uint64_t i) const {
  if (type_ != ValueType::kArray) mismatch("ARRAY", type_);
  if (elem_ != ValueType::kArray) mismatch("an array of ARRAY", elem_);
  check_index(i, count_);
  return items_[i];
}

std::span<const uint8_t> Value::raw_bytes() const {
  if (type_ != ValueType::kArray) mismatch("ARRAY", type_);
  if (elem_ == ValueType::kString || elem_ == ValueType::kArray)
    mismatch("an array of numbers", elem_);
  return {data_, count_ * value_type_size(elem_)};
}

}  // namespace gguf
