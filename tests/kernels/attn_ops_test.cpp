// The SIMD attention vector ops against the scalar reference, on awkward lengths.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/kernels/attn_ops.h"
#include "engine/kernels/dispatch.h"
#include "engine/kernels/fp16.h"

namespace engine::kernels {
namespace {

struct Rows {
  std::vector<float> q, k32, y;
  std::vector<uint16_t> k16;
};

// Random rows of length n; y holds f16-representable values like a real f16 accumulator.
Rows random_rows(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> val(0.0f, 2.0f);
  Rows r;
  for (int64_t i = 0; i < n; ++i) {
    r.q.push_back(val(rng));
    r.k16.push_back(fp32_to_fp16(val(rng)));
    r.k32.push_back(fp16_to_fp32(r.k16.back()));
    r.y.push_back(fp16_to_fp32(fp32_to_fp16(val(rng))));
  }
  return r;
}

class AttnOpsTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    const Dispatch* d = avx2_dispatch();
    if (d == nullptr) GTEST_SKIP() << "no AVX2 on this CPU: only the reference runs";
    simd_ = d->attn;
  }
  const AttnOps& ref_ = ref::attn_ops();
  const AttnOps* simd_ = nullptr;
};

TEST_P(AttnOpsTest, DotsAgreeWithReference) {
  const int64_t n = GetParam();
  const Rows r = random_rows(n, 1);
  float bound = 0.0f;  // |q| . |k| scaled by the f32 rounding of n terms
  for (int64_t i = 0; i < n; ++i) bound += std::fabs(r.q[size_t(i)] * r.k32[size_t(i)]);
  bound = bound * 1e-6f * float(n + 1) + 1e-6f;
  EXPECT_NEAR(simd_->dot_f32(r.q.data(), r.k32.data(), n), ref_.dot_f32(r.q.data(), r.k32.data(), n), bound);
  EXPECT_NEAR(simd_->dot_f16(r.q.data(), r.k16.data(), n), ref_.dot_f16(r.q.data(), r.k16.data(), n), bound);
  // Same values through the f16 and f32 paths give the same reference dot.
  EXPECT_EQ(ref_.dot_f16(r.q.data(), r.k16.data(), n), ref_.dot_f32(r.q.data(), r.k32.data(), n));
}

TEST_P(AttnOpsTest, F16UpdatesAreF16ValuesWithinOneUlp) {
  const int64_t n = GetParam();
  const Rows r = random_rows(n, 2);
  std::vector<float> a = r.y, b = r.y;
  ref_.mad_f16(a.data(), 0.37f, r.k16.data(), n);
  simd_->mad_f16(b.data(), 0.37f, r.k16.data(), n);
  ref_.scale_f16(a.data(), 0.81f, n);
  simd_->scale_f16(b.data(), 0.81f, n);
  for (int64_t i = 0; i < n; ++i) {
    const float x = b[size_t(i)];
    EXPECT_EQ(fp16_to_fp32(fp32_to_fp16(x)), x) << "not an f16 value at " << i;
    // A fused multiply-add may round once where the reference rounds twice: one f16 ulp apart.
    const float ulp = std::ldexp(1.0f, std::ilogb(std::fabs(a[size_t(i)]) + 1e-30f) - 10);
    EXPECT_NEAR(x, a[size_t(i)], ulp) << "i=" << i;
  }
  std::vector<float> c = r.q, d = r.q;
  ref_.round_f16(c.data(), n);
  simd_->round_f16(d.data(), n);
  EXPECT_EQ(c, d);
}

TEST_P(AttnOpsTest, F32MadAgrees) {
  const int64_t n = GetParam();
  const Rows r = random_rows(n, 3);
  std::vector<float> a = r.y, b = r.y;
  ref_.mad_f32(a.data(), -1.25f, r.k32.data(), n);
  simd_->mad_f32(b.data(), -1.25f, r.k32.data(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(a[size_t(i)], b[size_t(i)], 1e-5f * (1 + std::fabs(a[size_t(i)])));
}

INSTANTIATE_TEST_SUITE_P(Lengths, AttnOpsTest, ::testing::Values(1, 7, 8, 15, 16, 17, 64, 80, 128, 129));

}  // namespace
}  // namespace engine::kernels
