#include "engine/kernels/traits.h"

#include <array>
#include <cstddef>
#include <cstring>

#include "engine/kernels/avx2.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/packed_tiles.h"
#include "engine/kernels/ref.h"

namespace engine::kernels {

namespace {

using gguf::TensorType;

// The packed layouts (packing.h): each field's runs, from the block structs.
constexpr int runs(size_t field_bytes, size_t run) { return static_cast<int>(field_bytes / run); }
constexpr int at(size_t offset) { return static_cast<int>(offset); }
constexpr PackedField kQ4_0Fields[] = {{at(offsetof(BlockQ4_0, d)), 2, 1},
                                       {at(offsetof(BlockQ4_0, qs)), 4, runs(sizeof(BlockQ4_0::qs), 4)}};
constexpr PackedField kQ8_0Fields[] = {{at(offsetof(BlockQ8_0, d)), 2, 1},
                                       {at(offsetof(BlockQ8_0, qs)), 4, runs(sizeof(BlockQ8_0::qs), 4)}};
constexpr PackedField kQ4_KFields[] = {{at(offsetof(BlockQ4_K, d)), 2, 1},
                                       {at(offsetof(BlockQ4_K, dmin)), 2, 1},
                                       {at(offsetof(BlockQ4_K, scales)), 4, runs(sizeof(BlockQ4_K::scales), 4)},
                                       {at(offsetof(BlockQ4_K, qs)), 4, runs(sizeof(BlockQ4_K::qs), 4)}};
// Q6_K: d first, then the scales, ql and qh runs (PQ6_K in packed_tiles.inc reads this order).
constexpr PackedField kQ6_KFields[] = {{at(offsetof(BlockQ6_K, d)), 2, 1},
                                       {at(offsetof(BlockQ6_K, scales)), 4, runs(sizeof(BlockQ6_K::scales), 4)},
                                       {at(offsetof(BlockQ6_K, ql)), 4, runs(sizeof(BlockQ6_K::ql), 4)},
                                       {at(offsetof(BlockQ6_K, qh)), 4, runs(sizeof(BlockQ6_K::qh), 4)}};
constexpr PackedField kIQ4_XSFields[] = {{at(offsetof(BlockIQ4_XS, d)), 2, 1},
                                         {at(offsetof(BlockIQ4_XS, scales_h)), 2, 1},
                                         {at(offsetof(BlockIQ4_XS, scales_l)), 4, 1},
                                         {at(offsetof(BlockIQ4_XS, qs)), 4, runs(sizeof(BlockIQ4_XS::qs), 4)}};
static_assert(offsetof(BlockIQ4_NL, d) == offsetof(BlockQ4_0, d) && offsetof(BlockIQ4_NL, qs) == offsetof(BlockQ4_0, qs));
constexpr PackedLayout kQ4_0Packed{kQ4_0Fields};  // also IQ4_NL: the same fields
constexpr PackedLayout kQ8_0Packed{kQ8_0Fields};
constexpr PackedLayout kQ4_KPacked{kQ4_KFields};
constexpr PackedLayout kQ6_KPacked{kQ6_KFields};
constexpr PackedLayout kIQ4_XSPacked{kIQ4_XSFields};

using A = ActFormat;
// clang-format off
constexpr KernelTraits kTable[] = {
  // type              act               reference kernels                       AVX2 tile           packed layout + tiles
  {TensorType::F32,    A::kF32,          ref::dequant_f32,    ref::vec_dot_f32,    avx2::tile_f32,     nullptr, {},
   avx512vnni::tile_f32},
  {TensorType::F16,    A::kF16Rounded,   ref::dequant_f16,    ref::vec_dot_f16,    avx2::tile_f16,     nullptr, {},
   avx512vnni::tile_f16},
  {TensorType::BF16,   A::kBF16Rounded,  ref::dequant_bf16,   ref::vec_dot_bf16,   avx2::tile_bf16,    nullptr, {},
   avx512vnni::tile_bf16},
  {TensorType::Q4_0,   A::kQ8A,          ref::dequant_q4_0,   ref::vec_dot_q4_0,   avx2::tile_q4_0,    &kQ4_0Packed,
   {avx2::packed_q4_0, avxvnni::packed_q4_0, avx512vnni::packed_q4_0}},
  {TensorType::Q4_1,   A::kQ8A,          ref::dequant_q4_1,   ref::vec_dot_q4_1,   avx2::tile_q4_1},
  {TensorType::Q5_0,   A::kQ8A,          ref::dequant_q5_0,   ref::vec_dot_q5_0,   avx2::tile_q5_0},
  {TensorType::Q5_1,   A::kQ8A,          ref::dequant_q5_1,   ref::vec_dot_q5_1,   avx2::tile_q5_1},
  {TensorType::Q8_0,   A::kQ8A,          ref::dequant_q8_0,   ref::vec_dot_q8_0,   avx2::tile_q8_0,    &kQ8_0Packed,
   {avx2::packed_q8_0, avxvnni::packed_q8_0, avx512vnni::packed_q8_0}},
  {TensorType::IQ4_NL, A::kQ8A,          ref::dequant_iq4_nl, ref::vec_dot_iq4_nl, avx2::tile_iq4_nl,  &kQ4_0Packed,
   {avx2::packed_iq4_nl, avxvnni::packed_iq4_nl, avx512vnni::packed_iq4_nl}},
  {TensorType::Q2_K,   A::kQ8K,          ref::dequant_q2_k,   ref::vec_dot_q2_k,   avx2::tile_q2_k},
  {TensorType::Q3_K,   A::kQ8K,          ref::dequant_q3_k,   ref::vec_dot_q3_k,   avx2::tile_q3_k},
  {TensorType::Q4_K,   A::kQ8K,          ref::dequant_q4_k,   ref::vec_dot_q4_k,   avx2::tile_q4_k,    &kQ4_KPacked,
   {avx2::packed_q4_k, avxvnni::packed_q4_k, avx512vnni::packed_q4_k}},
  {TensorType::Q5_K,   A::kQ8K,          ref::dequant_q5_k,   ref::vec_dot_q5_k,   avx2::tile_q5_k},
  {TensorType::Q6_K,   A::kQ8K,          ref::dequant_q6_k,   ref::vec_dot_q6_k,   avx2::tile_q6_k,    &kQ6_KPacked,
   {avx2::packed_q6_k, avxvnni::packed_q6_k, avx512vnni::packed_q6_k}},
  {TensorType::IQ4_XS, A::kQ8K,          ref::dequant_iq4_xs, ref::vec_dot_iq4_xs, avx2::tile_iq4_xs, &kIQ4_XSPacked,
   {avx2::packed_iq4_xs, avxvnni::packed_iq4_xs, avx512vnni::packed_iq4_xs}},
  // The activation formats follow ggml's vec_dot_type (ggml-cpu.c): q8_0 for MXFP4, q8_K for the rest.
  {TensorType::MXFP4,   A::kQ8A,         ref::dequant_mxfp4,   ref::vec_dot_mxfp4,   avx2::tile_mxfp4},
  {TensorType::IQ2_XXS, A::kQ8K,         ref::dequant_iq2_xxs, ref::vec_dot_iq2_xxs, avx2::tile_iq2_xxs},
  {TensorType::IQ2_XS,  A::kQ8K,         ref::dequant_iq2_xs,  ref::vec_dot_iq2_xs,  avx2::tile_iq2_xs},
  {TensorType::IQ2_S,   A::kQ8K,         ref::dequant_iq2_s,   ref::vec_dot_iq2_s,   avx2::tile_iq2_s},
  {TensorType::IQ3_XXS, A::kQ8K,         ref::dequant_iq3_xxs, ref::vec_dot_iq3_xxs, avx2::tile_iq3_xxs},
  {TensorType::IQ3_S,   A::kQ8K,         ref::dequant_iq3_s,   ref::vec_dot_iq3_s,   avx2::tile_iq3_s},
  {TensorType::IQ1_S,   A::kQ8K,         ref::dequant_iq1_s,   ref::vec_dot_iq1_s,   avx2::tile_iq1_s},
  {TensorType::IQ1_M,   A::kQ8K,         ref::dequant_iq1_m,   ref::vec_dot_iq1_m,   avx2::tile_iq1_m},
  {TensorType::TQ1_0,   A::kQ8K,         ref::dequant_tq1_0,   ref::vec_dot_tq1_0,   avx2::tile_tq1_0},
  {TensorType::TQ2_0,   A::kQ8K,         ref::dequant_tq2_0,   ref::vec_dot_tq2_0,   avx2::tile_tq2_0},
};
// clang-format on

}  // namespace

const KernelTraits* kernel_traits(gguf::TensorType type) {
  static const auto by_id = [] {  // looked up per packed group and per matmul: an index by id
    std::array<const KernelTraits*, 64> index{};
    for (const KernelTraits& t : kTable) index.at(static_cast<uint32_t>(t.type)) = &t;
    return index;
  }();
  const auto id = static_cast<uint32_t>(type);
  return id < by_id.size() ? by_id[id] : nullptr;
}

std::span<const KernelTraits> all_kernel_traits() { return kTable; }

int64_t act_row_bytes(ActFormat fmt, int64_t cols) {
  switch (fmt) {
    case ActFormat::kF32:
    case ActFormat::kF16Rounded:
    case ActFormat::kBF16Rounded: return cols * static_cast<int64_t>(sizeof(float));
    case ActFormat::kQ8A: return cols / kQK * static_cast<int64_t>(sizeof(ActQ8A));
    case ActFormat::kQ8K: return cols / kQKK * static_cast<int64_t>(sizeof(ActQ8K));
  }
  return 0;
}

void quantize_act_ref(ActFormat fmt, const float* x, void* dst, int64_t cols) {
  auto* f = static_cast<float*>(dst);
  switch (fmt) {
    case ActFormat::kF32:
      std::memcpy(dst, x, static_cast<size_t>(cols) * sizeof(float));
      return;
    case ActFormat::kF16Rounded: ref::round_f16(x, f, cols); return;
    case ActFormat::kBF16Rounded: ref::round_bf16(x, f, cols); return;
    case ActFormat::kQ8A: ref::quantize_q8a(x, static_cast<ActQ8A*>(dst), cols); return;
    case ActFormat::kQ8K: ref::quantize_q8k(x, static_cast<ActQ8K*>(dst), cols); return;
  }
}

}  // namespace engine::kernels
