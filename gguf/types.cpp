#include "gguf/types.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "gguf/blocks.h"

namespace gguf {

namespace {

struct ValueTypeRow {
  std::string_view name;
  uint32_t size;
};
constexpr std::array<ValueTypeRow, kValueTypeCount> kValueTypes = {{
    {"UINT8", 1}, {"INT8", 1}, {"UINT16", 2}, {"INT16", 2}, {"UINT32", 4}, {"INT32", 4},
    {"FLOAT32", 4}, {"BOOL", 1}, {"STRING", 0}, {"ARRAY", 0}, {"UINT64", 8}, {"INT64", 8},
    {"FLOAT64", 8},
}};

using T = TensorType;
// One row per ggml type. Block sizes come from the block structs (blocks.h); the few types whose
// layout we have not written down keep ggml-common.h's byte counts.
constexpr TypeInfo kTypes[] = {
    {T::F32, "F32", 1, 4, false},
    {T::F16, "F16", 1, 2, false},
    {T::Q4_0, "Q4_0", kQK, sizeof(BlockQ4_0), true},
    {T::Q4_1, "Q4_1", kQK, sizeof(BlockQ4_1), true},
    {T::Q5_0, "Q5_0", kQK, sizeof(BlockQ5_0), true},
    {T::Q5_1, "Q5_1", kQK, sizeof(BlockQ5_1), true},
    {T::Q8_0, "Q8_0", kQK, sizeof(BlockQ8_0), true},
    {T::Q8_1, "Q8_1", kQK, sizeof(BlockQ8_1), true},
    {T::Q2_K, "Q2_K", kQKK, sizeof(BlockQ2_K), true},
    {T::Q3_K, "Q3_K", kQKK, sizeof(BlockQ3_K), true},
    {T::Q4_K, "Q4_K", kQKK, sizeof(BlockQ4_K), true},
    {T::Q5_K, "Q5_K", kQKK, sizeof(BlockQ5_K), true},
    {T::Q6_K, "Q6_K", kQKK, sizeof(BlockQ6_K), true},
    {T::Q8_K, "Q8_K", kQKK, sizeof(BlockQ8_K), true},
    {T::IQ2_XXS, "IQ2_XXS", kQKK, sizeof(BlockIQ2_XXS), true},
    {T::IQ2_XS, "IQ2_XS", kQKK, sizeof(BlockIQ2_XS), true},
    {T::IQ3_XXS, "IQ3_XXS", kQKK, sizeof(BlockIQ3_XXS), true},
    {T::IQ1_S, "IQ1_S", kQKK, sizeof(BlockIQ1_S), true},
    {T::IQ4_NL, "IQ4_NL", kQK, sizeof(BlockIQ4_NL), true},
    {T::IQ3_S, "IQ3_S", kQKK, sizeof(BlockIQ3_S), true},
    {T::IQ2_S, "IQ2_S", kQKK, sizeof(BlockIQ2_S), true},
    {T::IQ4_XS, "IQ4_XS", kQKK, sizeof(BlockIQ4_XS), true},
    {T::I8, "I8", 1, 1, false},
    {T::I16, "I16", 1, 2, false},
    {T::I32, "I32", 1, 4, false},
    {T::I64, "I64", 1, 8, false},
    {T::F64, "F64", 1, 8, false},
    {T::IQ1_M, "IQ1_M", kQKK, sizeof(BlockIQ1_M), true},
    {T::BF16, "BF16", 1, 2, false},
    {T::TQ1_0, "TQ1_0", kQKK, sizeof(BlockTQ1_0), true},
    {T::TQ2_0, "TQ2_0", kQKK, sizeof(BlockTQ2_0), true},
    {T::MXFP4, "MXFP4", kQK, sizeof(BlockMXFP4), true},
    {T::NVFP4, "NVFP4", 64, 4 + 32, true},
    {T::Q1_0, "Q1_0", 128, 2 + 16, true},
    {T::Q2_0, "Q2_0", 64, 2 + 16, true},
};

// llama_ftype names; gaps are retired ids.
constexpr std::string_view kFileTypes[] = {
    "ALL_F32", "MOSTLY_F16", "MOSTLY_Q4_0", "MOSTLY_Q4_1", "MOSTLY_Q4_1_SOME_F16", "", "",
    "MOSTLY_Q8_0", "MOSTLY_Q5_0", "MOSTLY_Q5_1", "MOSTLY_Q2_K", "MOSTLY_Q3_K_S", "MOSTLY_Q3_K_M",
    "MOSTLY_Q3_K_L", "MOSTLY_Q4_K_S", "MOSTLY_Q4_K_M", "MOSTLY_Q5_K_S", "MOSTLY_Q5_K_M",
    "MOSTLY_Q6_K", "MOSTLY_IQ2_XXS", "MOSTLY_IQ2_XS", "MOSTLY_Q2_K_S", "MOSTLY_IQ3_XS",
    "MOSTLY_IQ3_XXS", "MOSTLY_IQ1_S", "MOSTLY_IQ4_NL", "MOSTLY_IQ3_S", "MOSTLY_IQ3_M",
    "MOSTLY_IQ2_S", "MOSTLY_IQ2_M", "MOSTLY_IQ4_XS", "MOSTLY_IQ1_M", "MOSTLY_BF16", "", "", "",
    "MOSTLY_TQ1_0", "MOSTLY_TQ2_0", "MOSTLY_MXFP4_MOE",
};

}  // namespace

std::string_view value_type_name(ValueType t) {
  return kValueTypes.at(static_cast<uint32_t>(t)).name;
}
bool is_valid_value_type(uint32_t raw) { return raw < kValueTypeCount; }
uint32_t value_type_size(ValueType t) { return kValueTypes.at(static_cast<uint32_t>(t)).size; }

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kU16: case ValueType::kI16:
    case ValueType::kU32: case ValueType::kI32: case ValueType::kU64: case ValueType::kI64:
      return true;
    default:
      return false;
  }
}
bool is_float(ValueType t) { return t == ValueType::kF32 || t == ValueType::kF64; }

const TypeInfo* type_info(uint32_t raw_id) {
  // Ids are small and dense: an index by id, built once.
  static const auto by_id = [] {
    std::array<const TypeInfo*, 64> index{};
    for (const TypeInfo& info : kTypes) index.at(static_cast<uint32_t>(info.type)) = &info;
    return index;
  }();
  return raw_id < by_id.size() ? by_id[raw_id] : nullptr;
}

const TypeInfo& type_info(TensorType t) { return *type_info(static_cast<uint32_t>(t)); }

std::span<const TypeInfo> all_types() { return kTypes; }

std::optional<TensorType> type_from_name(std::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (std::ranges::equal(info.name, name, [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) ==
                 std::toupper(static_cast<unsigned char>(b));
        })) {
      return info.type;
    }
  }
  return std::nullopt;
}

std::string_view file_type_name(uint32_t ftype) {
  return ftype < std::size(kFileTypes) ? kFileTypes[ftype] : std::string_view{};
}

}  // namespace gguf
