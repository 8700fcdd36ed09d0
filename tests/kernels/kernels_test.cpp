// Kernel tests: fp16 conversions, block layouts (hand-built and against the synth models), the
// integer dot products against dequantize + f32, and matmul over awkward shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/kernels/blocks.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/dispatch.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/packed_tiles.h"
#include "engine/kernels/ref.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/traits.h"
#include "gguf/file.h"
#include "tests/support/quantized.h"
#include "tests/support/shared.h"

#if GGUFD_HAVE_SIMDE
GGUFD_DECLARE_ZMM_TILES(zmm_emulated)  // tests/kernels/zmm_emulated_tiles.cpp
#endif

namespace engine {
namespace {

// F16/BF16 matmuls round activations to the weight format (as ggml does); tests that compare with
// an exact f32 product feed activations already representable in it, so that rounding is exact.
void round_like_weights(gguf::TensorType type, std::vector<float>& x) {
  for (float& v : x) {
    if (type == gguf::TensorType::F16) v = kernels::fp16_to_fp32(kernels::fp32_to_fp16(v));
    if (type == gguf::TensorType::BF16) v = kernels::bf16_to_fp32(kernels::fp32_to_bf16(v));
  }
}


using gguf::TensorType;
using kernels::fp16_to_fp32;
using kernels::fp32_to_fp16;

// ---------------------------------------------------------------------------------------------
// fp16 / bf16

TEST(Fp16, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f)))) << h;
      continue;
    }
    EXPECT_EQ(fp32_to_fp16(f), h) << h;
  }
}

TEST(Fp16, KnownValuesAndRounding) {
  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(fp32_to_fp16(1e6f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -26)), 0x0001);
}

TEST(Bf16, Conversions) {
  EXPECT_EQ(kernels::bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(kernels::fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(kernels::fp32_to_bf16(kernels::bits_to_f32(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(kernels::fp32_to_bf16(kernels::bits_to_f32(0x3f818000u)), 0x3f82);
}

// ---------------------------------------------------------------------------------------------
// Hand-built blocks

using ggufd::test::put_fp16;

TEST(Dequant, Q4_0HandBuilt) {
  kernels::BlockQ4_0 b{};
  put_fp16(b.d, 0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float y[32];
  kernels::ref::dequant_q4_0(&b, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(7 - j));
  }
}

TEST(Dequant, Q5_0HighBits) {
  kernels::BlockQ5_0 b{};
  put_fp16(b.d, 1.0f);
  const uint32_t qh = 0x80000001u;  // element 0 and element 31 get the fifth bit
  std::memcpy(b.qh, &qh, 4);
  float y[32];
  kernels::ref::dequant_q5_0(&b, y, 32);
  EXPECT_EQ(y[0], 0.0f);     // 16 - 16
  EXPECT_EQ(y[1], -16.0f);
  EXPECT_EQ(y[31], 0.0f);
  EXPECT_EQ(y[16], -16.0f);
}

TEST(Dequant, Q8_0AndIq4nlHandBuilt) {
  kernels::BlockQ8_0 b{};
  put_fp16(b.d, 0.25f);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  float y[32];
  kernels::ref::dequant_q8_0(&b, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.25f * static_cast<float>(j * 8 - 128));

  kernels::BlockIQ4_NL nl{};
  put_fp16(nl.d, 2.0f);
  for (int j = 0; j < 16; ++j) nl.qs[j] = static_cast<uint8_t>(j | (j << 4));
  kernels::ref::dequant_iq4_nl(&nl, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * kernels::kIq4nlValues[j]);
    EXPECT_EQ(y[j + 16], 2.0f * kernels::kIq4nlValues[j]);
  }
}

TEST(Dequant, Q6_KHandBuilt) {
  // Element e gets q6 = e % 64, scale of sub-block g = g - 8, d = 1: x = (g - 8) * (q6 - 32).
  kernels::BlockQ6_K b{};
  put_fp16(b.d, 1.0f);
  for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<int8_t>(g - 8);
  for (int e = 0; e < 256; ++e) {
    const int q = e % 64, h = e / 128, s = (e % 128) / 32, l = e % 32;
    uint8_t& lbyte = b.ql[64 * h + l + 32 * (s & 1)];
    lbyte = static_cast<uint8_t>(lbyte | ((q & 0xf) << (4 * (s >> 1))));
    b.qh[32 * h + l] = static_cast<uint8_t>(b.qh[32 * h + l] | ((q >> 4) << (2 * s)));
  }
  std::vector<float> y(256);
  kernels::ref::dequant_q6_k(&b, y.data(), 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], static_cast<float>((e / 16 - 8) * (e % 64 - 32))) << e;
}

// ---------------------------------------------------------------------------------------------
// Synth models: the same random weights stored in every type

struct SynthCase {
  const char* file;      // synth-llama-<file>.gguf
  TensorType type;       // the type whose tensors are checked (mixed files hold others too)
  double max_rel_error;  // ||deq - f32|| / ||f32|| over each tensor
};

// Measured on ffn_down: F16 0.0002, BF16 0.0017, Q8_0 0.0054, Q4_0 0.086, Q4_1 0.078, Q5_0 0.043,
// Q5_1 0.038, IQ4_NL 0.076, IQ4_XS 0.077, Q2_K 0.30, Q3_K 0.15, Q4_K 0.071, Q5_K 0.036, Q6_K 0.018.
const SynthCase kSynthCases[] = {
    {"F16", TensorType::F16, 1e-3},       {"BF16", TensorType::BF16, 5e-3},
    {"Q8_0", TensorType::Q8_0, 0.01},     {"Q4_0", TensorType::Q4_0, 0.12},
    {"Q4_1", TensorType::Q4_1, 0.12},     {"Q5_0", TensorType::Q5_0, 0.06},
    {"Q5_1", TensorType::Q5_1, 0.06},     {"IQ4_NL", TensorType::IQ4_NL, 0.12},
    {"IQ4_XS", TensorType::IQ4_XS, 0.12}, {"Q2_K", TensorType::Q2_K, 0.4},
    {"Q3_K_M", TensorType::Q3_K, 0.22},   {"Q4_K_M", TensorType::Q4_K, 0.11},
    {"Q5_K_M", TensorType::Q5_K, 0.06},   {"Q6_K", TensorType::Q6_K, 0.03},
};

std::string synth(const std::string& name) { return "models/synth/synth-llama-" + name + ".gguf"; }

Matrix matrix_of(const gguf::TensorInfo& t) {
  return Matrix{t.type, static_cast<int64_t>(t.n_rows()), static_cast<int64_t>(t.ne[0]),
                static_cast<size_t>(t.row_bytes()), t.data.data()};
}

class SynthTest : public ::testing::TestWithParam<SynthCase> {};

TEST_P(SynthTest, DequantizedRowsMatchF32) {
  const SynthCase& c = GetParam();
  GGUFD_REQUIRE_SHARED(synth("F32"));
  GGUFD_REQUIRE_SHARED(synth(c.file));
  const gguf::File ref = gguf::File::open(ggufd::test::shared_path(synth("F32")));
  const gguf::File file = gguf::File::open(ggufd::test::shared_path(synth(c.file)));
  int checked = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.type != c.type) continue;
    const gguf::TensorInfo* r = ref.find_tensor(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    ASSERT_EQ(r->type, TensorType::F32);
    ASSERT_EQ(r->n_elements, t.n_elements);
    const Matrix m = matrix_of(t);
    const auto* expect = reinterpret_cast<const float*>(r->data.data());
    std::vector<float> row(static_cast<size_t>(m.cols));
    double err = 0, norm = 0;
    for (int64_t i = 0; i < m.rows; ++i) {
      dequantize_row(m, i, row.data());
      for (int64_t j = 0; j < m.cols; ++j) {
        float e;
        std::memcpy(&e, expect + i * m.cols + j, sizeof e);
        err += (row[j] - e) * double(row[j] - e);
        norm += double(e) * e;
      }
    }
    const double rel = std::sqrt(err / norm);
    EXPECT_LT(rel, c.max_rel_error) << t.name;
    EXPECT_GT(rel, c.type == TensorType::F16 ? -1.0 : 1e-6) << t.name << " suspiciously exact";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// matmul (integer path) against dequantize + f32 dot, on real tensors, n = 1..9.
TEST_P(SynthTest, MatmulMatchesDequantizedReference) {
  const SynthCase& c = GetParam();
  GGUFD_REQUIRE_SHARED(synth(c.file));
  const gguf::File file = gguf::File::open(ggufd::test::shared_path(synth(c.file)));
  const gguf::TensorInfo* t = nullptr;
  for (const char* name : {"blk.0.ffn_down.weight", "blk.0.attn_q.weight", "output.weight"}) {
    const gguf::TensorInfo* cand = file.find_tensor(name);
    if (cand && cand->type == c.type) { t = cand; break; }
  }
  ASSERT_NE(t, nullptr);
  const Matrix m = matrix_of(*t);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  ThreadPool pool(2);
  for (int64_t n = 1; n <= 9; ++n) {
    std::vector<float> x(static_cast<size_t>(n * m.cols));
    for (float& v : x) v = dist(rng);
    round_like_weights(c.type, x);
    std::vector<float> out(static_cast<size_t>(n * m.rows));
    matmul(m, x.data(), n, out.data(), pool);
    std::vector<float> wrow(static_cast<size_t>(m.cols));
    double err = 0, norm = 0;
    for (int64_t r = 0; r < m.rows; ++r) {
      dequantize_row(m, r, wrow.data());
      for (int64_t j = 0; j < n; ++j) {
        double e = 0;
        for (int64_t k = 0; k < m.cols; ++k) e += double(wrow[k]) * x[j * m.cols + k];
        const double d = out[j * m.rows + r] - e;
        err += d * d;
        norm += e * e;
      }
    }
    // Activation quantization to int8 costs ~0.5% relative error per dot; f32 paths ~1e-6.
    const bool float_path = c.type == TensorType::F16 || c.type == TensorType::BF16;
    EXPECT_LT(std::sqrt(err / norm), float_path ? 1e-5 : 0.01) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, SynthTest, ::testing::ValuesIn(kSynthCases),
                         [](const auto& p) { return std::string(p.param.file); });

// ---------------------------------------------------------------------------------------------
// SIMD kernels against the scalar reference, on random blocks and awkward shapes

const TensorType kAllTypes[] = {
    TensorType::F32,     TensorType::F16,    TensorType::BF16,    TensorType::Q4_0,  TensorType::Q4_1,
    TensorType::Q5_0,    TensorType::Q5_1,   TensorType::Q8_0,    TensorType::IQ4_NL, TensorType::Q2_K,
    TensorType::Q3_K,    TensorType::Q4_K,   TensorType::Q5_K,    TensorType::Q6_K,  TensorType::IQ4_XS,
    TensorType::MXFP4,   TensorType::IQ2_XXS, TensorType::IQ2_XS, TensorType::IQ2_S, TensorType::IQ3_XXS,
    TensorType::IQ3_S,   TensorType::IQ1_S,  TensorType::IQ1_M,   TensorType::TQ1_0, TensorType::TQ2_0,
};

TEST(KernelTable, EveryRowIsTested) {
  EXPECT_EQ(std::size(kAllTypes), kernels::all_kernel_traits().size());
}

struct Product {
  std::vector<float> out;    // (n, rows)
  std::vector<float> exact;  // dequantized W @ f32 X, in double
  std::vector<float> bound;  // per output: activation-quantization error bound
};

// out (n, rows) = X (n, cols) @ W^T through one dispatch table's quantizer + tile.
// `tile`: the table's own for `type` when null.
std::vector<float> run_tile(const kernels::Dispatch& d, TensorType type, const std::vector<uint8_t>& w,
                            int64_t rows, int64_t cols, const std::vector<float>& x, int64_t n,
                            kernels::TileFn tile = nullptr) {
  const kernels::KernelTraits* t = kernels::kernel_traits(type);
  const int64_t xr = kernels::act_row_bytes(t->act, cols);
  std::vector<uint8_t> xq(static_cast<size_t>(xr * n));
  for (int64_t j = 0; j < n; ++j) {
    const float* src = x.data() + j * cols;
    uint8_t* dst = xq.data() + j * xr;
    switch (t->act) {
      case kernels::ActFormat::kF32:
      case kernels::ActFormat::kF16Rounded:  // a tile takes the f32 it is given
      case kernels::ActFormat::kBF16Rounded: std::memcpy(dst, src, static_cast<size_t>(cols) * 4); break;
      case kernels::ActFormat::kQ8A: d.quantize_q8a(src, reinterpret_cast<kernels::ActQ8A*>(dst), cols); break;
      case kernels::ActFormat::kQ8K: d.quantize_q8k(src, reinterpret_cast<kernels::ActQ8K*>(dst), cols); break;
    }
  }
  std::vector<float> out(static_cast<size_t>(n * rows), -1.0f);
  const size_t row_bytes = static_cast<size_t>(cols / t->block_size() * t->block_bytes());
  (tile ? tile : d.tile_for(type))({w.data(), row_bytes, rows, cols, xq.data(), static_cast<size_t>(xr), n, out.data(), rows, t});
  return out;
}

// Exact product of the dequantized weights, and for each output the bound
// sum_k |w_k| * (block amax of x / 254): rounding x to int8 moves each x_k by at most d_x / 2.
void exact_product(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t cols,
                   const std::vector<float>& x, int64_t n, Product& p) {
  const kernels::KernelTraits* t = kernels::kernel_traits(type);
  const int act_block = t->act == kernels::ActFormat::kQ8K ? kernels::kQKK : t->act == kernels::ActFormat::kQ8A ? kernels::kQK : 0;
  const size_t row_bytes = static_cast<size_t>(cols / t->block_size() * t->block_bytes());
  std::vector<float> wf(static_cast<size_t>(cols));
  p.exact.assign(static_cast<size_t>(n * rows), 0.0f);
  p.bound.assign(static_cast<size_t>(n * rows), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    t->dequant(w.data() + r * row_bytes, wf.data(), cols);
    for (int64_t j = 0; j < n; ++j) {
      const float* xj = x.data() + j * cols;
      double e = 0, bound = 0, mag = 0;
      for (int64_t k0 = 0; k0 < cols; k0 += act_block ? act_block : cols) {
        const int64_t k1 = act_block ? k0 + act_block : cols;
        double amax = 0, wsum = 0;
        for (int64_t k = k0; k < k1; ++k) {
          e += double(wf[k]) * xj[k];
          mag += std::fabs(double(wf[k]) * xj[k]);
          amax = std::max(amax, double(std::fabs(xj[k])));
          wsum += std::fabs(wf[k]);
        }
        if (act_block) bound += wsum * amax / 254.0;
      }
      p.exact[j * rows + r] = static_cast<float>(e);
      p.bound[j * rows + r] = static_cast<float>(bound * 1.001 + mag * 1e-5 + 1e-6);
    }
  }
}

class KernelTest : public ::testing::TestWithParam<TensorType> {};

// The file-layout tiles this machine can check: every SIMD table's own (AVX2, and AVX-512 where
// the CPU has it), and the AVX-512 float tiles built over SIMDe's emulation (zmm_emulated_tiles.cpp).
struct TileUnderTest {
  std::string name;
  const kernels::Dispatch* d;  // activations quantized with this table
  kernels::TileFn tile;
};
std::vector<TileUnderTest> file_layout_tiles(TensorType type) {
  std::vector<TileUnderTest> tiles;
  const kernels::Dispatch* avx2 = kernels::avx2_dispatch();
  if (avx2 == nullptr) return tiles;
  tiles.push_back({"avx2", avx2, avx2->tile_for(type)});
  if (const kernels::Dispatch* zmm = kernels::avx512_dispatch(); zmm && zmm->tile_for(type) != avx2->tile_for(type)) {
    tiles.push_back({"avx512", zmm, zmm->tile_for(type)});
  }
#if GGUFD_HAVE_SIMDE
  namespace em = kernels::zmm_emulated;
  const kernels::TileFn emulated = type == TensorType::F32 ? em::tile_f32 : type == TensorType::F16 ? em::tile_f16
                                 : type == TensorType::BF16 ? em::tile_bf16 : nullptr;
  if (emulated) tiles.push_back({"avx512-emulated", avx2, emulated});
#endif
  return tiles;
}

TEST_P(KernelTest, TilesMatchReferenceOnAwkwardShapes) {
  const TensorType type = GetParam();
  const kernels::KernelTraits* t = kernels::kernel_traits(type);
  const std::vector<TileUnderTest> tiles = file_layout_tiles(type);
  std::mt19937 rng(static_cast<unsigned>(type) + 11);
  std::normal_distribution<float> val(0.0f, 1.0f);
  const int64_t unit = t->block_size() == 1 ? 8 : t->block_size();
  for (int64_t cols : {unit, 3 * unit, 8 * unit + (t->block_size() == 1 ? 3 : 0)}) {
    for (int64_t rows : {1, 3, 7, 13}) {
      const std::vector<uint8_t> w = ggufd::test::random_blocks(type, rows, cols, rng);
      for (int64_t n = 1; n <= 13; ++n) {
        std::vector<float> x(static_cast<size_t>(n * cols));
        for (float& v : x) v = val(rng);
        if (n == 5) std::fill(x.begin(), x.begin() + cols, 0.0f);  // an all-zero row
        Product p;
        exact_product(type, w, rows, cols, x, n, p);
        const std::vector<float> ref = run_tile(kernels::scalar_dispatch(), type, w, rows, cols, x, n);
        for (size_t i = 0; i < ref.size(); ++i) {
          ASSERT_NEAR(ref[i], p.exact[i], p.bound[i]) << "scalar cols=" << cols << " rows=" << rows << " n=" << n;
        }
        for (const TileUnderTest& tile : tiles) {
          const std::vector<float> fast = run_tile(*tile.d, type, w, rows, cols, x, n, tile.tile);
          for (size_t i = 0; i < ref.size(); ++i) {
            // Same quantized activations and exact integer sums: only f32 summation order differs.
            ASSERT_NEAR(fast[i], ref[i], 2e-5 * (std::fabs(p.exact[i]) + p.bound[i] * 254) + 1e-5)
                << tile.name << " cols=" << cols << " rows=" << rows << " n=" << n << " i=" << i;
          }
        }
      }
    }
  }
}

TEST_P(KernelTest, MatmulSplitsWorkCorrectly) {
  const TensorType type = GetParam();
  const kernels::KernelTraits* t = kernels::kernel_traits(type);
  std::mt19937 rng(99);
  std::normal_distribution<float> val(0.0f, 1.0f);
  const int64_t rows = 157, cols = 2 * (t->block_size() == 1 ? 64 : t->block_size());
  const std::vector<uint8_t> w = ggufd::test::random_blocks(type, rows, cols, rng);
  const Matrix m{type, rows, cols, static_cast<size_t>(cols / t->block_size() * t->block_bytes()), w.data()};
  ThreadPool pool(2);
  for (int64_t n : {1, 2, 5, 17}) {
    std::vector<float> x(static_cast<size_t>(n * cols));
    for (float& v : x) v = val(rng);
    round_like_weights(type, x);
    std::vector<float> out(static_cast<size_t>(n * rows));
    matmul(m, x.data(), n, out.data(), pool);
    Product p;
    exact_product(type, w, rows, cols, x, n, p);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], p.exact[i], p.bound[i] * 1.01f) << "n=" << n << " i=" << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KernelTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& p) { return std::string(gguf::type_info(p.param).name); });

TEST(Quantize, Avx2ActivationsAreBitIdentical) {
  const kernels::Dispatch* simd = kernels::avx2_dispatch();
  if (!simd) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(5);
  std::normal_distribution<float> val(0.0f, 3.0f);
  std::vector<float> x(1024);
  for (float& v : x) v = val(rng);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);
  x[7] = 1e-30f;
  std::vector<kernels::ActQ8A> a(32), b(32);
  kernels::ref::quantize_q8a(x.data(), a.data(), 1024);
  simd->quantize_q8a(x.data(), b.data(), 1024);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof a[0]), 0);
  std::vector<kernels::ActQ8K> c(4), d(4);
  kernels::ref::quantize_q8k(x.data(), c.data(), 1024);
  simd->quantize_q8k(x.data(), d.data(), 1024);
  EXPECT_EQ(std::memcmp(c.data(), d.data(), c.size() * sizeof c[0]), 0);
  // rounding to binary16 / bfloat16: ties, subnormals, overflow, infinities and NaN too
  const float special[] = {65504.0f, 65520.0f, 1e6f, -1e6f, 5.96e-8f, 2.98e-8f, 1e-40f, -0.0f,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 1.00048828125f, 1.00146484375f, 3.0e38f};
  std::copy(std::begin(special), std::end(special), x.begin() + 600);
  for (int i = 0; i < 64; ++i) x[700 + i] = 1.0f + static_cast<float>(i) * 0x1p-11f;  // halfway cases
  for (kernels::RoundFn ref_fn : {kernels::ref::round_f16, kernels::ref::round_bf16}) {
    const kernels::RoundFn fast_fn = ref_fn == kernels::ref::round_f16 ? simd->round_f16 : simd->round_bf16;
    for (int64_t cols : {1023, 1024}) {
      std::vector<float> e(1024, 7.0f), f(1024, 7.0f);
      ref_fn(x.data(), e.data(), cols);
      fast_fn(x.data(), f.data(), cols);
      EXPECT_EQ(std::memcmp(e.data(), f.data(), e.size() * sizeof e[0]), 0) << "cols=" << cols;
    }
  }
}

// Every table's silu_mul against the reference's expf: within 4 ulp on normal gate values (and
// up = 1, so the product adds no rounding of its own), and the same limits at the extremes.
TEST(SiluMul, EveryTableMatchesTheReference) {
  std::vector<float> g;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  for (int i = 0; i < 1000; ++i) g.push_back(nd(rng));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 20.0f, -20.0f, 80.0f, -80.0f, 87.5f, -87.5f, 88.5f, -88.5f, 88.8f, -88.8f,
                  100.0f, -100.0f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity()}) {
    g.push_back(v);
  }
  g.push_back(std::numeric_limits<float>::quiet_NaN());
  for (const kernels::Dispatch* d : kernels::available_dispatches()) {
    for (size_t n : {g.size(), size_t{7}, size_t{9}, size_t{0}}) {  // tails shorter than a vector
      const std::vector<float> up(n, 1.0f);
      std::vector<float> want(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(n)), got = want;
      kernels::ref::silu_mul(want.data(), up.data(), static_cast<int64_t>(n));
      d->silu_mul(got.data(), up.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << d->name << " g=" << g[i];
        } else if (std::isinf(want[i])) {
          EXPECT_EQ(got[i], want[i]) << d->name << " g=" << g[i];
        } else if (std::fabs(want[i]) < 1e-30f) {  // silu of a very negative g: -0 or a tiny value
          EXPECT_LT(std::fabs(got[i]), 1e-30f) << d->name << " g=" << g[i];
        } else {
          EXPECT_NEAR(got[i], want[i], 4 * std::numeric_limits<float>::epsilon() * std::fabs(want[i]))
              << d->name << " g=" << g[i];
        }
      }
    }
  }
  // An element's result does not depend on its position (a batch of rows of n_ff not a multiple of
  // 8 against the same rows one by one): the tail goes through the same code as the body.
  for (const kernels::Dispatch* d : kernels::available_dispatches()) {
    const int64_t F = 172;  // stories260K's n_ff
    std::vector<float> batch(g.begin(), g.begin() + 3 * F), up(3 * F, 1.5f);
    std::vector<float> rows = batch;
    d->silu_mul(batch.data(), up.data(), 3 * F);
    for (int64_t r = 0; r < 3; ++r) d->silu_mul(rows.data() + r * F, up.data() + r * F, F);
    for (int64_t i = 0; i < 3 * F; ++i) {
      ASSERT_EQ(std::memcmp(&batch[static_cast<size_t>(i)], &rows[static_cast<size_t>(i)], sizeof(float)), 0)
          << d->name << " element " << i;
    }
  }
  // up multiplies: silu(2) * 3
  float gate = 2.0f;
  const float three = 3.0f;
  kernels::dispatch().silu_mul(&gate, &three, 1);
  EXPECT_NEAR(gate, 2.0f / (1.0f + std::exp(-2.0f)) * 3.0f, 1e-6f);
}

TEST(Dispatch, ChoosesTheWidestTableTheCpuRuns) {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  const bool vnni = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni;
  const bool avx_vnni = avx2 && f.avx_vnni;
  const char* isa = std::getenv("GGUFD_ISA");  // set: the table it names (GGUFD_ISA tests below)
  EXPECT_STREQ(kernels::dispatch().name, isa != nullptr && *isa != '\0' ? isa
                                         : vnni                          ? "avx512vnni"
                                         : avx_vnni                      ? "avxvnni"
                                         : avx2                          ? "avx2"
                                                                         : "scalar");
  EXPECT_EQ(kernels::avx512_dispatch() != nullptr, vnni);
  EXPECT_EQ(kernels::avxvnni_dispatch() != nullptr, avx_vnni);
  const std::vector<const kernels::Dispatch*> tables = kernels::available_dispatches();
  ASSERT_FALSE(tables.empty());
  EXPECT_STREQ(tables.front()->name, vnni ? "avx512vnni" : avx_vnni ? "avxvnni" : avx2 ? "avx2" : "scalar");
  EXPECT_EQ(tables.back(), &kernels::scalar_dispatch());
}

// The message of the std::invalid_argument choose_dispatch throws for `requested`, or "" if none.
std::string choose_error(std::string_view requested, std::span<const kernels::Dispatch* const> available) {
  try {
    kernels::choose_dispatch(requested, available);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Dispatch, GgufdIsaNamesATableTheCpuRuns) {
  const std::vector<const kernels::Dispatch*> tables = kernels::available_dispatches();
  EXPECT_EQ(&kernels::choose_dispatch("", tables), tables.front());  // unset or empty: the best
  for (const kernels::Dispatch* t : tables) {
    EXPECT_EQ(&kernels::choose_dispatch(t->name, tables), t);
  }
  EXPECT_EQ(&kernels::choose_dispatch("scalar", tables), &kernels::scalar_dispatch());
  for (std::string_view name : kernels::kIsaNames) {  // every accepted name is some table's
    const bool runs = std::any_of(tables.begin(), tables.end(), [&](const kernels::Dispatch* t) { return t->name == name; });
    if (runs) {
      EXPECT_EQ(kernels::choose_dispatch(name, tables).name, name);
    }
  }
}

TEST(Dispatch, GgufdIsaRejectsUnknownNamesAndTablesTheCpuLacks) {
  const std::vector<const kernels::Dispatch*> tables = kernels::available_dispatches();
  for (std::string_view bad : {"avx512", "AVX2", " avx2", "avx2 ", "sse", "native", "scalar,avx2"}) {
    const std::string msg = choose_error(bad, tables);
    EXPECT_NE(msg.find("GGUFD_ISA=\"" + std::string(bad) + "\": unknown instruction set"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected one of scalar, avx2, avxvnni, avx512vnni"), std::string::npos) << msg;
  }
  // Hostile values are shown cut to 32 characters, unprintable bytes as '?'.
  const std::string msg = choose_error(std::string(100, 'x') + "\n", tables);
  EXPECT_NE(msg.find("GGUFD_ISA=\"" + std::string(32, 'x') + "...\""), std::string::npos) << msg;
  EXPECT_EQ(choose_error(std::string_view("a\0\x1b", 3), tables).find("GGUFD_ISA=\"a??\""), 0u);
  // A CPU with only the scalar table: every SIMD name is known but not runnable.
  const kernels::Dispatch* scalar_only[] = {&kernels::scalar_dispatch()};
  EXPECT_EQ(&kernels::choose_dispatch("", scalar_only), &kernels::scalar_dispatch());
  for (std::string_view name : {"avx2", "avxvnni", "avx512vnni"}) {
    const std::string lacks = choose_error(name, scalar_only);
    EXPECT_NE(lacks.find("GGUFD_ISA=\"" + std::string(name) + "\": this CPU can't run that instruction set"),
              std::string::npos) << lacks;
    EXPECT_NE(lacks.find("it runs scalar"), std::string::npos) << lacks;
  }
}

TEST(Matmul, SupportsTable) {
  EXPECT_TRUE(supports(TensorType::Q4_K));
  EXPECT_TRUE(supports(TensorType::F32));
  EXPECT_TRUE(supports(TensorType::IQ2_XXS));
  EXPECT_FALSE(supports(TensorType::NVFP4));
  EXPECT_FALSE(supports(TensorType::Q8_K));
}

}  // namespace
}  // namespace engine
