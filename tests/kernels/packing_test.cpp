// Packed weight groups (8 rows for the 256-bit tables, 16 for AVX-512): the layout round-trips and
// the packed tiles of every table match the reference tile on the file layout (also the VNNI and
// AVX-512 code, through SIMDe's emulation, on machines without them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/packed_tiles.h"
#include "engine/kernels/packing.h"
#include "engine/kernels/traits.h"
#include "tests/support/quantized.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using gguf::TensorType;
using ggufd::test::expect_close;
using ggufd::test::kPackable;
using ggufd::test::random_activations;
using ggufd::test::random_matrix;

TEST(Packing, GroupsRoundTripForThePackableTypesOnly) {
  std::mt19937 rng(3);
  for (int R : {8, 16}) {
    for (TensorType type : kPackable) {
      ASSERT_TRUE(kernels::packable(type));
      const int64_t cols = 3 * kernels::kernel_traits(type)->block_size();
      const std::vector<uint8_t> w = random_matrix(type, R, cols, rng);
      const size_t row_bytes = w.size() / static_cast<size_t>(R);
      std::vector<uint8_t> packed(w.size()), back(w.size()), row(row_bytes);
      ASSERT_TRUE(kernels::pack_group(type, R, w.data(), row_bytes, cols, packed.data()));
      EXPECT_NE(packed, w);
      kernels::unpack_group(type, R, packed.data(), cols, back.data(), row_bytes);
      EXPECT_EQ(back, w) << gguf::type_info(type).name << " R=" << R;
      for (int r = 0; r < R; ++r) {
        kernels::unpack_row(type, R, packed.data(), cols, r, row.data());
        ASSERT_TRUE(std::equal(row.begin(), row.end(), w.begin() + static_cast<ptrdiff_t>(r * row_bytes)))
            << gguf::type_info(type).name << " R=" << R << " row " << r;
      }
    }
  }
  for (TensorType type : {TensorType::F32, TensorType::Q4_1, TensorType::Q5_K, TensorType::Q3_K}) {
    EXPECT_FALSE(kernels::packable(type)) << gguf::type_info(type).name;
  }
  std::vector<uint8_t> dst(64);
  EXPECT_FALSE(kernels::pack_group(TensorType::Q4_0, kernels::kMaxPackRows + 1, dst.data(), 18, 32, dst.data()));
}

// Packed tiles of one table (groups of R rows) against the reference tile on the file layout:
// every packable type the table has a tile for; `required` must be among them.
void check_packed_tiles(const std::function<kernels::TileFn(TensorType)>& packed_tile_for, int R,
                        std::initializer_list<TensorType> required, const std::string& name) {
  std::mt19937 rng(7);
  for (TensorType type : required) ASSERT_NE(packed_tile_for(type), nullptr) << name << " " << gguf::type_info(type).name;
  for (TensorType type : kPackable) {
    const kernels::KernelTraits* t = kernels::kernel_traits(type);
    const kernels::TileFn packed_tile = packed_tile_for(type);
    if (packed_tile == nullptr) continue;
    for (int64_t cols : {t->block_size(), 3 * t->block_size(), 9 * t->block_size()}) {
      for (int64_t groups : {1, 3}) {
        const int64_t rows = groups * R;
        const std::vector<uint8_t> w = random_matrix(type, rows, cols, rng);
        const size_t row_bytes = w.size() / static_cast<size_t>(rows);
        std::vector<uint8_t> packed(w.size());
        for (int64_t g = 0; g < groups; ++g) {
          const size_t at = static_cast<size_t>(g * R) * row_bytes;
          kernels::pack_group(type, R, w.data() + at, row_bytes, cols, packed.data() + at);
        }
        // every count up to 13, past the tallest activation tile (12 rows), then two tiles and a tail
        for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 27}) {
          const std::vector<float> x = random_activations(n, cols, rng);
          const int64_t xr = kernels::act_row_bytes(t->act, cols);
          std::vector<uint8_t> xq(static_cast<size_t>(xr * n));
          for (int64_t j = 0; j < n; ++j) kernels::quantize_act_ref(t->act, x.data() + j * cols, xq.data() + j * xr, cols);
          std::vector<float> ref(static_cast<size_t>(n * rows)), fast(ref.size(), -1.0f);
          kernels::ref_tile({w.data(), row_bytes, rows, cols, xq.data(), static_cast<size_t>(xr), n, ref.data(), rows, t});
          packed_tile({packed.data(), static_cast<size_t>(R) * row_bytes, rows, cols, xq.data(), static_cast<size_t>(xr),
                       n, fast.data(), rows, t});
          expect_close(fast, ref, cols,
                       name + " " + std::string(gguf::type_info(type).name) + " cols=" + std::to_string(cols) +
                           " rows=" + std::to_string(rows) + " n=" + std::to_string(n));
        }
      }
    }
  }
}

// Every table packs the same types.
constexpr std::initializer_list<TensorType> kPackedTypes = {TensorType::Q4_0, TensorType::IQ4_NL, TensorType::Q8_0,
                                                            TensorType::Q4_K, TensorType::Q6_K, TensorType::IQ4_XS};

TEST(Packing, PackedTilesMatchTheReferenceOnAwkwardShapes) {
  const kernels::Dispatch& d = kernels::dispatch();
  if (!d.packed_tile_for(TensorType::Q4_0)) GTEST_SKIP() << "the " << d.name << " kernels have no packed layout";
  check_packed_tiles([&d](TensorType type) { return d.packed_tile_for(type); }, d.pack_rows,
                     kPackedTypes, d.name);
}

// Every table this CPU can run, AVX2, AVX-VNNI and AVX-512 VNNI alike (dispatch() picks only one).
TEST(Packing, EveryNativeTableMatchesTheReference) {
  int checked = 0;
  for (const kernels::Dispatch* d :
       {kernels::avx2_dispatch(), kernels::avxvnni_dispatch(), kernels::avx512_dispatch()}) {
    if (d == nullptr) continue;
    check_packed_tiles([d](TensorType type) { return d->packed_tile_for(type); }, d->pack_rows,
                       kPackedTypes, d->name);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD table on this CPU";
  std::string missing;
  if (!kernels::avx512_dispatch()) missing += " avx512vnni";
  if (!kernels::avxvnni_dispatch()) missing += " avxvnni";
  if (!missing.empty()) {
    std::printf("[ packing  ] not run on this CPU:%s; their code is checked through SIMDe (*EmulatedTiles*)\n",
                missing.c_str());
  }
}

#if GGUFD_HAVE_SIMDE
}  // namespace
}  // namespace engine
GGUFD_DECLARE_PACKED_TILES(vnni_emulated)  // tests/kernels/vnni_emulated_tiles.cpp
GGUFD_DECLARE_ZMM_TILES(zmm_emulated)      // tests/kernels/zmm_emulated_tiles.cpp
namespace engine {
namespace {
#endif

// The VNNI code of packed_tiles.inc (the avxvnni table's), run with SIMDe's vpdpbusd on AVX2 hardware.
TEST(Packing, VnniEmulatedTilesMatchTheReference) {
#if GGUFD_HAVE_SIMDE
  if (!kernels::avx2_dispatch()) GTEST_SKIP() << "the emulated VNNI tiles are built for AVX2; this CPU lacks it";
  namespace emulated = kernels::vnni_emulated;
  const std::map<TensorType, kernels::TileFn> tiles = {{TensorType::Q4_0, emulated::packed_q4_0},
                                                       {TensorType::Q8_0, emulated::packed_q8_0},
                                                       {TensorType::IQ4_NL, emulated::packed_iq4_nl},
                                                       {TensorType::Q4_K, emulated::packed_q4_k},
                                                       {TensorType::Q6_K, emulated::packed_q6_k},
                                                       {TensorType::IQ4_XS, emulated::packed_iq4_xs}};
  check_packed_tiles([&tiles](TensorType type) { return tiles.count(type) ? tiles.at(type) : nullptr; }, 8,
                     kPackedTypes, "vnni-emulated");
#elif GGUFD_EMULATED_TESTS_OFF
  GTEST_SKIP() << "configured with -DGGUFD_EMULATED_TESTS=OFF (CI's sanitizer build; its first stage runs this)";
#else
  GGUFD_MISSING_TEST_DATA("SIMDe (libsimde-dev) was not found at configure time; scripts/install-deps --test installs it");
#endif
}

// The AVX-512 code of avx512_tiles.inc (the avx512vnni table's), every 512-bit instruction
// emulated by SIMDe on AVX2 hardware.
TEST(Packing, ZmmEmulatedTilesMatchTheReference) {
#if GGUFD_HAVE_SIMDE
  if (!kernels::avx2_dispatch()) GTEST_SKIP() << "the emulated AVX-512 tiles are built for AVX2; this CPU lacks it";
  namespace emulated = kernels::zmm_emulated;
  const std::map<TensorType, kernels::TileFn> tiles = {
      {TensorType::Q4_0, emulated::packed_q4_0}, {TensorType::Q8_0, emulated::packed_q8_0},
      {TensorType::IQ4_NL, emulated::packed_iq4_nl}, {TensorType::Q4_K, emulated::packed_q4_k},
      {TensorType::Q6_K, emulated::packed_q6_k}, {TensorType::IQ4_XS, emulated::packed_iq4_xs}};
  check_packed_tiles([&tiles](TensorType type) { return tiles.count(type) ? tiles.at(type) : nullptr; }, 16,
                     kPackedTypes, "zmm-emulated");
#elif GGUFD_EMULATED_TESTS_OFF
  GTEST_SKIP() << "configured with -DGGUFD_EMULATED_TESTS=OFF (CI's sanitizer build; its first stage runs this)";
#else
  GGUFD_MISSING_TEST_DATA("SIMDe (libsimde-dev) was not found at configure time; scripts/install-deps --test installs it");
#endif
}

}  // namespace
}  // namespace engine
