// Random quantized weights and activations for kernel tests (reference quantizers from
// tools/quantize, or random block bytes with sane scales), and the tolerance of comparing two
// dot-product results.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/traits.h"
#include "gguf/blocks.h"
#include "gguf/types.h"
#include "tools/quantize/quantize.h"

namespace ggufd::test {

// The types with a packed 8-row layout (the kernels' type table has one for each).
inline constexpr gguf::TensorType kPackable[] = {gguf::TensorType::Q4_0, gguf::TensorType::IQ4_NL,
                                                 gguf::TensorType::Q8_0, gguf::TensorType::Q4_K,
                                                 gguf::TensorType::Q6_K, gguf::TensorType::IQ4_XS};

// W (rows, cols) of `type`, quantized from N(0, 1) values.
inline std::vector<uint8_t> random_matrix(gguf::TensorType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> val(0.0f, 1.0f);
  const engine::kernels::KernelTraits* t = engine::kernels::kernel_traits(type);
  const size_t row_bytes = static_cast<size_t>(cols / t->block_size() * t->block_bytes());
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(rows));
  std::vector<float> x(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : x) v = val(rng);
    engine::quantize::quantize_row(type, x.data(), w.data() + r * row_bytes, cols);
  }
  return w;
}

inline void put_fp16(uint8_t* dst, float v) {
  const uint16_t h = engine::kernels::fp32_to_fp16(v);
  std::memcpy(dst, &h, 2);
}

// Byte offsets of the fp16 scale fields (d, and dmin / m) in one block of `type`.
inline std::vector<size_t> fp16_scale_fields(gguf::TensorType type) {
  using T = gguf::TensorType;
  switch (type) {
    case T::Q4_1: return {offsetof(gguf::BlockQ4_1, d), offsetof(gguf::BlockQ4_1, m)};
    case T::Q5_1: return {offsetof(gguf::BlockQ5_1, d), offsetof(gguf::BlockQ5_1, m)};
    case T::Q4_K: return {offsetof(gguf::BlockQ4_K, d), offsetof(gguf::BlockQ4_K, dmin)};
    case T::Q5_K: return {offsetof(gguf::BlockQ5_K, d), offsetof(gguf::BlockQ5_K, dmin)};
    case T::Q2_K: return {offsetof(gguf::BlockQ2_K, d), offsetof(gguf::BlockQ2_K, dmin)};
    case T::Q3_K: return {offsetof(gguf::BlockQ3_K, d)};
    case T::Q6_K: return {offsetof(gguf::BlockQ6_K, d)};
    case T::TQ1_0: return {offsetof(gguf::BlockTQ1_0, d)};
    case T::TQ2_0: return {offsetof(gguf::BlockTQ2_0, d)};
    default: return {0};  // d leads the other blocks
  }
}

// Sets the scale fields of one block of quantized `type` at p to `scale` (> 0, finite in fp16):
// its fp16 fields, IQ1_M's fp16 d spread over the top nibbles of its 4 scales words, MXFP4's
// E8M0 exponent (the power of two nearest `scale`).
inline void set_block_scales(gguf::TensorType type, uint8_t* p, float scale) {
  if (type == gguf::TensorType::MXFP4) {
    p[0] = static_cast<uint8_t>(128 + std::lround(std::log2(scale)));
  } else if (type == gguf::TensorType::IQ1_M) {
    const uint16_t h = engine::kernels::fp32_to_fp16(scale);
    uint8_t* words = p + offsetof(gguf::BlockIQ1_M, scales);
    for (int w = 0; w < 4; ++w) {
      uint16_t v;
      std::memcpy(&v, words + 2 * w, 2);
      v = static_cast<uint16_t>((v & 0x0fff) | (((h >> (4 * w)) & 0xf) << 12));
      std::memcpy(words + 2 * w, &v, 2);
    }
  } else {
    for (size_t off : fp16_scale_fields(type)) put_fp16(p + off, scale);
  }
}

// W (rows, cols) of `type`: random bytes with every scale field in [scale_lo, scale_hi) (float
// types: N(0, 1) values). Unlike random_matrix() this reaches every index and sign pattern, and
// works for types we have no quantizer for.
inline std::vector<uint8_t> random_blocks(gguf::TensorType type, int64_t rows, int64_t cols, std::mt19937& rng,
                                          float scale_lo = 0.001f, float scale_hi = 0.02f) {
  using T = gguf::TensorType;
  const gguf::TypeInfo& info = gguf::type_info(type);
  const int64_t n_blocks = rows * cols / info.block_size;
  std::vector<uint8_t> w(static_cast<size_t>(n_blocks) * info.block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> val(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(scale_lo, scale_hi);
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* p = w.data() + b * info.block_bytes;
    if (type == T::F32) {
      const float f = val(rng);
      std::memcpy(p, &f, 4);
    } else if (type == T::F16) {
      put_fp16(p, val(rng));
    } else if (type == T::BF16) {
      const uint16_t h = engine::kernels::fp32_to_bf16(val(rng));
      std::memcpy(p, &h, 2);
    } else {
      for (uint32_t i = 0; i < info.block_bytes; ++i) p[i] = static_cast<uint8_t>(byte(rng));
      set_block_scales(type, p, scale(rng));
    }
  }
  return w;
}

inline std::vector<float> random_activations(int64_t n, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> val(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (float& v : x) v = val(rng);
  return x;
}

// |a - b| within f32 summation-order noise of a dot product over `cols` terms of size ~1.
inline void expect_close(const std::vector<float>& a, const std::vector<float>& b, int64_t cols, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 2e-5 * static_cast<double>(cols) + 1e-4 * std::fabs(b[i])) << what << " i=" << i;
  }
}

}  // namespace ggufd::test
