// Reference quantizers: dequantize(quantize(x)) against x for every type, on random and awkward
// data, and against llama.cpp's own quantization of the shared synth models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "tests/support/shared.h"
#include "tools/quantize/quantize.h"

namespace engine {
namespace {

using gguf::TensorType;

struct QuantCase {
  TensorType type;
  double max_rel_error;  // ||deq - x|| / ||x|| on N(0, 1) data
};

// llama.cpp's errors on the same kind of data (kernels_test.cpp): F16 0.0002, BF16 0.0017,
// Q8_0 0.0054, Q4_0 0.086, Q4_1 0.078, Q5_0 0.043, Q5_1 0.038, IQ4_NL 0.076, IQ4_XS 0.077,
// Q2_K 0.30, Q3_K 0.15, Q4_K 0.071, Q5_K 0.036, Q6_K 0.018.
// Ours on N(0, 1), 65536 values: F16 0.0002, BF16 0.0017, Q8_0 0.0054, Q4_0 0.086, Q4_1 0.078,
// Q5_0 0.043, Q5_1 0.038, IQ4_NL 0.075, IQ4_XS 0.076, Q2_K 0.27, Q3_K 0.14, Q4_K 0.071,
// Q5_K 0.036, Q6_K 0.018. Bounds are ~1.25x that.
const QuantCase kCases[] = {
    {TensorType::F32, 1e-9},    {TensorType::F16, 5e-4},    {TensorType::BF16, 3e-3},
    {TensorType::Q8_0, 0.007},  {TensorType::Q4_0, 0.10},   {TensorType::Q4_1, 0.095},
    {TensorType::Q5_0, 0.052},  {TensorType::Q5_1, 0.046},  {TensorType::IQ4_NL, 0.09},
    {TensorType::IQ4_XS, 0.09}, {TensorType::Q2_K, 0.33},   {TensorType::Q3_K, 0.18},
    {TensorType::Q4_K, 0.085},  {TensorType::Q5_K, 0.045},  {TensorType::Q6_K, 0.022},
};

constexpr int64_t kN = 256 * 16;

double rel_error(const std::vector<float>& x, const std::vector<float>& y) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    norm += double(x[i]) * x[i];
  }
  return norm == 0 ? std::sqrt(err) : std::sqrt(err / norm);
}

// dequantize(quantize(x)).
std::vector<float> round_trip(TensorType type, const std::vector<float>& x) {
  const gguf::TypeInfo& info = gguf::type_info(type);
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(static_cast<size_t>(n) / info.block_size * info.block_bytes);
  EXPECT_EQ(quantize::quantize_row(type, x.data(), q.data(), n), q.size());
  std::vector<float> y(x.size());
  quantize::dequantize_row_ref(type, q.data(), y.data(), n);
  return y;
}

std::vector<float> gaussian(uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> x(kN);
  for (float& v : x) v = dist(rng);
  return x;
}

class QuantizeTest : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantizeTest, GaussianRoundTrip) {
  const QuantCase& c = GetParam();
  for (float sigma : {1.0f, 0.02f}) {
    const std::vector<float> x = gaussian(11, sigma);
    const double rel = rel_error(x, round_trip(c.type, x));
    EXPECT_LT(rel, c.max_rel_error) << "sigma " << sigma;
    if (c.type != TensorType::F32) {
      EXPECT_GT(rel, 1e-7) << "suspiciously exact";
    }
  }
}

TEST_P(QuantizeTest, ZerosStayZero) {
  const std::vector<float> x(kN, 0.0f);
  for (float v : round_trip(GetParam().type, x)) ASSERT_EQ(v, 0.0f);
}

TEST_P(QuantizeTest, Constants) {
  for (float c : {0.5f, -0.013f, 3.0f}) {
    const std::vector<float> x(kN, c);
    // Symmetric types cannot hit a constant exactly on every level; a few percent is their norm.
    EXPECT_LT(rel_error(x, round_trip(GetParam().type, x)), 0.05) << c;
  }
}

TEST_P(QuantizeTest, OutliersAndMixedMagnitudes) {
  const QuantCase& c = GetParam();
  std::vector<float> x = gaussian(5, 1.0f);
  for (size_t i = 7; i < x.size(); i += 397) x[i] = (i % 2 ? 40.0f : -55.0f);  // outliers
  // One block in eight is 1000x smaller: per-block scales must not be swamped by neighbours.
  for (size_t i = 0; i < x.size(); ++i) {
    if ((i / 32) % 8 == 3) x[i] *= 1e-3f;
  }
  // Outliers dominate the norm, so the relative error stays near the type's usual level.
  EXPECT_LT(rel_error(x, round_trip(c.type, x)), 2.0 * c.max_rel_error);
}

TEST_P(QuantizeTest, AllNegativeAndAllPositiveBlocks) {
  const QuantCase& c = GetParam();
  std::vector<float> x = gaussian(9, 1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 512) % 2 ? std::fabs(x[i]) + 1.0f : -std::fabs(x[i]);
  EXPECT_LT(rel_error(x, round_trip(c.type, x)), 1.5 * c.max_rel_error);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeTest, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return std::string(gguf::type_info(p.param.type).name); });

TEST(Quantize, RejectsBadLengthsAndTypes) {
  std::vector<float> x(48, 1.0f);
  std::vector<uint8_t> out(1024);
  EXPECT_THROW(quantize::quantize_row(TensorType::Q8_0, x.data(), out.data(), 48), std::invalid_argument);
  EXPECT_THROW(quantize::quantize_row(TensorType::Q4_K, x.data(), out.data(), 32), std::invalid_argument);
  EXPECT_FALSE(quantize::can_quantize(TensorType::IQ2_XXS));
  EXPECT_THROW(quantize::quantize_row(TensorType::IQ2_XXS, x.data(), out.data(), 256), std::invalid_argument);
  EXPECT_TRUE(quantize::can_quantize(TensorType::Q4_K));
}

// Our quantizers against llama.cpp's: the same F32 weights (shared synth-llama-F32) quantized by
// both; ours may be somewhat worse (no importance search) but not by much.
TEST(Quantize, CloseToLlamaCppOnSharedSynthWeights) {
  const char* kFiles[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M",
                          "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "F16", "BF16"};
  const std::string dir = "models/synth/synth-llama-";
  GGUFD_REQUIRE_SHARED(dir + "F32.gguf");
  const gguf::File ref = gguf::File::open(ggufd::test::shared_path(dir + "F32.gguf"));
  for (const char* name : kFiles) {
    GGUFD_REQUIRE_SHARED(dir + name + ".gguf");
    const gguf::File file = gguf::File::open(ggufd::test::shared_path(dir + name + ".gguf"));
    const gguf::TensorInfo* t = file.find_tensor("blk.0.ffn_down.weight");
    const gguf::TensorInfo* r = ref.find_tensor("blk.0.ffn_down.weight");
    ASSERT_TRUE(t && r);
    const auto n = static_cast<size_t>(r->n_elements);
    std::vector<float> x(n), theirs(n);
    std::memcpy(x.data(), r->data.data(), n * sizeof(float));
    const int64_t cols = static_cast<int64_t>(t->ne[0]);
    for (size_t row = 0; row < n / cols; ++row) {
      quantize::dequantize_row_ref(t->type, t->data.data() + row * t->row_bytes(),
                                  theirs.data() + row * cols, cols);
    }
    const double e_theirs = rel_error(x, theirs);
    const double e_ours = rel_error(x, round_trip(t->type, x));
    EXPECT_LT(e_ours, 1.3 * e_theirs + 1e-6) << name << " ours " << e_ours << " llama.cpp " << e_theirs;
  }
}

}  // namespace
}  // namespace engine
