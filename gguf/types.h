// GGUF value types and the ggml tensor type table.
//
// The tensor type table is the single source of truth for block sizes and byte counts of every
// ggml type id a GGUF file may name. Ids retired by ggml (4, 5, 31-33, 36-38) are unknown here, as
// they are to current readers: a file using them is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gguf {

// Metadata value types, numbered as in the file.
enum class ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

// "UINT8", "STRING", ... as the spec names them; "UNKNOWN(n)" is not produced: callers check
// is_valid_value_type first.
std::string_view value_type_name(ValueType t);
bool is_valid_value_type(uint32_t raw);
// Byte size of a fixed-size value type; 0 for kString and kArray.
uint32_t value_type_size(ValueType t);
bool is_integer(ValueType t);
bool is_float(ValueType t);

// ggml tensor types, numbered as in the file. The values keep ggml's type names (Q4_K, IQ4_XS),
// the way every tool and file name spells them, rather than our kFoo style.
enum class TensorType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};

struct TypeInfo {
  TensorType type;
  std::string_view name;   // ggml's name, upper case: "Q4_K"
  uint32_t block_size;     // elements per block
  uint32_t block_bytes;    // bytes per block
  bool quantized;
};

// The entry for a raw type id, or nullptr when the id is not a known ggml type.
const TypeInfo* type_info(uint32_t raw_id);
const TypeInfo& type_info(TensorType t);
// All known types, ordered by id.
std::span<const TypeInfo> all_types();
std::optional<TensorType> type_from_name(std::string_view name);  // case-insensitive

// Name of a `general.file_type` value (llama_ftype): "MOSTLY_Q4_K_M"; empty when unknown.
std::string_view file_type_name(uint32_t ftype);

}  // namespace gguf
