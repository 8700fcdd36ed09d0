#include "engine/kernels/traits.h"

#include <cstring>

#include "engine/kernels/blocks.h"
#include "engine/kernels/ref.h"

namespace engine::kernels {

namespace {

using gguf::TensorType;

constexpr KernelTraits kTraits[] = {
    {TensorType::F32, 1, 4, ActFormat::F32, ref::dequant_f32, ref::vec_dot_f32},
    {TensorType::F16, 1, 2, ActFormat::F32, ref::dequant_f16, ref::vec_dot_f16},
    {TensorType::BF16, 1, 2, ActFormat::F32, ref::dequant_bf16, ref::vec_dot_bf16},
    {TensorType::Q4_0, kQK, 18, ActFormat::Q8A, ref::dequant_q4_0, ref::vec_dot_q4_0},
    {TensorType::Q4_1, kQK, 20, ActFormat::Q8A, ref::dequant_q4_1, ref::vec_dot_q4_1},
    {TensorType::Q5_0, kQK, 22, ActFormat::Q8A, ref::dequant_q5_0, ref::vec_dot_q5_0},
    {TensorType::Q5_1, kQK, 24, ActFormat::Q8A, ref::dequant_q5_1, ref::vec_dot_q5_1},
    {TensorType::Q8_0, kQK, 34, ActFormat::Q8A, ref::dequant_q8_0, ref::vec_dot_q8_0},
    {TensorType::IQ4_NL, kQK, 18, ActFormat::Q8A, ref::dequant_iq4_nl, ref::vec_dot_iq4_nl},
    {TensorType::Q2_K, kQKK, 84, ActFormat::Q8K, ref::dequant_q2_k, ref::vec_dot_q2_k},
    {TensorType::Q3_K, kQKK, 110, ActFormat::Q8K, ref::dequant_q3_k, ref::vec_dot_q3_k},
    {TensorType::Q4_K, kQKK, 144, ActFormat::Q8K, ref::dequant_q4_k, ref::vec_dot_q4_k},
    {TensorType::Q5_K, kQKK, 176, ActFormat::Q8K, ref::dequant_q5_k, ref::vec_dot_q5_k},
    {TensorType::Q6_K, kQKK, 210, ActFormat::Q8K, ref::dequant_q6_k, ref::vec_dot_q6_k},
    {TensorType::IQ4_XS, kQKK, 136, ActFormat::Q8K, ref::dequant_iq4_xs, ref::vec_dot_iq4_xs},
};

}  // namespace

const KernelTraits* kernel_traits(gguf::TensorType type) {
  for (const KernelTraits& t : kTraits) {
    if (t.type == type) return &t;
  }
  return nullptr;
}

int64_t act_row_bytes(ActFormat fmt, int64_t cols) {
  switch (fmt) {
    case ActFormat::F32: return cols * static_cast<int64_t>(sizeof(float));
    case ActFormat::Q8A: return cols / kQK * static_cast<int64_t>(sizeof(BlockQ8A));
    case ActFormat::Q8K: return cols / kQKK * static_cast<int64_t>(sizeof(BlockQ8K));
  }
  return 0;
}

void quantize_act_ref(ActFormat fmt, const float* x, void* dst, int64_t cols) {
  switch (fmt) {
    case ActFormat::F32:
      std::memcpy(dst, x, static_cast<size_t>(cols) * sizeof(float));
      return;
    case ActFormat::Q8A: ref::quantize_q8a(x, static_cast<BlockQ8A*>(dst), cols); return;
    case ActFormat::Q8K: ref::quantize_q8k(x, static_cast<BlockQ8K*>(dst), cols); return;
  }
}

}  // namespace engine::kernels
