// Random quantized weights and activations for kernel tests (reference quantizers from
// tools/quantize), and the tolerance of comparing two dot-product results.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/traits.h"
#include "gguf/types.h"
#include "tools/quantize/quantize.h"

namespace ggufd::test {

// The types with a packed 8-row layout (the kernels' type table has one for each).
inline constexpr gguf::TensorType kPackable[] = {gguf::TensorType::Q4_0, gguf::TensorType::IQ4_NL,
                                                 gguf::TensorType::Q8_0, gguf::TensorType::Q4_K};

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
