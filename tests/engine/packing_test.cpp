// Packed 8-row weight groups: the layout round-trips, the packed tiles match the reference tile on
// the file layout, matmul mixes packed groups and left-over rows correctly, and a model's
// logits are the same with and without repacking.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/forward.h"
#include "engine/kernels/dispatch.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/packing.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/traits.h"
#include "engine/model.h"
#include "engine/repack.h"
#include "engine/thread_pool.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using gguf::TensorType;

constexpr TensorType kPackable[] = {TensorType::Q4_0, TensorType::IQ4_NL, TensorType::Q8_0, TensorType::Q4_K};

// W (rows, cols) of `type`, quantized from N(0, 1) values.
std::vector<uint8_t> random_matrix(TensorType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> val(0.0f, 1.0f);
  const kernels::KernelTraits* t = kernels::kernel_traits(type);
  const size_t row_bytes = static_cast<size_t>(cols / t->block_size * t->block_bytes);
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(rows));
  std::vector<float> x(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : x) v = val(rng);
    kernels::quantize_row(type, x.data(), w.data() + r * row_bytes, cols);
  }
  return w;
}

std::vector<float> random_activations(int64_t n, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> val(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (float& v : x) v = val(rng);
  return x;
}

// |a - b| within f32 summation-order noise of a dot product over `cols` terms of size ~1.
void expect_close(const std::vector<float>& a, const std::vector<float>& b, int64_t cols, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 2e-5 * static_cast<double>(cols) + 1e-4 * std::fabs(b[i])) << what << " i=" << i;
  }
}

TEST(Packing, GroupsRoundTripForThePackableTypesOnly) {
  std::mt19937 rng(3);
  for (TensorType type : kPackable) {
    ASSERT_TRUE(kernels::packable(type));
    const int64_t cols = 3 * kernels::kernel_traits(type)->block_size;
    const std::vector<uint8_t> w = random_matrix(type, kernels::kPackRows, cols, rng);
    const size_t row_bytes = w.size() / kernels::kPackRows;
    std::vector<uint8_t> packed(w.size()), back(w.size());
    ASSERT_TRUE(kernels::pack_group(type, w.data(), row_bytes, cols, packed.data()));
    EXPECT_NE(packed, w);
    kernels::unpack_group(type, packed.data(), cols, back.data(), row_bytes);
    EXPECT_EQ(back, w) << gguf::type_info(type).name;
  }
  for (TensorType type : {TensorType::F32, TensorType::Q4_1, TensorType::Q5_K, TensorType::Q6_K}) {
    EXPECT_FALSE(kernels::packable(type)) << gguf::type_info(type).name;
  }
}

// Packed tiles of one table against the reference tile on the file layout.
void check_packed_tiles(kernels::TileFn (*packed_tile_for)(TensorType), const std::string& name) {
  std::mt19937 rng(7);
  for (TensorType type : kPackable) {
    const kernels::KernelTraits* t = kernels::kernel_traits(type);
    const kernels::TileFn packed_tile = packed_tile_for(type);
    ASSERT_NE(packed_tile, nullptr) << gguf::type_info(type).name;
    for (int64_t cols : {t->block_size, 3 * t->block_size, 9 * t->block_size}) {
      for (int64_t groups : {1, 3}) {
        const int64_t rows = groups * kernels::kPackRows;
        const std::vector<uint8_t> w = random_matrix(type, rows, cols, rng);
        const size_t row_bytes = w.size() / static_cast<size_t>(rows);
        std::vector<uint8_t> packed(w.size());
        for (int64_t g = 0; g < groups; ++g) {
          const size_t at = static_cast<size_t>(g * kernels::kPackRows) * row_bytes;
          kernels::pack_group(type, w.data() + at, row_bytes, cols, packed.data() + at);
        }
        for (int64_t n = 1; n <= 9; ++n) {
          const std::vector<float> x = random_activations(n, cols, rng);
          const int64_t xr = kernels::act_row_bytes(t->act, cols);
          std::vector<uint8_t> xq(static_cast<size_t>(xr * n));
          for (int64_t j = 0; j < n; ++j) kernels::quantize_act_ref(t->act, x.data() + j * cols, xq.data() + j * xr, cols);
          std::vector<float> ref(static_cast<size_t>(n * rows)), fast(ref.size(), -1.0f);
          kernels::ref_tile(type, {w.data(), row_bytes, rows, cols, xq.data(), static_cast<size_t>(xr), n, ref.data(), rows});
          packed_tile({packed.data(), kernels::kPackRows * row_bytes, rows, cols, xq.data(), static_cast<size_t>(xr), n,
                       fast.data(), rows});
          expect_close(fast, ref, cols,
                       name + " " + std::string(gguf::type_info(type).name) + " cols=" + std::to_string(cols) +
                           " rows=" + std::to_string(rows) + " n=" + std::to_string(n));
        }
      }
    }
  }
}

TEST(Packing, PackedTilesMatchTheReferenceOnAwkwardShapes) {
  const kernels::Dispatch& d = kernels::dispatch();
  if (!d.packed_tile_for(TensorType::Q4_0)) GTEST_SKIP() << "the " << d.name << " kernels have no packed layout";
  check_packed_tiles(d.packed_tile_for, d.name);
}

// Every table this CPU can run, AVX2, AVX-VNNI and AVX-512 VNNI alike (dispatch() picks only one).
TEST(Packing, EveryNativeTableMatchesTheReference) {
  int checked = 0;
  for (const kernels::Dispatch* d :
       {kernels::avx2_dispatch(), kernels::avxvnni_dispatch(), kernels::avx512_dispatch()}) {
    if (d == nullptr) continue;
    check_packed_tiles(d->packed_tile_for, d->name);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD table on this CPU";
  std::string missing;
  if (!kernels::avx512_dispatch()) missing += " avx512vnni";
  if (!kernels::avxvnni_dispatch()) missing += " avxvnni";
  if (!missing.empty()) {
    std::printf("[ packing  ] not run on this CPU:%s; their VNNI code is checked through SIMDe (VnniEmulated)\n",
                missing.c_str());
  }
}

#if GGUFD_HAVE_SIMDE
}  // namespace
namespace kernels::vnni_emulated {
TileFn packed_tile_for(gguf::TensorType type);  // tests/engine/vnni_emulated_tiles.cpp
}  // namespace kernels::vnni_emulated
namespace {
#endif

// The AVX-512 VNNI code of packed_tiles.inc, run with SIMDe's vpdpbusd on AVX2 hardware.
TEST(Packing, VnniEmulatedTilesMatchTheReference) {
#if GGUFD_HAVE_SIMDE
  if (!kernels::avx2_dispatch()) GTEST_SKIP() << "the emulated VNNI tiles are built for AVX2; this CPU lacks it";
  check_packed_tiles(kernels::vnni_emulated::packed_tile_for, "vnni-emulated");
#else
  GTEST_SKIP() << "SIMDe (libsimde-dev) was not found at configure time; scripts/install-deps --test installs it";
#endif
}

TEST(Packing, MatmulAndLookupsOverPackedGroupsAndLeftOverRows) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  for (TensorType type : kPackable) {
    const int64_t rows = 157, cols = 2 * kernels::kernel_traits(type)->block_size;  // 19 packed groups + 5 rows
    const std::vector<uint8_t> w = random_matrix(type, rows, cols, rng);
    const size_t row_bytes = w.size() / static_cast<size_t>(rows);
    Matrix plain{type, rows, cols, row_bytes, w.data()};
    Matrix m = plain;
    const PackedWeights pw = PackedWeights::pack({&m}, false);
    if (kernels::dispatch().packed_tile_for(type)) {
      EXPECT_EQ(m.packed_rows, 152);
      EXPECT_GE(pw.bytes(), 152 * row_bytes);
    } else {
      EXPECT_EQ(m.packed, nullptr);
    }
    for (int64_t r : {0, 7, 8, 100, 151, 152, 156}) {  // lookups read the packed copy exactly
      std::vector<float> a(static_cast<size_t>(cols)), b(a.size());
      dequantize_row(plain, r, a.data());
      dequantize_row(m, r, b.data());
      EXPECT_EQ(a, b) << gguf::type_info(type).name << " row " << r;
    }
    for (int64_t n : {1, 2, 5, 17}) {
      const std::vector<float> x = random_activations(n, cols, rng);
      std::vector<float> a(static_cast<size_t>(n * rows)), b(a.size());
      matmul(plain, x.data(), n, a.data(), pool);
      matmul(m, x.data(), n, b.data(), pool);
      expect_close(b, a, cols, std::string(gguf::type_info(type).name) + " n=" + std::to_string(n));
    }
  }
}

// Every position's logits (n_vocab each) of one sequence run as a single batch.
std::vector<float> all_logits(const Model& m, const std::vector<int32_t>& tokens) {
  ThreadPool pool(1);
  Forward fwd(m, static_cast<int64_t>(tokens.size()));
  KvCache cache(m.hparams(), static_cast<int64_t>(tokens.size()));
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], 0, static_cast<int32_t>(i), true);
  fwd.eval(b, cache, pool);
  return {fwd.logits(0), fwd.logits(0) + b.size() * m.hparams().n_vocab};
}

TEST(Packing, ModelLogitsAreTheSameWithAndWithoutRepacking) {
  for (const char* name : {"synth-llama-Q4_0", "synth-llama-Q8_0", "synth-llama-IQ4_NL", "synth-llama-Q4_K_M"}) {
    const std::string path = std::string("models/synth/") + name + ".gguf";
    GGUFD_REQUIRE_SHARED(path);
    const Model packed = Model::load(ggufd::test::shared_path(path));
    const Model plain = Model::load(ggufd::test::shared_path(path), false);
    EXPECT_EQ(plain.packed_bytes(), 0u);
    if (kernels::dispatch().packed_tile_for(TensorType::Q4_0)) {
      EXPECT_GT(packed.packed_bytes(), 0u) << name;
    }
    const std::vector<int32_t> tokens{1, 15, 27, 300, 42, 7, 99};
    const std::vector<float> a = all_logits(plain, tokens), b = all_logits(packed, tokens);
    // These random-weight models amplify f32 rounding (summation order) through attention by up
    // to ~1e5, so the golden tests' quantized tolerance applies; a layout error is O(1).
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(b[i], a[i], 0.06 + 0.02 * std::fabs(a[i])) << name << " i=" << i;
  }
}

}  // namespace
}  // namespace engine
