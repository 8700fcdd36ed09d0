// The lattice tables of iq_grids.h against llama.cpp's ggml-common.h (b10108): each expanded table
// hashes to the FNV-1a 64 checksum scripts/iq-grids computed from that file's own bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "engine/kernels/iq_grids.h"

namespace engine::kernels {
namespace {

// FNV-1a 64 over the table's bytes in memory (little-endian entries, as ggml's are on x86).
template <class Table>
uint64_t fnv1a(const Table& t) {
  uint8_t bytes[sizeof(t)];
  std::memcpy(bytes, &t, sizeof(t));
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

TEST(IqGrids, MatchGgmlCommonBytes) {
  EXPECT_EQ(fnv1a(kIq2xxsGrid), 0xbb4ee025b5ac6e8eull);
  EXPECT_EQ(fnv1a(kIq2xsGrid), 0xc9b1ee61e79909bdull);
  EXPECT_EQ(fnv1a(kIq2sGrid), 0x123edd38a3b62b90ull);
  EXPECT_EQ(fnv1a(kIq3xxsGrid), 0xdfa5dc83d6a155d5ull);
  EXPECT_EQ(fnv1a(kIq3sGrid), 0xfa37020c25b44829ull);
  EXPECT_EQ(fnv1a(kIq1sGrid), 0x6703ed863501ae2eull);
}

TEST(IqGrids, SignsHaveEvenParityAndKeepTheStoredBits) {
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(kIqSigns[i] & 127, i);
    EXPECT_EQ(__builtin_popcount(kIqSigns[i]) % 2, 0) << i;
  }
  EXPECT_EQ(kIqSigns[1], 129);  // ggml's ksigns_iq2xs[1]
  EXPECT_EQ(kIqSigns[127], 255);
}

TEST(IqGrids, Mxfp4ValuesAreDoubledE2M1) {
  const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 16; ++c) EXPECT_EQ(kMxfp4Values[c], (c & 8 ? -2 : 2) * e2m1[c & 7]) << c;
}

}  // namespace
}  // namespace engine::kernels
