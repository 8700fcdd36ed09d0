// Load-time repacking: matmul and row lookups over packed groups plus left-over rows, and a
// model's logits with and without repacking.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/traits.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/model/repack.h"
#include "tests/model/all_logits.h"
#include "tests/support/quantized.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using gguf::TensorType;
namespace qt = ggufd::test;  // quantized test matrices

TEST(Repack, MatmulAndLookupsOverPackedGroupsAndLeftOverRows) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  for (TensorType type : qt::kPackable) {
    const int64_t rows = 157, cols = 2 * kernels::kernel_traits(type)->block_size();  // 19 8-row groups + 5, or 9 16-row + 13
    const std::vector<uint8_t> w = qt::random_matrix(type, rows, cols, rng);
    const size_t row_bytes = w.size() / static_cast<size_t>(rows);
    Matrix plain{type, rows, cols, row_bytes, w.data()};
    Matrix m = plain;
    const PackedWeights pw = PackedWeights::pack({&m}, nullptr);
    if (kernels::dispatch().packed_tile_for(type)) {
      const int R = kernels::dispatch().pack_rows;
      EXPECT_EQ(m.pack_rows, R);
      EXPECT_EQ(m.packed_rows, rows / R * R);
      EXPECT_GE(pw.bytes(), static_cast<size_t>(rows / R * R) * row_bytes);
    } else {
      EXPECT_EQ(m.packed, nullptr);
    }
    for (int64_t r : {0, 7, 8, 15, 16, 100, 143, 144, 151, 152, 156}) {  // lookups read the packed copy exactly
      std::vector<float> a(static_cast<size_t>(cols)), b(a.size());
      dequantize_row(plain, r, a.data());
      dequantize_row(m, r, b.data());
      EXPECT_EQ(a, b) << gguf::type_info(type).name << " row " << r;
    }
    for (int64_t n : {1, 2, 5, 17}) {
      const std::vector<float> x = qt::random_activations(n, cols, rng);
      std::vector<float> a(static_cast<size_t>(n * rows)), b(a.size());
      matmul(plain, x.data(), n, a.data(), pool);
      matmul(m, x.data(), n, b.data(), pool);
      qt::expect_close(b, a, cols, std::string(gguf::type_info(type).name) + " n=" + std::to_string(n));
    }
  }
}

// The memory of destroyed copies goes to the next pack (cut to size, or grown), which fills it
// like fresh memory, until release_kept() gives it back.
TEST(Repack, ReusesTheMemoryOfTheCopiesLastDestroyed) {
  if (!kernels::dispatch().packed_tile_for(TensorType::Q4_0)) GTEST_SKIP() << "no packed Q4_0 tile in this table";
  std::mt19937 rng(5);
  PackedWeights::release_kept();
  const int64_t cols = 256;
  // Packs a rows x cols Q4_0 matrix and checks every row reads back as the plain one does.
  auto pack_checked = [&](int64_t rows, const void** base) {
    const std::vector<uint8_t> w = qt::random_matrix(TensorType::Q4_0, rows, cols, rng);
    Matrix plain{TensorType::Q4_0, rows, cols, w.size() / static_cast<size_t>(rows), w.data()};
    Matrix m = plain;
    PackedWeights pw = PackedWeights::pack({&m}, nullptr);
    *base = m.packed;
    std::vector<float> a(static_cast<size_t>(cols)), b(a.size());
    for (int64_t r = 0; r < m.packed_rows; ++r) {
      dequantize_row(plain, r, a.data());
      dequantize_row(m, r, b.data());
      EXPECT_EQ(a, b) << rows << " rows, row " << r;
    }
    return pw;
  };
  const void* first = nullptr;
  const void* again = nullptr;
  size_t bytes = 0;
  {
    const PackedWeights pw = pack_checked(4096, &first);
    bytes = pw.bytes();
    EXPECT_EQ(PackedWeights::kept_bytes(), 0u);
  }
  EXPECT_EQ(PackedWeights::kept_bytes(), bytes);
  {
    const PackedWeights pw = pack_checked(4096, &again);  // the same size: the same pages
    EXPECT_EQ(again, first);
    EXPECT_EQ(PackedWeights::kept_bytes(), 0u);
  }
  { const PackedWeights pw = pack_checked(3 * 4096, &again); }  // grown
  EXPECT_GT(PackedWeights::kept_bytes(), bytes);
  { const PackedWeights pw = pack_checked(1024, &again); }  // cut
  EXPECT_LT(PackedWeights::kept_bytes(), bytes);
  EXPECT_GT(PackedWeights::kept_bytes(), 0u);
  PackedWeights::release_kept();
  EXPECT_EQ(PackedWeights::kept_bytes(), 0u);
}

// A model's load reads the rows it packs from the file (pread), not through the mapping: the
// copies hold the same bytes as packing the mapped rows.
TEST(Repack, CopiesReadFromTheFileHoldTheMappedRows) {
  const std::string path = "models/synth/synth-llama-Q4_K_M.gguf";
  GGUFD_REQUIRE_SHARED(path);
  if (!kernels::dispatch().packed_tile_for(TensorType::Q4_K)) GTEST_SKIP() << "no packed Q4_K tile in this table";
  const Model from_file = Model::load(ggufd::test::shared_path(path));
  const Model plain = Model::load(ggufd::test::shared_path(path), false);
  const std::vector<const Matrix*> a = plain.matmul_weights(), b = from_file.matmul_weights();
  ASSERT_EQ(a.size(), b.size());
  int packed = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (b[i]->packed_rows == 0) continue;
    ++packed;
    Matrix m = *a[i];  // the mapped bytes, packed here from memory
    const PackedWeights pw = PackedWeights::pack({&m}, nullptr);
    ASSERT_EQ(m.packed_rows, b[i]->packed_rows);
    const auto* want = static_cast<const uint8_t*>(m.packed);
    EXPECT_TRUE(std::equal(want, want + static_cast<size_t>(m.packed_rows) * m.row_bytes,
                           static_cast<const uint8_t*>(b[i]->packed)))
        << "matrix " << i;
  }
  EXPECT_GT(packed, 0);
}

using test::all_logits;

TEST(Repack, ModelLogitsAreTheSameWithAndWithoutRepacking) {
  for (const char* name : {"synth-llama-Q4_0", "synth-llama-Q8_0", "synth-llama-IQ4_NL", "synth-llama-Q4_K_M",
                           "synth-llama-Q6_K", "synth-llama-IQ4_XS"}) {
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
